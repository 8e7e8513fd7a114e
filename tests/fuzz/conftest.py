"""The stack the property-based tests attack: ingest and formation as real processes on free ports,
with real Redis, the MongoDB-wire server and Milvus Lite. Cognition is left out so that nothing but the
tested calls changes the short-term windows."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from pymongo import AsyncMongoClient
from redis.asyncio import Redis
from stack_target import TENANT, Target

from athena.config import load_settings
from athena.stores import EventLog
from athena_cli.stack import LocalStack, StackPorts
from athena_client import ClientOptions


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    s = LocalStack(
        data_dir=tmp_path_factory.mktemp("fuzz-stack"),
        ports=StackPorts.free(),
        env={"LLM_BASE_URL": ""},
        services=("ingest", "formation"),
    )
    with s:
        yield s


@pytest.fixture
async def target(stack: LocalStack) -> AsyncIterator[Target]:
    assert stack.mongo is not None and stack.redis is not None
    mongo: AsyncMongoClient = AsyncMongoClient(stack.mongo.url, serverSelectionTimeoutMS=5000)  # type: ignore[type-arg]
    redis = Redis.from_url(stack.redis.url)
    async with (
        stack.client(tenant_id=TENANT, options=ClientOptions(timeout=20, max_attempts=1)) as client,
        grpc.aio.insecure_channel(stack.ingest_target) as channel,
    ):
        t = Target(
            stack=stack,
            client=client,
            channel=channel,
            event_log=EventLog(mongo, load_settings().mongodb_database),
            redis=redis,
        )
        yield t
        await t.assert_serving()
    await redis.aclose()
    await mongo.close()
