from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis
from support.memories_stack import Memories, running_memories

from athena.local import MongoWireServer, RedisServer


@pytest.fixture
async def memories(
    redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, redis: Redis, tmp_path: Path
) -> AsyncIterator[Memories]:
    async with running_memories(redis_server, mongo_server, mongo_db_name, redis, tmp_path) as running:
        yield running
