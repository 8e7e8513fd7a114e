"""StoreEvent / StoreEvents / GetContext against the real Redis and MongoDB-wire server."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from athena import keys
from athena.grpc_util import bad_request_violations
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_ingest.ingestor import Ingestor

SCOPE = AsyncAthenaClient.scope("acme", "alice", "helper")


async def test_stored_event_is_in_the_durable_log_and_the_window(client: AsyncAthenaClient, ingest: Ingestor) -> None:
    result = await client.store_event(SCOPE, EventInput("user", "How do I rotate my API keys?"))

    logged = await ingest.event_log.get(result.event_id)
    assert logged is not None and logged.content == "How do I rotate my API keys?"
    window = await client.get_context(SCOPE)
    assert [e.id for e in window] == [result.event_id]
    assert window[0].role == memory_pb2.ROLE_USER


async def test_only_user_messages_enqueue_a_chain_check(client: AsyncAthenaClient, redis) -> None:
    kinds = [
        ("user", "message"),
        ("agent", "message"),
        ("agent", "thought"),
        ("agent", "action"),
        ("system", "observation"),
        ("user", "thought"),
    ]
    results = [await client.store_event(SCOPE, EventInput(role, f"{role} {t}", type=t)) for role, t in kinds]

    assert [bool(r.task_id) for r in results] == [True, False, False, False, False, False]
    queue = await redis.lrange(keys.scope_queue_key("acme:alice:helper"), 0, -1)
    assert len(queue) == 1
    assert await redis.lrange(keys.DISPATCHER, 0, -1) == [b"acme:alice:helper"]


async def test_repeated_event_id_stores_nothing_new_and_returns_the_original(
    client: AsyncAthenaClient, ingest: Ingestor, redis
) -> None:
    first = await client.store_event(SCOPE, EventInput("user", "hello there", event_id="client-1"))
    again = await client.store_event(SCOPE, EventInput("user", "hello there (resent)", event_id="client-1"))

    assert again.event_id == first.event_id
    assert again.duplicate and not first.duplicate
    assert await ingest.event_log.count({"client_event_id": "client-1"}) == 1
    assert len(await client.get_context(SCOPE)) == 1
    assert await redis.llen(keys.scope_queue_key("acme:alice:helper")) == 1


async def test_same_event_id_in_another_scope_is_a_different_event(client: AsyncAthenaClient) -> None:
    a = await client.store_event(SCOPE, EventInput("user", "one", event_id="shared"))
    b = await client.store_event(
        AsyncAthenaClient.scope("acme", "bob", "helper"), EventInput("user", "two", event_id="shared")
    )
    assert a.event_id != b.event_id and not b.duplicate


async def test_store_events_keeps_order_and_deduplicates_per_event(client: AsyncAthenaClient, ingest: Ingestor) -> None:
    await client.store_event(SCOPE, EventInput("user", "already here", event_id="e1"))
    batch = [
        EventInput("user", "already here", event_id="e1"),
        EventInput("agent", "reply", event_id="e2"),
        EventInput("user", "next question?", event_id="e3"),
    ]
    response = await client.store_events(SCOPE, batch)

    assert [r.duplicate for r in response.results] == [True, False, False]
    assert [r.task_id != "" for r in response.results] == [True, False, True]
    window = await client.get_context(SCOPE)
    assert [e.content for e in window] == ["already here", "reply", "next question?"]
    assert await ingest.event_log.count({"tenant_id": "acme"}) == 3


async def test_get_context_limit_returns_the_most_recent_events(client: AsyncAthenaClient) -> None:
    await client.store_events(SCOPE, [EventInput("user", f"m{i}") for i in range(5)])
    assert [e.content for e in await client.get_context(SCOPE, limit=2)] == ["m3", "m4"]


async def test_client_timestamp_is_kept(client: AsyncAthenaClient) -> None:
    when = datetime(2024, 5, 8, 13, 56, tzinfo=UTC)
    await client.store_event(SCOPE, EventInput("user", "dated", timestamp=when))
    (event,) = await client.get_context(SCOPE)
    assert event.timestamp.ToDatetime(tzinfo=UTC) == when


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (memory_pb2.StoreEventRequest(event=memory_pb2.NewEvent(role=1, type=1, content="x")), "scope"),
        (
            memory_pb2.StoreEventRequest(
                scope=memory_pb2.Scope(tenant_id="t", user_id="u"),
                event=memory_pb2.NewEvent(role=1, type=1, content="x"),
            ),
            "scope.agent_id",
        ),
        (
            memory_pb2.StoreEventRequest(
                scope=memory_pb2.Scope(tenant_id="t:x", user_id="u", agent_id="a"),
                event=memory_pb2.NewEvent(role=1, type=1, content="x"),
            ),
            "scope.tenant_id",
        ),
        (
            memory_pb2.StoreEventRequest(scope=SCOPE, event=memory_pb2.NewEvent(role=9, type=1, content="x")),
            "event.role",
        ),
        (
            memory_pb2.StoreEventRequest(scope=SCOPE, event=memory_pb2.NewEvent(role=1, type=0, content="x")),
            "event.type",
        ),
        (
            memory_pb2.StoreEventRequest(scope=SCOPE, event=memory_pb2.NewEvent(role=1, type=1, content="   ")),
            "event.content",
        ),
        (
            memory_pb2.StoreEventRequest(scope=SCOPE, event=memory_pb2.NewEvent(role=1, type=1, content="x" * 40000)),
            "event.content",
        ),
        (
            memory_pb2.StoreEventRequest(scope=SCOPE, event=memory_pb2.NewEvent(role=1, type=1, content="bell\x07")),
            "event.content",
        ),
        (
            memory_pb2.StoreEventRequest(
                scope=SCOPE,
                event=memory_pb2.NewEvent(role=1, type=1, content="x", metadata={f"k{i}": "v" for i in range(40)}),
            ),
            "event.metadata",
        ),
        (
            memory_pb2.StoreEventRequest(
                scope=SCOPE, event=memory_pb2.NewEvent(role=1, type=1, content="x", metadata={"k": "v" * 2000})
            ),
            'event.metadata["k"]',
        ),
        (memory_pb2.StoreEventRequest(scope=SCOPE), "event"),
    ],
)
async def test_bad_input_is_refused_with_the_field_named_and_nothing_written(
    client_for: Callable[..., AsyncAthenaClient],
    ingest: Ingestor,
    redis,
    request_: memory_pb2.StoreEventRequest,
    field: str,
) -> None:
    # A credential of the tenant the request names, so that the refusal is the validation's own.
    async with client_for(request_.scope.tenant_id or "acme") as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client._stub.StoreEvent(request_, timeout=5, metadata=client.options.metadata)

    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in [f for f, _ in bad_request_violations(err.value)]
    assert await ingest.event_log.count({}) == 0
    assert await redis.dbsize() == 0


async def test_timestamp_far_in_the_future_is_refused(client: AsyncAthenaClient) -> None:
    future = datetime.now(UTC) + timedelta(days=2)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.store_event(SCOPE, EventInput("user", "from the future", timestamp=future))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in bad_request_violations(err.value)] == ["event.timestamp"]


async def test_one_bad_event_in_a_batch_writes_nothing(client: AsyncAthenaClient, ingest: Ingestor, redis) -> None:
    batch = [EventInput("user", "fine"), EventInput("user", ""), EventInput("agent", "fine too")]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.store_events(SCOPE, batch)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in bad_request_violations(err.value)] == ["events[1].content"]
    assert await ingest.event_log.count({}) == 0
    assert await redis.dbsize() == 0


async def test_health_and_reflection_are_served(ingest: Ingestor) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    async with grpc.aio.insecure_channel(ingest.target) as channel:  # type: ignore[attr-defined]
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="athena.memory.v1.MemoryService"), timeout=5
        )
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        stream = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
        )
        names = [s.name async for r in stream for s in r.list_services_response.service]
        assert "athena.memory.v1.MemoryService" in names


async def test_with_memory_workers_disabled_nothing_is_queued(
    client: AsyncAthenaClient, ingest: Ingestor, redis
) -> None:
    ingest.enqueue_checks = False  # what ENABLE_MEMORY_WORKERS=false sets (athena_ingest.server.build_ingest)
    result = await client.store_event(SCOPE, EventInput("user", "just remember this"))
    assert result.task_id == ""
    assert [e.content for e in await client.get_context(SCOPE)] == ["just remember this"]
    assert await redis.llen(keys.DISPATCHER) == 0


async def test_an_erasure_landing_between_the_log_write_and_the_redis_step_drops_the_event(
    client: AsyncAthenaClient, ingest: Ingestor, redis
) -> None:
    import time

    real_insert = ingest.event_log.insert

    async def insert_then_a_forget_lands(events, *, commit_id):  # type: ignore[no-untyped-def]
        # The event is in the log, its Redis step not yet run: ForgetUser writes its tombstone now.
        out = await real_insert(events, commit_id=commit_id)
        await redis.set(keys.erasure_key("acme", "alice"), repr(time.time() + 1))
        return out

    ingest.event_log.insert = insert_then_a_forget_lands  # type: ignore[method-assign]
    await client.store_event(SCOPE, EventInput("user", "said just before the user asked to be forgotten"))

    assert await client.get_context(SCOPE) == []
    assert await redis.llen(keys.scope_queue_key("acme:alice:helper")) == 0
    assert await ingest.event_log.count({"tenant_id": "acme", "user_id": "alice"}) == 0


async def test_a_batch_of_several_users_drops_only_the_erased_users_events(ingest: Ingestor, redis) -> None:
    import time
    from datetime import datetime

    from athena.events import to_timestamp

    stored_at = to_timestamp(datetime.now(UTC))
    scopes = [
        memory_pb2.Scope(tenant_id="acme", user_id=u, agent_id="helper") for u in ("alice", "bob", "alice", "bob")
    ]
    events = [
        memory_pb2.Event(
            id=f"ev{i}",
            scope=s,
            role=memory_pb2.ROLE_USER,
            type=memory_pb2.EVENT_TYPE_MESSAGE,
            content=f"message {i}",
            stored_at=stored_at,
            timestamp=stored_at,
            client_event_id=f"ev{i}",
        )
        for i, s in enumerate(scopes)
    ]
    await ingest.event_log.insert(events, commit_id="cm_test")
    await redis.set(keys.erasure_key("acme", "alice"), repr(time.time() + 1))  # after alice's events were stored

    kept = await ingest._apply_to_redis(events)

    assert [e.id for e in kept] == ["ev1", "ev3"]
    assert [e.content for e in await ingest.window.read(scopes[1])] == ["message 1", "message 3"]
    assert await ingest.window.read(scopes[0]) == []
    assert await redis.llen(keys.scope_queue_key("acme:bob:helper")) == 2
    assert await redis.llen(keys.scope_queue_key("acme:alice:helper")) == 0
    assert await redis.lrange(keys.DISPATCHER, 0, -1) == [b"acme:bob:helper"]
    assert await ingest.event_log.count({"user_id": "alice"}) == 0
    assert await ingest.event_log.count({"user_id": "bob"}) == 2


async def test_the_stored_events_metric_counts_each_event_of_a_batch_by_role_type_and_repeat(
    client: AsyncAthenaClient,
) -> None:
    from prometheus_client import REGISTRY

    def stored(role: str, duplicate: str) -> float:
        labels = {"role": role, "type": "message", "duplicate": duplicate}
        return REGISTRY.get_sample_value("memos_events_stored_total", labels) or 0.0

    before = {(r, d): stored(r, d) for r in ("user", "agent") for d in ("false", "true")}
    batch = [EventInput("user", f"question {i}", event_id=f"q{i}") for i in range(3)] + [
        EventInput("agent", f"answer {i}") for i in range(2)
    ]
    await client.store_events(SCOPE, batch)
    await client.store_events(SCOPE, batch[:2])  # two repeats

    assert stored("user", "false") - before["user", "false"] == 3
    assert stored("agent", "false") - before["agent", "false"] == 2
    assert stored("user", "true") - before["user", "true"] == 2
    assert stored("agent", "true") - before["agent", "true"] == 0
