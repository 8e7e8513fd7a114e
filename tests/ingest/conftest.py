from __future__ import annotations

from typing import AsyncIterator

import pytest

from athena.client import AthenaClient, ClientOptions
from athena.config import load_settings
from athena.local import MongoWireServer, RedisServer, free_port
from athena_ingest.ingestor import Ingestor
from athena_ingest.server import build_ingest


@pytest.fixture
async def ingest(redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, redis) -> AsyncIterator[Ingestor]:
    """The ingest service running in this process against the session's Redis and MongoDB-wire server."""
    settings = load_settings(
        redis_url=redis_server.url,
        mongodb_uri=mongo_server.url,
        mongodb_database=mongo_db_name,
        ingest_grpc_port=free_port(),
        grpc_bind_host="127.0.0.1",
        mongodb_timeout_ms=2000,
    )
    host, ingestor = await build_ingest(settings)
    await host.start()
    ingestor.target = f"127.0.0.1:{host.bound_port}"  # type: ignore[attr-defined]
    yield ingestor
    await host.shutdown()


@pytest.fixture
async def client(ingest: Ingestor) -> AsyncIterator[AthenaClient]:
    async with AthenaClient(ingest.target, options=ClientOptions(timeout=5, max_attempts=1)) as c:  # type: ignore[attr-defined]
        yield c
