"""The cognition worker as a real process: StoreEvent -> queue -> decision -> cut -> FormChain.

Formation is played by a small gRPC server implementing the FormationService contract, so the test
sees exactly which segments cognition hands off, and can hold a hand-off open while it kills the worker.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import AsyncIterator, Iterator

import grpc
import pytest

from athena import keys
from athena.client import AthenaClient, ClientOptions, EventInput
from athena.config import load_settings
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.local import MongoWireServer, RedisServer, free_port
from athena_cli.stack import StackCredentials
from athena_ingest.server import build_ingest

pytestmark = pytest.mark.slow
SCOPE = AthenaClient.scope("acme", "alice", "helper")
SCOPE_ID = "acme:alice:helper"
CREDENTIALS = StackCredentials()

KYOTO = [
    ("user", "I'm planning a trip to Kyoto in April. Which neighbourhoods are best for seeing temples?"),
    ("agent", "Higashiyama is ideal: Kiyomizu-dera, Yasaka Shrine and the Philosopher's Path are walkable."),
    ("user", "How many days would you recommend for Kyoto and a day trip to Nara?"),
    ("agent", "Plan four days in Kyoto plus one for Nara."),
]
PYTHON = ("user", "Different question: my Python script crashes with KeyError: 'user_id' when parsing the webhook payload.")


class RecordingFormation(formation_pb2_grpc.FormationServiceServicer):
    """FormationService that records every FormChain and answers only when `release` is set."""

    def __init__(self) -> None:
        self.calls: list[formation_pb2.Segment] = []
        self.release = asyncio.Event()
        self.release.set()
        self.called = asyncio.Event()

    async def FormChain(self, request: formation_pb2.FormChainRequest, context: grpc.aio.ServicerContext) -> formation_pb2.FormChainResponse:
        self.calls.append(request.segment)
        self.called.set()
        await self.release.wait()
        return formation_pb2.FormChainResponse(outcome=formation_pb2.FORM_OUTCOME_CREATED, chain_id="ch_" + request.segment.id[4:20])


@pytest.fixture
async def formation() -> AsyncIterator[tuple[RecordingFormation, int]]:
    server = grpc.aio.server()
    servicer = RecordingFormation()
    formation_pb2_grpc.add_FormationServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield servicer, port
    servicer.release.set()
    await server.stop(0)


@pytest.fixture
async def client(redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, redis) -> AsyncIterator[AthenaClient]:
    settings = load_settings(
        redis_url=redis_server.url, mongodb_uri=mongo_server.url, mongodb_database=mongo_db_name,
        ingest_grpc_port=free_port(), grpc_bind_host="127.0.0.1", **CREDENTIALS.settings_overrides(),
    )
    host, _ = await build_ingest(settings)
    await host.start()
    token = CREDENTIALS.token_for(SCOPE.tenant_id)
    async with AthenaClient(f"127.0.0.1:{host.bound_port}", options=ClientOptions(max_attempts=1), bearer_token=token) as c:
        yield c
    await host.shutdown()


class CognitionProcess:
    def __init__(self, redis_url: str, formation_port: int, log: Path, **extra_env: str) -> None:
        self.port = free_port()
        env = dict(os.environ)
        env.update(
            REDIS_URL=redis_url,
            FORMATION_ADDRESS=f"127.0.0.1:{formation_port}",
            COGNITION_GRPC_PORT=str(self.port),
            COGNITION_METRICS_PORT="0",
            GRPC_BIND_HOST="127.0.0.1",
            QUEUE_LEASE_SECONDS="2",
            QUEUE_BACKOFF_BASE_SECONDS="0.2",
            QUEUE_BACKOFF_MAX_SECONDS="1",
            LLM_BASE_URL="",
            HF_HUB_OFFLINE="1",
            INTERNAL_AUTH_TOKEN=CREDENTIALS.internal_token,
        )
        env.update(extra_env)
        self.proc = subprocess.Popen([sys.executable, "-m", "athena_cognition"], env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT)

    def wait_serving(self, timeout: float = 180.0) -> None:
        """Block until the process answers SERVING (the embedding model is loaded by then)."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        deadline = time.monotonic() + timeout
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                assert self.proc.poll() is None, "cognition exited during start-up"
                try:
                    if stub.Check(health_pb2.HealthCheckRequest(service="readiness"), timeout=1).status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                time.sleep(0.2)
        raise TimeoutError("cognition did not become SERVING")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def cognition(redis_server: RedisServer, formation, tmp_path: Path) -> Iterator[callable]:
    started: list[CognitionProcess] = []

    def start(**extra_env: str) -> CognitionProcess:
        p = CognitionProcess(redis_server.url, formation[1], tmp_path / "cognition.log", **extra_env)
        started.append(p)
        p.wait_serving()
        return p

    yield start
    for p in started:
        p.stop()


