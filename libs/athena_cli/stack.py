"""The local stack: Redis, the MongoDB-wire server and the three services as child processes.

`athena dev` runs it in the foreground, `athena demo` and `athena bench` start it for their run, and
end-to-end tests start it on free ports. Every address reaches the services through the same env
vars production uses, so nothing here is special to local runs except who starts the servers.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from athena.auth import ALL_SCOPES, ApiKeyEntry, bearer_metadata, hash_api_key, mint_hs256, new_api_key
from athena.local import MongoWireServer, RedisServer, free_ports
from athena_cli.sample_conversation import SAMPLE_SCOPE
from athena_client import AsyncAthenaClient, ClientOptions

if TYPE_CHECKING:
    from prometheus_client.samples import Sample

__all__ = [
    "PORT_TAKEN",
    "LocalStack",
    "StackCredentials",
    "StackPorts",
    "ensure_redis_server_installed",
    "sample_total",
]

SERVICES = ("ingest", "cognition", "formation")
PORT_TAKEN = "Address already in use"
"""What a service's log says when its port was taken after it was chosen free (by another process):
`wait_serving` stops waiting at once."""


@dataclass
class StackPorts:
    redis: int = 6380
    mongo: int = 27018
    ingest: int = 50051
    formation: int = 50052
    cognition: int = 50053
    ingest_metrics: int = 9101
    formation_metrics: int = 9102
    cognition_metrics: int = 9103

    @classmethod
    def free(cls) -> StackPorts:
        return cls(*free_ports(8))

    @classmethod
    def from_base(cls, base: int) -> StackPorts:
        """Consecutive ports from `base`, in field order: redis base, mongo base+1, ingest base+2,
        formation base+3, cognition base+4, then the metrics of ingest, formation, cognition (base+5..+7)."""
        count = len(fields(cls))
        if not 1 <= base <= 65536 - count:
            raise ValueError(f"ports {base}..{base + count - 1} are not all valid TCP ports (1..65535)")
        return cls(*range(base, base + count))

    def items(self) -> list[tuple[str, int]]:
        """(component, port) in field order."""
        return [(f.name, int(getattr(self, f.name))) for f in fields(self)]


@dataclass(frozen=True)
class StackCredentials:
    """Secrets generated for one run of the stack: nothing of it is written to disk or reused.

    The dev key and the tokens carry every scope (memory:admin included): the local stack's user is
    its operator, who may erase and export as well as read and write.
    """

    dev_tenant: str = SAMPLE_SCOPE[0]
    """The tenant of the dev API key (the demo's sample conversation is stored under it)."""
    dev_api_key: str = field(default_factory=new_api_key)
    jwt_secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    internal_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    audience: str = "athena"
    token_ttl_seconds: float = 24 * 3600.0

    def settings_overrides(self) -> dict[str, str]:
        """The auth settings of services using these credentials (for load_settings in-process)."""
        return {
            "auth_api_keys": ApiKeyEntry(
                self.dev_tenant, hash_api_key(self.dev_api_key), scopes=frozenset(ALL_SCOPES)
            ).render(),
            "auth_jwt_hs256_secret": self.jwt_secret,
            "auth_jwt_audience": self.audience,
            "internal_auth_token": self.internal_token,
        }

    def env(self) -> dict[str, str]:
        return {name.upper(): value for name, value in self.settings_overrides().items()}

    def token_for(self, tenant_id: str, *, scopes: Iterable[str] = ALL_SCOPES) -> str:
        """A JWT for any tenant, signed with the stack's HS256 secret, carrying `scopes` (all by default)."""
        return mint_hs256(
            self.jwt_secret,
            tenant_id,
            audience=self.audience,
            ttl_seconds=self.token_ttl_seconds,
            subject="local-stack",
            scopes=scopes,
        )


def sample_total(samples: Iterable[Sample], name: str, **labels: str) -> float:
    """Sum of the samples called `name` whose labels include `labels` (0 when there are none)."""
    return sum(s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def ensure_redis_server_installed() -> None:
    """Install Debian's redis-server when it is missing and we are root; otherwise say what to do."""
    if shutil.which("redis-server") or Path("/usr/bin/redis-server").exists():
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "update", "-qq"], check=False)
        subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], check=True)
        return
    raise SystemExit("redis-server is missing: install it with `sudo apt-get install redis-server` (or set REDIS_URL)")


