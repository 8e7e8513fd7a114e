from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from redis.asyncio import Redis
from support.formation_data import INTERNAL_TOKEN, SCOPE, make_segment, milvus_ids  # noqa: F401
from support.formation_in_process import running_formation
from support.in_process_stack import InProcessStack, running_in_process

from athena.auth import bearer_credential_interceptors
from athena.internal.v1 import formation_pb2_grpc
from athena.local import MongoWireServer, RedisServer
from athena_formation.server import Formation


@pytest.fixture
async def formation(mongo_server: MongoWireServer, mongo_db_name: str, tmp_path: Path) -> AsyncIterator[Formation]:
    async with running_formation(mongo_server, mongo_db_name, tmp_path) as f:
        yield f


@pytest.fixture
async def stub(formation: Formation) -> AsyncIterator[formation_pb2_grpc.FormationServiceStub]:
    """A stub of the in-process formation whose channel carries the internal credential."""
    interceptors = bearer_credential_interceptors(INTERNAL_TOKEN)
    async with grpc.aio.insecure_channel(
        f"127.0.0.1:{formation.host.bound_port}", interceptors=interceptors
    ) as channel:
        yield formation_pb2_grpc.FormationServiceStub(channel)


@pytest.fixture
async def stack(
    redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, redis: Redis, tmp_path: Path
) -> AsyncIterator[InProcessStack]:
    """Ingest and formation in this process, with authentication on, against the session's servers."""
    async with running_in_process(redis_server, mongo_server, mongo_db_name, redis, tmp_path) as running:
        yield running