async def _result(redis, task_id: str, *, timeout: float = 180.0) -> dict:
    import json

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        raw = await redis.get(keys.task_result_key(SCOPE_ID, task_id))
        if raw and json.loads(raw).get("status") == "done":
            return json.loads(raw)
        await asyncio.sleep(0.2)
    raise TimeoutError(f"no result for {task_id}")


async def test_a_topic_change_hands_the_finished_segment_to_formation(client: AthenaClient, formation, cognition, redis) -> None:
    servicer, _ = formation
    cognition()
    for role, text in KYOTO:
        await client.store_event(SCOPE, EventInput(role, text))
    response = await client.store_event(SCOPE, EventInput(*PYTHON))

    result = await _result(redis, response.task_id)

    assert result["decision"] == "break" and result["path"] in ("low", "llm_fallback")
    assert [len(s.events) for s in servicer.calls] == [4]
    assert [e.content for e in servicer.calls[0].events] == [t for _, t in KYOTO]
    assert result["segment_id"] == servicer.calls[0].id and result["formation_outcome"] == "FORM_OUTCOME_CREATED"
    assert [e.content for e in await client.get_context(SCOPE)] == [PYTHON[1]]


async def test_a_worker_killed_during_the_hand_off_leads_to_exactly_one_segment(client: AthenaClient, formation, cognition, redis) -> None:
    servicer, _ = formation
    servicer.release.clear()  # formation holds every FormChain open
    first = cognition()
    for role, text in KYOTO:
        await client.store_event(SCOPE, EventInput(role, text))
    response = await client.store_event(SCOPE, EventInput(*PYTHON))
    await asyncio.wait_for(servicer.called.wait(), timeout=90)

    first.kill()  # SIGKILL in the middle of the hand-off: the segment is cut and parked, not acknowledged
    print(f"injected: SIGKILL of cognition pid {first.proc.pid} during FormChain of {servicer.calls[0].id}")
    servicer.release.set()
    cognition()
    result = await _result(redis, response.task_id)

    segment_ids = {s.id for s in servicer.calls}
    print(f"counted: {len(servicer.calls)} FormChain calls, {len(segment_ids)} distinct segment(s)")
    assert len(servicer.calls) >= 2 and len(segment_ids) == 1
    assert result["segment_id"] in segment_ids
    assert [e.content for e in await client.get_context(SCOPE)] == [PYTHON[1]]  # cut exactly once
    assert await redis.keys(keys.STM_HANDOFF_PREFIX + "*") == []


async def test_sigterm_releases_the_task_in_flight_after_the_grace_and_exits_cleanly(client: AthenaClient, formation, cognition, redis) -> None:
    servicer, _ = formation
    servicer.release.clear()
    worker = cognition(GRPC_SHUTDOWN_GRACE_SECONDS="2")
    for role, text in KYOTO:
        await client.store_event(SCOPE, EventInput(role, text))
    response = await client.store_event(SCOPE, EventInput(*PYTHON))
    await asyncio.wait_for(servicer.called.wait(), timeout=90)

    started = time.monotonic()
    worker.proc.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(worker.proc.wait, 30)
    print(f"injected: SIGTERM with a FormChain in flight; exited {code} after {time.monotonic() - started:.1f}s")

    assert code == 0
    assert await redis.get(keys.task_result_key(SCOPE_ID, response.task_id)) is None  # not acknowledged
    assert await redis.zcard(keys.QUEUE_LEASES) == 0  # released, not left to expire
    servicer.release.set()
    cognition()
    result = await _result(redis, response.task_id)
    assert result["segment_id"] == servicer.calls[0].id and len({s.id for s in servicer.calls}) == 1
