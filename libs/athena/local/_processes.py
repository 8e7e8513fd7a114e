"""Start, stop and kill the local dependency servers as child processes."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

__all__ = ["LocalProcess", "MongoWireServer", "RedisServer", "free_port", "free_ports", "wait_for_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports: every socket stays bound until all are chosen, so none repeats
    (ports picked one at a time may, and two servers told the same port collide)."""
    with ExitStack() as held:
        sockets = [held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]


def wait_for_port(port: int, *, host: str = "127.0.0.1", timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


class LocalProcess:
    """One child server process bound to a fixed port, restartable on the same port and data."""

    name = "process"

    def __init__(self, *, port: int, data_dir: Path) -> None:
        self.port = port
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    @property
    def log_path(self) -> Path:
        return self.data_dir / f"{self.name}.log"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self, *, timeout: float = 20.0) -> None:
        if self.running:
            return
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in a terminal reaches our supervisor, which stops us in order
            )
        try:
            wait_for_port(self.port, timeout=timeout)
        except TimeoutError:
            self.stop()
            tail = self.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{self.name} did not start on port {self.port}; log:\n{tail}") from None

    def stop(self, *, timeout: float = 10.0) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


class RedisServer(LocalProcess):
    """Debian's redis-server with an append-only file, so a restart keeps queued work."""

    name = "redis"

    def __init__(self, *, port: int, data_dir: Path, persistent: bool = True) -> None:
        super().__init__(port=port, data_dir=data_dir)
        self.persistent = persistent

    @staticmethod
    def binary() -> str:
        found = shutil.which("redis-server") or (
            "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
        )
        if not found:
            raise RuntimeError(
                "redis-server is not installed: run `apt-get install -y redis-server` "
                "(as root; `athena setup` does it for you) or set REDIS_URL to a running Redis"
            )
        return found

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        cmd = [
            self.binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.data_dir),
            "--save",
            "",
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
        ]
        if self.persistent:
            cmd += ["--appendonly", "yes", "--appendfsync", "everysec"]
        else:
            cmd += ["--appendonly", "no"]
        return cmd


class MongoWireServer(LocalProcess):
    """nx-27017: a MongoDB wire-protocol server on a SQLite file."""

    name = "mongo"

    @property
    def url(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/"

    def command(self) -> list[str]:
        exe = shutil.which("nx-27017") or str(Path(sys.executable).parent / "nx-27017")
        if not os.path.exists(exe):
            raise RuntimeError("nx-27017 is not installed: pip install nx-27017")
        return [
            exe,
            "--data-dir",
            str(self.data_dir / "db"),
            "--host",
            "127.0.0.1",
            "-p",
            str(self.port),
            "--log-file",
            str(self.data_dir / "nx-27017.server.log"),
            "--pid-file",
            str(self.data_dir / "nx-27017.pid"),
        ]
