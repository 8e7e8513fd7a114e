"""Property-based attacks on the running public API (ingest and formation as real processes).

For every generated request the answer is either success or a refusal with INVALID_ARGUMENT (naming a
field), PERMISSION_DENIED or UNAUTHENTICATED; never INTERNAL or UNKNOWN. A refused write changes
nothing (the scope's events in the durable log, its window, the event count and the Redis key count),
and every service process is alive (ingest answering its health check) after every test.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf.message import DecodeError
from hostile_inputs import (
    FUZZ,
    RAW_SCOPE,
    Credential,
    credentials,
    forged_context_token,
    forged_token,
    get_chain_requests,
    get_context_requests,
    list_chains_requests,
    raw_payloads,
    search_requests,
    store_event_requests,
    store_events_requests,
    with_bad_string,
)
from hypothesis import event, example, given
from hypothesis import strategies as st
from stack_target import TENANT, Footprint, Target
from support.hostile import call_raw, check_refusal, refused_fields

from athena_client.memory.v1 import memory_pb2


def _refused(err: grpc.aio.AioRpcError) -> None:
    check_refusal(err)
    event(f"refused: {err.code().name}")  # the outcome mix shows in --hypothesis-show-statistics


def _effective(scope: memory_pb2.Scope) -> memory_pb2.Scope:
    # An empty tenant is filled in from the credential.
    return memory_pb2.Scope(tenant_id=scope.tenant_id or TENANT, user_id=scope.user_id, agent_id=scope.agent_id)


async def _write(target: Target, call: Any, request: Any, credential: Credential) -> tuple[Any, Footprint] | None:
    """Send a write. Refused: check the refusal and that nothing changed, and return None; stored: the
    response and the scope's footprint from before."""
    scope = _effective(request.scope)
    before = await target.footprint(scope)
    try:
        response = await call(request, timeout=30, metadata=credential(target.metadata))
    except grpc.aio.AioRpcError as err:
        _refused(err)
        assert await target.footprint(scope) == before, "a refused write changed the stores"
        return None
    event("stored")
    return response, before


async def _assert_grew(target: Target, request: Any, before: Footprint, by: int) -> None:
    after = await target.footprint(_effective(request.scope))
    assert (after.scope_events, after.window) == (before.scope_events + by, before.window + by)


@FUZZ
@given(request=store_event_requests(TENANT), credential=credentials)
async def test_store_event_stores_whole_or_refuses_by_field_and_writes_nothing(
    target: Target, request: memory_pb2.StoreEventRequest, credential: Credential
) -> None:
    outcome = await _write(target, target.client._stub.StoreEvent, request, credential)
    if outcome is None:
        return
    response, before = outcome
    stored = await target.event_log.get(response.event_id)
    assert stored is not None
    if not response.duplicate:  # a repeated event_id returns the original event, whatever this one says
        assert stored.content == request.event.content
    await _assert_grew(target, request, before, 0 if response.duplicate else 1)


@FUZZ
@given(request=store_events_requests(TENANT), credential=credentials)
async def test_store_events_writes_the_whole_batch_or_nothing(
    target: Target, request: memory_pb2.StoreEventsRequest, credential: Credential
) -> None:
    outcome = await _write(target, target.client._stub.StoreEvents, request, credential)
    if outcome is None:
        return
    response, before = outcome
    assert len(response.results) == len(request.events)
    await _assert_grew(target, request, before, len({r.event_id for r in response.results if not r.duplicate}))


@FUZZ
@given(request=get_context_requests(TENANT), credential=credentials)
@example(  # a well-formed token with the largest index and an anchor that is in no window
    request=memory_pb2.GetContextRequest(
        scope=RAW_SCOPE, page_token=forged_context_token({"e": "ev_1", "i": 2**31 - 1})
    ),
    credential=lambda valid: valid,
)
async def test_get_context_answers_or_refuses_by_field(
    target: Target, request: memory_pb2.GetContextRequest, credential: Credential
) -> None:
    try:
        response = await target.client._stub.GetContext(request, timeout=30, metadata=credential(target.metadata))
    except grpc.aio.AioRpcError as err:
        _refused(err)
        return
    event("answered")
    # A later page's selection is the token's, not the limit's.
    assert request.page_token or request.limit == 0 or len(response.events) <= request.limit
    assert all(e.scope.tenant_id == TENANT for e in response.events)


@FUZZ
@given(request=search_requests(TENANT), credential=credentials)
async def test_search_memory_answers_or_refuses_by_field(
    target: Target, request: memory_pb2.SearchMemoryRequest, credential: Credential
) -> None:
    try:
        response = await target.client._stub.SearchMemory(request, timeout=30, metadata=credential(target.metadata))
    except grpc.aio.AioRpcError as err:
        _refused(err)
        return
    event("answered")
    assert len(response.hits) <= (request.limit or 5)
    assert all(h.chain.scope.tenant_id == TENANT for h in response.hits)


_RAW_METHODS = ("StoreEvent", "StoreEvents", "GetContext", "SearchMemory")
_raw_requests = st.sampled_from(_RAW_METHODS).flatmap(lambda m: st.tuples(st.just(m), raw_payloads(m, TENANT)))


@FUZZ
@given(raw=_raw_requests)
@example(raw=("StoreEvent", with_bad_string("StoreEvent", TENANT, b"\xff\xfe")))
@example(raw=("StoreEvents", with_bad_string("StoreEvents", TENANT, b"\xc3(")))
@example(raw=("SearchMemory", with_bad_string("SearchMemory", TENANT, b"\xed\xa0\x80")))  # an encoded surrogate
async def test_malformed_bytes_are_refused_as_invalid_argument_never_internal(
    target: Target, raw: tuple[str, bytes]
) -> None:
    method, payload = raw
    scope = memory_pb2.Scope(tenant_id=TENANT, user_id=RAW_SCOPE.user_id, agent_id=RAW_SCOPE.agent_id)
    before = await target.footprint(scope)
    try:
        await call_raw(target.channel, method, payload, metadata=target.metadata, timeout=30)
    except grpc.aio.AioRpcError as err:
        _refused(err)
        if not _parses(method, payload):
            assert refused_fields(err) == ["request"]
        assert await target.footprint(scope) == before
        return
    event("answered")  # random bytes can happen to parse as a valid request
    assert _parses(method, payload)


def _parses(method: str, payload: bytes) -> bool:
    try:
        getattr(memory_pb2, f"{method}Request").FromString(payload)
    except DecodeError:
        return False
    return True


@FUZZ
@given(request=st.one_of(get_chain_requests(TENANT), list_chains_requests(TENANT)))
@example(
    request=memory_pb2.ListChainsRequest(
        scope=memory_pb2.Scope(tenant_id=TENANT, user_id="alice"), page_token=forged_token(2**63)
    )
)
async def test_chain_reads_answer_or_refuse_by_field(
    target: Target, request: memory_pb2.GetChainRequest | memory_pb2.ListChainsRequest
) -> None:
    method = (
        target.client._stub.GetChain
        if isinstance(request, memory_pb2.GetChainRequest)
        else target.client._stub.ListChains
    )
    try:
        await method(request, timeout=30, metadata=target.metadata)
    except grpc.aio.AioRpcError as err:
        if err.code() == grpc.StatusCode.NOT_FOUND and isinstance(request, memory_pb2.GetChainRequest):
            event("answered: NOT_FOUND")  # no such chain: an answer, not a refusal
            return
        _refused(err)
        return
    event("answered")
