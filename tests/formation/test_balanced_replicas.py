"""Formation replicas share the calls of one client, and a replica added later gets its share.

Two real formation processes listen on the same port at 127.0.0.1 and 127.0.0.2, as two pods behind
one headless Service (k8s/base/formation.yaml) would at their own addresses. The client is
FormationClient, what ingest and cognition use. Formation ends connections after
FORMATION_MAX_CONNECTION_AGE_SECONDS (1 s here, 30 s by default), which makes the client resolve the
name again; a DNS server of the test's own (support.tiny_dns) plays the cluster DNS whose answer
grows when a new replica becomes ready. Embeddings come from the fake OpenAI-compatible server, so a
replica starts in seconds.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families
from support.fake_openai import FakeOpenAI
from support.formation_data import INTERNAL_TOKEN, SCOPE
from support.tiny_dns import TinyDNS

from athena.auth import bearer_metadata
from athena.formation_client import FormationClient
from athena.internal.v1 import formation_pb2_grpc
from athena.local import MongoWireServer, free_port, free_ports
from athena_client.memory.v1 import memory_pb2

HOSTS = ("127.0.0.1", "127.0.0.2")
MAX_CALLS = 400


@dataclass
class Replica:
    """One formation process bound to host:port (a pod at its own address)."""

    host: str
    port: int
    metrics_port: int
    data_dir: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, env: dict[str, str]) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir / "formation.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "athena_formation"],
                env={
                    **env,
                    "GRPC_BIND_HOST": self.host,
                    "FORMATION_GRPC_PORT": str(self.port),
                    "FORMATION_METRICS_PORT": str(self.metrics_port),
                    "VECTOR_INDEX_URI": str(self.data_dir / "milvus.db"),
                },
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def wait_serving(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        with grpc.insecure_channel(f"{self.host}:{self.port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                assert self.proc is not None and self.proc.poll() is None, self.log_tail()
                try:
                    reply = stub.Check(health_pb2.HealthCheckRequest(service="readiness"), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                time.sleep(0.2)
        raise TimeoutError(f"formation on {self.host}:{self.port} not serving:\n{self.log_tail()}")

    def handled(self, method: str) -> float:
        """Calls of FormationService/`method` this replica has answered (its /metrics)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as reply:
            text = reply.read().decode()
        # Started at 0.0: a float even before the replica has answered a call (no samples yet).
        return sum(
            (
                sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
                if sample.name == "memos_grpc_server_handled_total" and sample.labels.get("grpc_method") == method
            ),
            0.0,
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log_tail(self) -> str:
        path = self.data_dir / "formation.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@pytest.fixture(scope="module")
def replicas(mongo_server: MongoWireServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Replica, ...]]:
    """Two formation replicas on one port, 127.0.0.1 and 127.0.0.2, sharing MongoDB; connections live 1 s."""
    with FakeOpenAI() as embeddings:
        env = {
            **os.environ,
            "MONGODB_URI": mongo_server.url,
            "MONGODB_DATABASE": "balanced_replicas",
            "INTERNAL_AUTH_TOKEN": INTERNAL_TOKEN,
            "EMBEDDING_PROVIDER": "openai",
            "EMBEDDING_BASE_URL": embeddings.base_url,
            "EMBEDDING_API_KEY": "test",
            "EMBEDDING_MODEL": "fake-embedding",
            "LLM_BASE_URL": "",
            "GRPC_REFLECTION": "false",
            "GRPC_SHUTDOWN_GRACE_SECONDS": "1",
            "FORMATION_MAX_CONNECTION_AGE_SECONDS": "1",
            "FORMATION_MAX_CONNECTION_AGE_GRACE_SECONDS": "5",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        root = tmp_path_factory.mktemp("replicas")
        port = free_port()
        started = [
            Replica(host, port, metrics_port, root / host) for host, metrics_port in zip(HOSTS, free_ports(len(HOSTS)))
        ]
        try:
            for replica in started:
                replica.start(env)
            for replica in started:
                replica.wait_serving()
            yield tuple(started)
        finally:
            for replica in started:
                replica.stop()


async def list_chains(client: FormationClient) -> None:
    await client.call(client.stub.ListChains, memory_pb2.ListChainsRequest(scope=SCOPE, page_size=1))


def counts(replicas: tuple[Replica, ...]) -> list[float]:
    return [r.handled("ListChains") for r in replicas]


async def test_round_robin_sends_one_clients_calls_to_both_replicas(replicas: tuple[Replica, ...]) -> None:
    port = replicas[0].port
    # attempts=1: a call refused while a connection is replaced would fail the test instead of being retried.
    client = FormationClient(
        f"ipv4:{HOSTS[0]}:{port},{HOSTS[1]}:{port}", metadata=bearer_metadata(INTERNAL_TOKEN), attempts=1
    )
    before = counts(replicas)
    try:
        for calls in range(1, MAX_CALLS + 1):
            await list_chains(client)
            if calls % 10 == 0 and all(now > then for now, then in zip(counts(replicas), before)):
                break
    finally:
        await client.close()
    gained = [after - b for after, b in zip(counts(replicas), before)]
    print(f"\n{calls} calls: {gained[0]:.0f} to {HOSTS[0]}, {gained[1]:.0f} to {HOSTS[1]}")
    assert sum(gained) == calls
    assert all(g > 0 for g in gained), gained


async def test_without_round_robin_one_client_stays_on_one_replica(replicas: tuple[Replica, ...]) -> None:
    """The control: gRPC's default pick_first with the same two addresses puts every call on the first."""
    port = replicas[0].port
    before = counts(replicas)
    async with grpc.aio.insecure_channel(f"ipv4:{HOSTS[0]}:{port},{HOSTS[1]}:{port}") as channel:
        stub = formation_pb2_grpc.FormationServiceStub(channel)
        for _ in range(20):
            await stub.ListChains(
                memory_pb2.ListChainsRequest(scope=SCOPE, page_size=1),
                metadata=bearer_metadata(INTERNAL_TOKEN),
                timeout=10,
            )
    gained = [after - b for after, b in zip(counts(replicas), before)]
    assert gained == [20, 0]


async def test_a_replica_added_to_the_dns_name_takes_calls_once_connections_reach_their_age(
    replicas: tuple[Replica, ...],
) -> None:
    first, added = replicas
    with TinyDNS([first.host]) as dns:
        client = FormationClient(
            dns.target("formation.test", first.port),
            metadata=bearer_metadata(INTERNAL_TOKEN),
            attempts=1,
            min_resolution_interval=0.2,
        )
        try:
            before = counts(replicas)
            for _ in range(20):
                await list_chains(client)
            gained = [after - b for after, b in zip(counts(replicas), before)]
            assert gained == [20, 0], "only the first replica is in DNS yet"

            # The second replica becomes ready: the cluster DNS now answers both addresses.
            dns.addresses = [first.host, added.host]
            before = counts(replicas)
            for calls in range(1, MAX_CALLS + 1):
                await list_chains(client)
                if calls % 10 == 0 and added.handled("ListChains") > before[1]:
                    break
                await asyncio.sleep(0.02)  # let the calls span a few connection lifetimes (1 s each)
            gained = [after - b for after, b in zip(counts(replicas), before)]
        finally:
            await client.close()
    print(f"\nafter the DNS change, {calls} calls: {gained[0]:.0f} to the first, {gained[1]:.0f} to the added replica")
    print(f"DNS queries answered: {len(dns.queries)}")
    assert gained[1] > 0, "the added replica never got a call: the client did not resolve the name again"
    assert sum(gained) == calls
