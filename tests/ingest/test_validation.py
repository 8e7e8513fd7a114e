"""Input limits of every public RPC, through the running in-process ingest (real Redis and MongoDB-wire).

Each refusal is INVALID_ARGUMENT naming the field path, and a refused write leaves nothing behind.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from support.hostile import MEMORY_METHODS, call_raw, refused_fields

from athena.config import load_settings
from athena.events import to_timestamp
from athena_client import AsyncAthenaClient
from athena_client.memory.v1 import memory_pb2
from athena_ingest.ingestor import Ingestor
from athena_ingest.validation import Limits, validate_new_event

SCOPE = AsyncAthenaClient.scope("acme", "alice", "helper")


def _event(content: str = "hello", **fields: Any) -> memory_pb2.NewEvent:
    return memory_pb2.NewEvent(role=memory_pb2.ROLE_USER, type=memory_pb2.EVENT_TYPE_MESSAGE, content=content, **fields)


async def _refusal(client: AsyncAthenaClient, method: str, request: Any) -> list[str]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await getattr(client._stub, method)(request, timeout=10, metadata=client.options.metadata)
    return refused_fields(err.value)


async def _nothing_written(ingest: Ingestor, redis: Any) -> None:
    assert await ingest.event_log.count({}) == 0
    assert await redis.dbsize() == 0


NOW = datetime.now(UTC)


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (_event("x" * 32769), "event.content"),
        (_event("é" * 16385), "event.content"),  # 16385 characters, 32770 bytes: the limit is in bytes
        (_event("nul\x00inside"), "event.content"),
        (_event("escape \x1b[31m"), "event.content"),
        (_event("c1 control \x85"), "event.content"),
        (_event("delete \x7f"), "event.content"),
        (_event(" \n\t "), "event.content"),
        (_event(metadata={"": "v"}), 'event.metadata[""]'),
        (_event(metadata={"a.b": "v"}), 'event.metadata["a.b"]'),
        (_event(metadata={"$where": "v"}), 'event.metadata["$where"]'),
        (_event(metadata={"tab\tkey": "v"}), 'event.metadata["tab\\tkey"]'),
        (_event(metadata={"k" * 129: "v"}), 'event.metadata["' + "k" * 40 + '..."]'),
        (_event(metadata={"k": "nul\x00"}), 'event.metadata["k"]'),
        (_event(metadata={"k": "v" * 1025}), 'event.metadata["k"]'),
        (_event(metadata={f"k{i}": "v" for i in range(33)}), "event.metadata"),
        (_event(timestamp=to_timestamp(datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC))), "event.timestamp"),
        (_event(timestamp=timestamp_pb2.Timestamp(seconds=-62135596800)), "event.timestamp"),
        (_event(timestamp=timestamp_pb2.Timestamp(seconds=2**62)), "event.timestamp"),
        (_event(timestamp=timestamp_pb2.Timestamp(seconds=1_700_000_000, nanos=-1)), "event.timestamp.nanos"),
        (
            _event(timestamp=timestamp_pb2.Timestamp(seconds=1_700_000_000, nanos=1_000_000_000)),
            "event.timestamp.nanos",
        ),
        (_event(timestamp=to_timestamp(NOW + timedelta(days=1, hours=1))), "event.timestamp"),
        (_event(event_id="has space"), "event.event_id"),
        (_event(event_id="trailing-newline\n"), "event.event_id"),
        (_event(event_id="x" * 129), "event.event_id"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_store_event_refuses_each_field_over_its_limit_naming_it(
    client: AsyncAthenaClient, ingest: Ingestor, redis: Any, event: memory_pb2.NewEvent, field: str
) -> None:
    fields = await _refusal(client, "StoreEvent", memory_pb2.StoreEventRequest(scope=SCOPE, event=event))

    assert fields == [field]
    await _nothing_written(ingest, redis)


@pytest.mark.parametrize(
    ("scope", "field"),
    [
        (AsyncAthenaClient.scope("acme", "alice\n", "helper"), "scope.user_id"),
        (AsyncAthenaClient.scope("acme", "a" * 129, "helper"), "scope.user_id"),
        (AsyncAthenaClient.scope("acme", "alice", "агент"), "scope.agent_id"),
        (AsyncAthenaClient.scope("acme", "alice", "he/lper"), "scope.agent_id"),
        (AsyncAthenaClient.scope("acme", "alice", ""), "scope.agent_id"),
    ],
)
async def test_scope_ids_outside_the_id_alphabet_are_refused(
    client: AsyncAthenaClient, ingest: Ingestor, redis: Any, scope: memory_pb2.Scope, field: str
) -> None:
    assert await _refusal(client, "StoreEvent", memory_pb2.StoreEventRequest(scope=scope, event=_event())) == [field]
    await _nothing_written(ingest, redis)


async def test_values_at_every_limit_are_accepted_and_stored_byte_for_byte(
    client: AsyncAthenaClient, ingest: Ingestor
) -> None:
    content = "tab\tnewline\ncr\r " + "é" * ((32768 - 16) // 2)
    metadata = {f"{i:02d}" + "k" * 126: "v" * 1024 for i in range(32)}
    event = _event(
        content,
        metadata=metadata,
        timestamp=to_timestamp(datetime(2000, 1, 1, tzinfo=UTC)),
        event_id="a" * 128,
    )
    assert len(content.encode()) == 32768

    result = await client.store_event(SCOPE, event)

    stored = await ingest.event_log.get(result.event_id)
    assert stored is not None and stored.content == content and dict(stored.metadata) == metadata


async def test_a_timestamp_inside_the_future_skew_is_accepted(client: AsyncAthenaClient) -> None:
    result = await client.store_event(SCOPE, _event(timestamp=to_timestamp(datetime.now(UTC) + timedelta(hours=23))))
    assert result.event_id


async def test_a_batch_with_one_bad_event_names_its_index_and_writes_none(
    client: AsyncAthenaClient, ingest: Ingestor, redis: Any
) -> None:
    events = [_event(f"fine {i}") for i in range(5)]
    events[3] = _event("bad metadata", metadata={"k": "v\x00"})

    fields = await _refusal(client, "StoreEvents", memory_pb2.StoreEventsRequest(scope=SCOPE, events=events))

    assert fields == ['events[3].metadata["k"]']
    await _nothing_written(ingest, redis)


async def test_empty_and_oversized_batches_are_refused(client: AsyncAthenaClient, ingest: Ingestor, redis: Any) -> None:
    assert await _refusal(client, "StoreEvents", memory_pb2.StoreEventsRequest(scope=SCOPE)) == ["events"]
    too_many = memory_pb2.StoreEventsRequest(scope=SCOPE, events=[_event(str(i)) for i in range(1001)])
    assert await _refusal(client, "StoreEvents", too_many) == ["events"]
    await _nothing_written(ingest, redis)


async def test_a_batch_of_many_bad_events_lists_ten_and_counts_the_rest(
    client: AsyncAthenaClient, ingest: Ingestor, redis: Any
) -> None:
    # 500 violations would not fit in gRPC trailers; the refusal must still arrive whole.
    bad = memory_pb2.StoreEventsRequest(
        scope=SCOPE, events=[_event("\x00" * 200, metadata={"$" + "k" * 100: "v"}) for _ in range(250)]
    )

    fields = await _refusal(client, "StoreEvents", bad)

    assert fields[:2] == ["events[0].content", 'events[0].metadata["$' + "k" * 39 + '..."]']
    assert len(fields) == 11 and fields[-1] == "request"
    await _nothing_written(ingest, redis)


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (memory_pb2.GetContextRequest(scope=SCOPE, limit=-1), "limit"),
        (memory_pb2.GetContextRequest(scope=SCOPE, limit=2001), "limit"),
        (memory_pb2.GetContextRequest(scope=SCOPE, chain_limit=101), "chain_limit"),
        (memory_pb2.GetContextRequest(scope=SCOPE, chain_limit=-3), "chain_limit"),
        (memory_pb2.GetContextRequest(scope=SCOPE, profile_limit=101), "profile_limit"),
        (memory_pb2.GetContextRequest(scope=SCOPE, profile_limit=-1), "profile_limit"),
        (memory_pb2.GetContextRequest(scope=SCOPE, query="  "), "query"),
        (memory_pb2.GetContextRequest(scope=SCOPE, query="q\x00"), "query"),
        (memory_pb2.GetContextRequest(scope=SCOPE, query="q" * 4097), "query"),
        (memory_pb2.GetContextRequest(scope=AsyncAthenaClient.scope("acme", "alice", "")), "scope.agent_id"),
    ],
)
async def test_get_context_refuses_out_of_range_fields(
    client: AsyncAthenaClient, request_: memory_pb2.GetContextRequest, field: str
) -> None:
    assert await _refusal(client, "GetContext", request_) == [field]


SEARCH_SCOPE = AsyncAthenaClient.scope("acme", "alice", "")


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query=""), "query"),
        (memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query="é" * 2049), "query"),
        (memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query="bell\x07"), "query"),
        (memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query="q", limit=101), "limit"),
        (memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query="q", limit=-1), "limit"),
        (
            memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query="q", similarity_threshold=float("nan")),
            "similarity_threshold",
        ),
        (
            memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query="q", similarity_threshold=1.5),
            "similarity_threshold",
        ),
        (
            memory_pb2.SearchMemoryRequest(
                scope=SEARCH_SCOPE, query="q", metadata_filters={f"k{i}": "v" for i in range(9)}
            ),
            "metadata_filters",
        ),
        (
            memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query="q", metadata_filters={"a.b": "v"}),
            'metadata_filters["a.b"]',
        ),
        (
            memory_pb2.SearchMemoryRequest(scope=SEARCH_SCOPE, query="q", metadata_filters={"k": "v" * 1025}),
            'metadata_filters["k"]',
        ),
        (memory_pb2.SearchMemoryRequest(scope=AsyncAthenaClient.scope("acme", "", ""), query="q"), "scope.user_id"),
    ],
)
async def test_search_memory_is_refused_at_the_public_edge(
    client: AsyncAthenaClient, request_: memory_pb2.SearchMemoryRequest, field: str
) -> None:
    # No formation runs here: a request that got past ingest's validation would fail UNAVAILABLE instead.
    assert await _refusal(client, "SearchMemory", request_) == [field]


@pytest.mark.parametrize(
    ("method", "request_", "field"),
    [
        ("GetChain", memory_pb2.GetChainRequest(scope=SEARCH_SCOPE), "chain_id"),
        ("GetChain", memory_pb2.GetChainRequest(scope=SEARCH_SCOPE, chain_id="../../etc"), "chain_id"),
        ("GetChain", memory_pb2.GetChainRequest(scope=SEARCH_SCOPE, chain_id="ch_1\n"), "chain_id"),
        ("ListChains", memory_pb2.ListChainsRequest(scope=SEARCH_SCOPE, page_size=201), "page_size"),
        ("ListChains", memory_pb2.ListChainsRequest(scope=SEARCH_SCOPE, page_size=-1), "page_size"),
        ("ListChains", memory_pb2.ListChainsRequest(scope=SEARCH_SCOPE, status=7), "status"),  # type: ignore[arg-type]
        ("ListChains", memory_pb2.ListChainsRequest(scope=SEARCH_SCOPE, page_token="not a token!"), "page_token"),
        ("ListChains", memory_pb2.ListChainsRequest(scope=SEARCH_SCOPE, page_token="A" * 513), "page_token"),
        ("ForgetUser", memory_pb2.ForgetUserRequest(tenant_id="acme", user_id="alice\n"), "user_id"),
        ("ForgetUser", memory_pb2.ForgetUserRequest(tenant_id="acme", user_id=""), "user_id"),
    ],
)
async def test_chain_and_erasure_requests_are_refused_at_the_public_edge(
    client: AsyncAthenaClient, method: str, request_: Any, field: str
) -> None:
    assert await _refusal(client, method, request_) == [field]


async def test_invalid_utf8_in_a_string_field_is_invalid_argument_not_internal(
    client: AsyncAthenaClient, ingest: Ingestor, redis: Any
) -> None:
    wire = memory_pb2.StoreEventRequest(scope=SCOPE, event=_event("MARK")).SerializeToString()
    invalid = wire.replace(b"MARK", b"\xff\xfe\xc3(")

    async with grpc.aio.insecure_channel(ingest.target) as channel:  # type: ignore[attr-defined]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call_raw(channel, "StoreEvent", invalid, metadata=client.options.metadata)

    assert refused_fields(err.value) == ["request"]
    assert "UTF-8" in err.value.details()
    await _nothing_written(ingest, redis)


GARBAGE = {
    "random": b"\xff\xff\xff\xff\x0f garbage",
    "length past the end": b"\x0a\xff\xff\xff\xff\x0f",
    "overlong varint": b"\x08" + b"\xff" * 11,
    "groups nested 5000 deep": b"\x7b" * 5000 + b"\x7c" * 5000,
}


@pytest.mark.parametrize("payload", GARBAGE.values(), ids=GARBAGE.keys())
@pytest.mark.parametrize("method", MEMORY_METHODS)
async def test_garbage_bytes_are_invalid_argument_on_every_rpc(
    client: AsyncAthenaClient, ingest: Ingestor, method: str, payload: bytes
) -> None:
    async with grpc.aio.insecure_channel(ingest.target) as channel:  # type: ignore[attr-defined]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call_raw(channel, method, payload, metadata=client.options.metadata)
    assert refused_fields(err.value) == ["request"]


async def test_a_request_over_the_transport_limit_is_resource_exhausted_and_the_server_lives_on(
    client: AsyncAthenaClient, ingest: Ingestor, redis: Any
) -> None:
    # gRPC's own 4 MiB receive limit refuses it before any Athena code runs.
    huge = memory_pb2.StoreEventsRequest(scope=SCOPE, events=[_event("x" * 30000) for _ in range(150)])
    assert huge.ByteSize() > 4 * 1024 * 1024

    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client._stub.StoreEvents(huge, timeout=10, metadata=client.options.metadata)

    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    async with grpc.aio.insecure_channel(ingest.target) as channel:  # type: ignore[attr-defined]
        health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    await _nothing_written(ingest, redis)


def test_the_limits_are_the_configured_ones() -> None:
    limits = Limits.from_settings(
        load_settings(
            event_max_content_bytes=10,
            event_max_metadata_entries=1,
            event_earliest_timestamp="2020-01-01T00:00:00Z",
            event_max_future_skew_seconds=60,
        )
    )
    now = datetime.now(UTC)
    event = _event(
        "eleven byte", metadata={"a": "1", "b": "2"}, timestamp=to_timestamp(datetime(2019, 6, 1, tzinfo=UTC))
    )

    fields = [v.field for v in validate_new_event(event, field="event", limits=limits, now=now)]
    assert fields == ["event.content", "event.metadata", "event.timestamp"]
    late = _event("ten bytes!", timestamp=to_timestamp(now + timedelta(seconds=90)))
    assert [v.field for v in validate_new_event(late, field="event", limits=limits, now=now)] == ["event.timestamp"]
