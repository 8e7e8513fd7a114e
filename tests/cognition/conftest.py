"""Fixtures of the tests that run cognition end to end (tests/support/cognition_harness.py): a
recording formation, an in-process ingest and its client, cognition processes started on demand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import grpc
import pytest
from support.cognition_harness import CREDENTIALS, SCOPE, CognitionProcess, RecordingFormation

from athena.config import load_settings
from athena.internal.v1 import formation_pb2_grpc
from athena.local import MongoWireServer, RedisServer, free_port
from athena_client import AsyncAthenaClient, ClientOptions
from athena_ingest.server import build_ingest


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
async def client(
    redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, redis
) -> AsyncIterator[AsyncAthenaClient]:
    settings = load_settings(
        redis_url=redis_server.url,
        mongodb_uri=mongo_server.url,
        mongodb_database=mongo_db_name,
        ingest_grpc_port=free_port(),
        grpc_bind_host="127.0.0.1",
        **CREDENTIALS.settings_overrides(),
    )
    host, _ = await build_ingest(settings)
    await host.start()
    token = CREDENTIALS.token_for(SCOPE.tenant_id)
    async with AsyncAthenaClient(
        f"127.0.0.1:{host.bound_port}", options=ClientOptions(max_attempts=1), bearer_token=token
    ) as c:
        yield c
    await host.shutdown()


@pytest.fixture
def cognition(redis_server: RedisServer, formation, tmp_path: Path) -> Iterator[Callable[..., CognitionProcess]]:
    started: list[CognitionProcess] = []

    def start(**extra_env: str) -> CognitionProcess:
        p = CognitionProcess(redis_server.url, formation[1], tmp_path / "cognition.log", **extra_env)
        started.append(p)
        p.wait_serving()
        return p

    yield start
    for p in started:
        p.stop()
