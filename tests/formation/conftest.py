from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from support.formation_data import INTERNAL_TOKEN, SCOPE, make_segment, milvus_ids  # noqa: F401

from athena.auth import BearerCredentialInterceptor
from athena.config import load_settings
from athena.internal.v1 import formation_pb2_grpc
from athena.local import MongoWireServer, free_port
from athena_formation.server import Formation, build_formation


@pytest.fixture
async def formation(mongo_server: MongoWireServer, mongo_db_name: str, tmp_path: Path) -> AsyncIterator[Formation]:
    """The formation service in this process: real MongoDB-wire server, a fresh Milvus Lite file."""
    settings = load_settings(
        mongodb_uri=mongo_server.url,
        mongodb_database=mongo_db_name,
        vector_index_uri=str(tmp_path / "milvus.db"),
        formation_grpc_port=free_port(),
        grpc_bind_host="127.0.0.1",
        llm_base_url="",
        internal_auth_token=INTERNAL_TOKEN,
    )
    f = await build_formation(settings)
    await f.host.start()
    yield f
    await f.host.shutdown()


@pytest.fixture
async def stub(formation: Formation) -> AsyncIterator[formation_pb2_grpc.FormationServiceStub]:
    """A stub of the in-process formation whose channel carries the internal credential."""
    interceptors = [BearerCredentialInterceptor(INTERNAL_TOKEN)]
    async with grpc.aio.insecure_channel(
        f"127.0.0.1:{formation.host.bound_port}", interceptors=interceptors
    ) as channel:
        yield formation_pb2_grpc.FormationServiceStub(channel)
