"""`athena dev --ports-from N`, run as a person runs it: a real process starting the real stack.

One start (the embedding model loads in two services, so it takes a while) proves three things: the
stack takes the consecutive ports from N, the addresses it prints come whole on narrow terminals, and
a normal start of a fresh stack leaves service logs that are all JSON, with no error and no traceback
(formation's first start creates the Milvus Lite collection, where an error used to be logged).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from athena_cli.stack import SERVICES, StackPorts

pytestmark = pytest.mark.slow

PORT_COUNT = 8


def _free_run_of_ports(count: int) -> int:
    """A base port whose `count` consecutive ports are all free on 127.0.0.1 now."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 60000 - count)
        sockets: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no {count} consecutive free ports found")


def _serving(port: int) -> bool:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="readiness"), timeout=10
        )
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def _metrics_served(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        return b"python_info" in reply.read()


def test_athena_dev_ports_from_serves_on_consecutive_ports_prints_whole_addresses_and_logs_clean_json(
    tmp_path: Path,
) -> None:
    base = _free_run_of_ports(PORT_COUNT)
    # A long data folder and a 40-column terminal: a rich table would fold these paths over lines.
    data_dir = tmp_path / "a-rather-long-folder-name-for-the-local-stack-data"
    athena = Path(sys.executable).with_name("athena")
    env = {**os.environ, "COLUMNS": "40", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(
        [str(athena), "dev", "--data-dir", str(data_dir), "--ports-from", str(base)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    lines: list[str] = []
    running = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if "Athena is running" in line:
                running.set()
        running.set()  # the process ended: stop waiting

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        running.wait(timeout=240)
        assert proc.poll() is None and any("Athena is running" in line for line in lines), "\n".join(lines)

        ports = StackPorts.from_base(base)
        assert ports.items() == [
            ("redis", base),
            ("mongo", base + 1),
            ("ingest", base + 2),
            ("formation", base + 3),
            ("cognition", base + 4),
            ("ingest_metrics", base + 5),
            ("formation_metrics", base + 6),
            ("cognition_metrics", base + 7),
        ]
        for name in SERVICES:
            assert _serving(getattr(ports, name)), name
            assert _metrics_served(getattr(ports, f"{name}_metrics")), name

        addresses = [
            f"127.0.0.1:{ports.ingest}",
            f"127.0.0.1:{ports.formation}",
            f"127.0.0.1:{ports.cognition}",
            f"http://127.0.0.1:{ports.ingest_metrics}/metrics",
            f"http://127.0.0.1:{ports.formation_metrics}/metrics",
            f"http://127.0.0.1:{ports.cognition_metrics}/metrics",
            f"redis://127.0.0.1:{ports.redis}/0",
            f"mongodb://127.0.0.1:{ports.mongo}/",
            str(data_dir.resolve() / "milvus" / "milvus.db"),
        ]
        for address in addresses:
            # Whole on one line: not wrapped (the line holds it all) and not cropped.
            assert any(address in line for line in lines), (address, lines)
        key_lines = [line for line in lines if "API key (this run only):" in line]
        assert len(key_lines) == 1 and len(key_lines[0].rsplit(" ", 1)[-1]) > 20, lines
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(timeout=10)
    assert proc.returncode == 0, "\n".join(lines)
    assert any(line.strip() == "stopped." for line in lines), lines

    for name in SERVICES:
        text = (data_dir / f"{name}.log").read_text()
        assert "Traceback" not in text, f"{name}:\n{text}"
        records = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                pytest.fail(f"{name} logged a line that is not JSON: {line!r}")
        assert records, f"{name} logged nothing"
        assert all(isinstance(r, dict) and r.get("service") == name for r in records), records
        bad = [r for r in records if r["level"] in ("error", "critical")]
        assert not bad, f"{name} logged errors at a normal start: {bad}"
        assert any(r["msg"] == f"{name} is SERVING" for r in records), records
