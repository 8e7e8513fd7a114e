"""Real dependency servers for the tests, started on free ports (never mocks, never the machine's own).

Session-wide servers are shared and wiped between tests; a test that kills or restarts a server asks
for its own with the `own_redis_server` / `own_mongo_server` fixtures.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from athena.local import MongoWireServer, RedisServer, free_port

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# pytest-xdist's workers inherit COLUMNS=80, which rich reads once when the CLI's consoles are made, so
# CLI tables would wrap there and nowhere else; without it rich measures the width at each print.
os.environ.pop("COLUMNS", None)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(port=free_port(), data_dir=tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mongo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MongoWireServer]:
    server = MongoWireServer(port=free_port(), data_dir=tmp_path_factory.mktemp("mongo"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own, free to kill and restart (append-only file on, so data survives)."""
    server = RedisServer(port=free_port(), data_dir=tmp_path / "own-redis")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_mongo_server(tmp_path: Path) -> Iterator[MongoWireServer]:
    server = MongoWireServer(port=free_port(), data_dir=tmp_path / "own-mongo")
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_server.url)
    await client.flushdb()
    yield client
    await client.aclose()


@pytest.fixture
def mongo_db_name(request: pytest.FixtureRequest) -> str:
    # One database per test keeps tests independent without dropping between them.
    digest = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:10]
    return "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:40] + "_" + digest


@pytest.fixture
async def mongo(mongo_server: MongoWireServer) -> AsyncIterator[AsyncMongoClient]:  # type: ignore[type-arg]
    client: AsyncMongoClient = AsyncMongoClient(mongo_server.url, serverSelectionTimeoutMS=5000)  # type: ignore[type-arg]
    yield client
    await client.close()
