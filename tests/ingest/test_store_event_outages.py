"""What StoreEvent does when MongoDB or Redis is down: UNAVAILABLE, never a half-stored event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from athena import keys
from athena.config import load_settings
from athena.local import MongoWireServer, RedisServer, free_port
from athena.redis_util import connect_redis
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions, EventInput
from athena_ingest.ingestor import Ingestor
from athena_ingest.server import build_ingest

SCOPE = AsyncAthenaClient.scope("acme", "alice", "helper")


@pytest.fixture
async def fragile_ingest(
    own_redis_server: RedisServer, own_mongo_server: MongoWireServer, credentials: StackCredentials
) -> AsyncIterator[tuple[Ingestor, str]]:
    """Ingest against servers this test may stop."""
    settings = load_settings(
        redis_url=own_redis_server.url,
        mongodb_uri=own_mongo_server.url,
        ingest_grpc_port=free_port(),
        grpc_bind_host="127.0.0.1",
        mongodb_timeout_ms=1000,
        **credentials.settings_overrides(),
    )
    host, ingestor = await build_ingest(settings)
    await host.start()
    yield ingestor, f"127.0.0.1:{host.bound_port}"
    await host.shutdown()


async def test_mongodb_down_gives_unavailable_and_writes_nothing(
    fragile_ingest, own_mongo_server: MongoWireServer, own_redis_server: RedisServer, credentials: StackCredentials
) -> None:
    _ingestor, target = fragile_ingest
    own_mongo_server.stop()
    async with AsyncAthenaClient(
        target, options=ClientOptions(timeout=10, max_attempts=1), bearer_token=credentials.token_for("acme")
    ) as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.store_event(SCOPE, EventInput("user", "is anyone there?"))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    redis = connect_redis(own_redis_server.url)
    assert await redis.dbsize() == 0
    await redis.aclose()


async def test_redis_down_after_the_log_write_converges_when_retried_with_the_same_event_id(
    fragile_ingest, own_redis_server: RedisServer, credentials: StackCredentials
) -> None:
    ingestor, target = fragile_ingest
    event = EventInput("user", "please remember my seat preference", event_id="evt-42")
    own_redis_server.stop()
    async with AsyncAthenaClient(
        target, options=ClientOptions(timeout=10, max_attempts=1), bearer_token=credentials.token_for("acme")
    ) as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.store_event(SCOPE, event)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        # Defined outcome: the event is in the durable log, its commit still open, and nowhere in Redis.
        logged = await ingestor.event_log.collection.find_one({"client_event_id": "evt-42"})
        assert (
            logged is not None and await ingestor.event_log.commits.count_documents({"_id": logged["commit_id"]}) == 1
        )

        own_redis_server.start()
        retried = await client.store_event(SCOPE, event)
        again = await client.store_event(SCOPE, event)

        assert retried.duplicate and again.duplicate and retried.event_id == again.event_id
        assert [e.id for e in await client.get_context(SCOPE)] == [retried.event_id]
        # The repair loop closes the original's commit; applying it again changes nothing.
        from datetime import timedelta

        await asyncio.sleep(0.05)
        await ingestor.repair_pending(older_than=timedelta(0))
        assert await ingestor.event_log.commits.count_documents({"_id": logged["commit_id"]}) == 0
        assert [e.id for e in await client.get_context(SCOPE)] == [retried.event_id]
    redis = connect_redis(own_redis_server.url)
    assert await redis.llen(keys.scope_queue_key("acme:alice:helper")) == 1
    await redis.aclose()


async def test_pending_events_are_applied_by_the_repair_loop_when_the_client_never_retries(
    fragile_ingest, own_redis_server: RedisServer, credentials: StackCredentials
) -> None:
    from datetime import timedelta

    ingestor, target = fragile_ingest
    own_redis_server.stop()
    async with AsyncAthenaClient(
        target, options=ClientOptions(timeout=10, max_attempts=1), bearer_token=credentials.token_for("acme")
    ) as client:
        with pytest.raises(grpc.aio.AioRpcError):
            await client.store_event(SCOPE, EventInput("user", "abandoned by its client"))
        own_redis_server.start()
        await asyncio.sleep(0.05)

        repaired = await ingestor.repair_pending(older_than=timedelta(0))

        assert repaired == 1
        assert [e.content for e in await client.get_context(SCOPE)] == ["abandoned by its client"]
        assert await ingestor.event_log.commits.count_documents({}) == 0
        assert await ingestor.repair_pending(older_than=timedelta(0)) == 0


async def _health(target: str) -> int:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    async with grpc.aio.insecure_channel(target) as channel:
        return (
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="readiness"), timeout=5
            )
        ).status


async def _wait_health(target: str, want: int, timeout: float = 20.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await _health(target) == want:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"health did not become {want}")


async def test_health_is_not_serving_while_redis_is_down_and_serving_again_when_it_returns(
    fragile_ingest, own_redis_server: RedisServer
) -> None:
    from grpc_health.v1 import health_pb2

    _, target = fragile_ingest
    await _wait_health(target, health_pb2.HealthCheckResponse.SERVING)
    own_redis_server.stop()
    await _wait_health(target, health_pb2.HealthCheckResponse.NOT_SERVING)
    own_redis_server.start()
    await _wait_health(target, health_pb2.HealthCheckResponse.SERVING)


async def test_the_client_retries_unavailable_with_backoff_until_the_event_is_stored(
    fragile_ingest, own_redis_server: RedisServer, credentials: StackCredentials
) -> None:
    from athena.queue import ExponentialFullJitter

    ingestor, target = fragile_ingest
    own_redis_server.stop()

    async def bring_redis_back() -> None:
        await asyncio.sleep(1.5)
        await asyncio.to_thread(own_redis_server.start)

    comeback = asyncio.create_task(bring_redis_back())
    options = ClientOptions(timeout=10, max_attempts=20, backoff=ExponentialFullJitter(base=0.2, cap=0.5))
    async with AsyncAthenaClient(target, options=options, bearer_token=credentials.token_for("acme")) as client:
        result = await client.store_event(SCOPE, EventInput("user", "stored despite the outage"))
        await comeback
        assert [e.id for e in await client.get_context(SCOPE)] == [result.event_id]
    assert await ingestor.event_log.count({"content": "stored despite the outage"}) == 1