@dataclass
class LocalStack:
    data_dir: Path
    ports: StackPorts = field(default_factory=StackPorts)
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the services (settings overrides)."""
    services: tuple[str, ...] = SERVICES
    redis: RedisServer | None = None
    mongo: MongoWireServer | None = None
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    credentials: StackCredentials = field(default_factory=StackCredentials)
    """The dev API key, the JWT secret and the internal token the services are started with."""
    external_mongodb_uri: str | None = None
    """A running MongoDB for the services instead of starting nx-27017 (`athena bench --mongodb-uri`);
    which database they use is MONGODB_DATABASE in `env`, as in production."""

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)

    @property
    def ingest_target(self) -> str:
        return f"127.0.0.1:{self.ports.ingest}"

    @property
    def formation_target(self) -> str:
        return f"127.0.0.1:{self.ports.formation}"

    @property
    def redis_url(self) -> str:
        """The stack's own redis-server (database 0)."""
        return f"redis://127.0.0.1:{self.ports.redis}/0"

    @property
    def mongodb_uri(self) -> str:
        """Where the services' MongoDB is: the external one, else the local nx-27017."""
        return self.external_mongodb_uri or f"mongodb://127.0.0.1:{self.ports.mongo}/"

    @property
    def mongodb_database(self) -> str:
        """The database the services use (MONGODB_DATABASE as they are given it, else its default)."""
        from athena.config import Settings

        return self.service_env().get("MONGODB_DATABASE") or str(Settings.model_fields["mongodb_database"].default)

    def client(self, *, tenant_id: str | None = None, options: ClientOptions | None = None) -> AsyncAthenaClient:
        """A client of this stack's public API, carrying a credential for `tenant_id` (the dev tenant when None)."""
        roots = self.tls_root_certificates()
        if tenant_id is None:
            return AsyncAthenaClient(
                self.ingest_target, options=options, api_key=self.credentials.dev_api_key, root_certificates=roots
            )
        return AsyncAthenaClient(
            self.ingest_target,
            options=options,
            bearer_token=self.credentials.token_for(tenant_id),
            root_certificates=roots,
        )

    def tls_root_certificates(self) -> bytes | None:
        """What to trust when the stack is given TLS settings in `env`: the internal CA, else the
        (self-signed) service certificate itself; None when the stack runs plaintext (the default)."""
        cert, ca = self.env.get("GRPC_TLS_CERT_FILE"), self.env.get("INTERNAL_TLS_CA_FILE")
        if not cert:
            return None
        return Path(ca or cert).read_bytes()

    def _probe_credentials(self, name: str) -> grpc.ChannelCredentials | None:
        roots = self.tls_root_certificates()
        if roots is None:
            return None
        if name == "formation" and self.env.get("INTERNAL_TLS_CA_FILE"):
            # mTLS: formation wants a client certificate; present the one the services use.
            key, chain = (
                Path(self.env["GRPC_TLS_KEY_FILE"]).read_bytes(),
                Path(self.env["GRPC_TLS_CERT_FILE"]).read_bytes(),
            )
            return grpc.ssl_channel_credentials(roots, key, chain)
        return grpc.ssl_channel_credentials(roots)

    def internal_metadata(self) -> tuple[tuple[str, str], ...]:
        """Metadata authorising a raw FormationService stub (the internal token)."""
        return bearer_metadata(self.credentials.internal_token)

    def service_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "REDIS_URL": self.redis_url,
                "MONGODB_URI": self.mongodb_uri,
                "VECTOR_INDEX_URI": str(self.data_dir / "milvus" / "milvus.db"),
                "INGEST_GRPC_PORT": str(self.ports.ingest),
                "FORMATION_GRPC_PORT": str(self.ports.formation),
                "COGNITION_GRPC_PORT": str(self.ports.cognition),
                "INGEST_METRICS_PORT": str(self.ports.ingest_metrics),
                "FORMATION_METRICS_PORT": str(self.ports.formation_metrics),
                "COGNITION_METRICS_PORT": str(self.ports.cognition_metrics),
                "FORMATION_ADDRESS": f"127.0.0.1:{self.ports.formation}",
                "GRPC_BIND_HOST": "127.0.0.1",
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false",
                **self.credentials.env(),
            }
        )
        env.update(self.env)
        return env

    def start_dependencies(self) -> None:
        ensure_redis_server_installed()
        (self.data_dir / "milvus").mkdir(exist_ok=True)
        self.redis = RedisServer(port=self.ports.redis, data_dir=self.data_dir / "redis")
        self.redis.start()
        if self.external_mongodb_uri is None:
            self.mongo = MongoWireServer(port=self.ports.mongo, data_dir=self.data_dir / "mongo")
            self.mongo.start()

    def _running(self) -> list[str]:
        return [name for name, proc in self.procs.items() if proc.poll() is None]

    def start_service(self, name: str) -> None:
        if name in self._running():
            # Starting it again would orphan the running process (it holds its ports until killed by hand).
            raise RuntimeError(f"{name} is already running (pid {self.procs[name].pid}); stop_service({name!r}) first")
        with open(self.data_dir / f"{name}.log", "ab") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", f"athena_{name}"],
                env=self.service_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def port_of(self, name: str) -> int:
        return int(getattr(self.ports, name))

    def wait_serving(self, name: str, *, timeout: float = 120.0) -> None:
        """Block until the service's health check answers SERVING."""
        deadline = time.monotonic() + timeout
        target = f"127.0.0.1:{self.port_of(name)}"
        last = "no answer"
        credentials = self._probe_credentials(name)
        channel = grpc.secure_channel(target, credentials) if credentials is not None else grpc.insecure_channel(target)
        with channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                proc = self.procs.get(name)
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {proc.returncode}; see {self.data_dir / (name + '.log')}:\n{self.log_tail(name)}"
                    )
                try:
                    status = stub.Check(health_pb2.HealthCheckRequest(service="readiness"), timeout=1).status
                    if status == health_pb2.HealthCheckResponse.SERVING:
                        return
                    last = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
                except grpc.RpcError as exc:
                    last = exc.code().name
                if PORT_TAKEN in (log := self.log_tail(name)):  # another process holds it: waiting cannot help
                    raise RuntimeError(f"{name} could not bind {target} ({PORT_TAKEN}); log:\n{log}")
                time.sleep(0.2)
        raise TimeoutError(f"{name} not SERVING after {timeout}s ({last}); log:\n{self.log_tail(name)}")

    def metric_samples(self, service: str) -> list[Sample]:
        """Every sample on a running service's /metrics, read once."""
        from prometheus_client.parser import text_string_to_metric_families

        port = getattr(self.ports, f"{service}_metrics")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            text = reply.read().decode()
        return [s for family in text_string_to_metric_families(text) for s in family.samples]

    def metric_total(self, service: str, sample: str, **labels: str) -> float:
        """Sum of one Prometheus sample (e.g. `memos_grpc_server_handled_total`) on a running service's
        /metrics, over the series whose labels include `labels` (0 when it has none)."""
        return sample_total(self.metric_samples(service), sample, **labels)

    def log_tail(self, name: str, chars: int = 3000) -> str:
        path = self.data_dir / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def start(self, *, timeout: float = 180.0) -> None:
        """Start the stores and the services (entering the stack as a context manager already did)."""
        if running := self._running():
            raise RuntimeError(f"the stack is already started ({', '.join(running)} running)")
        self.start_dependencies()
        # Formation first: cognition hands segments to it.
        for name in sorted(self.services, key=lambda n: {"formation": 0, "ingest": 1, "cognition": 2}[n]):
            self.start_service(name)
        for name in self.services:
            self.wait_serving(name, timeout=timeout)

    def stop_service(self, name: str, *, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def kill_service(self, name: str) -> None:
        self.stop_service(name, sig=signal.SIGKILL)

    def stop(self) -> None:
        for name in ("ingest", "cognition", "formation"):
            self.stop_service(name)
        for server in (self.mongo, self.redis):
            if server is not None:
                server.stop()

    def __enter__(self) -> LocalStack:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
