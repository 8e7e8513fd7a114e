from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from support.formation_data import INTERNAL_TOKEN, SCOPE, make_segment, milvus_ids  # noqa: F401
from support.formation_in_process import running_formation

from athena.auth import bearer_credential_interceptors
from athena.internal.v1 import formation_pb2_grpc
from athena.local import MongoWireServer
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
