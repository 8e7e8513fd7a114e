"""Tenant isolation of the public API: a credential of one tenant never reaches another tenant's data.

Ingest and formation run in this process with authentication on, against the session's redis-server
and nx-27017 and a fresh Milvus Lite file. The other tenant ("globex") is seeded first through the
public API and FormChain (events, window, chains, embeddings); then a valid credential of "acme" calls
every public RPC with globex's ids.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf import text_format
from pymongo import AsyncMongoClient
from redis.asyncio import Redis
from security_support import Services, StartServices

from athena import keys
from athena.internal.v1 import formation_pb2, task_pb2
from athena.queue import WINDOW_FLUSH
from athena.stm import ShortTermWindow
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2

pytestmark = pytest.mark.slow

SAILING = [
    ("user", "We want to charter a sailing yacht in Croatia in June. Is Split or Dubrovnik the better base?"),
    (
        "agent",
        "Split is more central: Hvar, Brac and Vis are each a short sail away, and the marinas there are well equipped.",
    ),
    ("user", "How many nights should we plan to sail from Split to Hvar and on to Vis?"),
    ("agent", "Plan seven nights: two on Hvar, two on Vis, and stops in the coves of Brac on the way back to Split."),
]
KUBERNETES = [
    ("user", "Our Kubernetes pods restart every few minutes with OOMKilled. How do I find out what uses the memory?"),
    (
        "agent",
        "Compare the container's memory limit with its working set in kubectl top pod, then profile the process inside.",
    ),
    ("user", "The working set grows until the limit. Should I raise the memory limit of the deployment?"),
    (
        "agent",
        "Raise it only after finding the leak; a heap profile of the process shows which allocations keep growing.",
    ),
]
# globex talks about sailing, acme about Kubernetes: any sailing word in an answer to acme is globex's data.
GLOBEX_WORDS = ("croatia", "hvar", "split", "dubrovnik", "yacht")

ACME = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="travel")
GLOBEX = memory_pb2.Scope(tenant_id="globex", user_id="bob", agent_id="travel")
GLOBEX_ALICE = memory_pb2.Scope(tenant_id="globex", user_id="alice", agent_id="travel")  # same user ids as acme's


@dataclass
class Seeded:
    services: Services
    acme: AsyncAthenaClient
    globex_chain_ids: list[str]
    globex_event_count: int


async def _form(services: Services, window: ShortTermWindow, scope: memory_pb2.Scope, seg_id: str) -> str:
    """Form the scope's window into a chain, as cognition would hand it to formation."""
    events = await window.read(scope)
    async with services.formation_channel() as channel:
        segment = formation_pb2.Segment(
            id=seg_id, scope=scope, events=events, reason=formation_pb2.CUT_REASON_TOPIC_BREAK
        )
        response = await services.formation_stub(channel).FormChain(
            formation_pb2.FormChainRequest(segment=segment), timeout=120
        )
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED, response
    return response.chain_id


async def _globex_events(services: Services) -> int:
    client: AsyncMongoClient[Any] = AsyncMongoClient(services.settings.mongodb_uri)
    try:
        return await client[services.settings.mongodb_database].cognitive_events.count_documents(
            {"tenant_id": "globex"}
        )
    finally:
        await client.close()


@pytest.fixture
async def seeded(start_services: StartServices, redis: Redis) -> Any:
    services = await start_services()
    window = ShortTermWindow(redis)
    async with services.client("globex") as globex:
        await globex.store_events(GLOBEX, [EventInput(r, t) for r, t in SAILING])
        await globex.store_events(GLOBEX_ALICE, [EventInput(r, t) for r, t in SAILING])
    chain_ids = [
        await _form(services, window, GLOBEX, "seg_globex_bob"),
        await _form(services, window, GLOBEX_ALICE, "seg_globex_alice"),
    ]
    acme = services.client("acme")
    await acme.store_events(ACME, [EventInput(r, t) for r, t in KUBERNETES])
    await _form(services, window, ACME, "seg_acme_alice")
    yield Seeded(services, acme, chain_ids, await _globex_events(services))
    await acme.close()


def _leaks(message: Any, chain_ids: list[str]) -> list[str]:
    """Globex data found in a response or error text."""
    text = (message if isinstance(message, str) else text_format.MessageToString(message)).lower()
    return [w for w in (*GLOBEX_WORDS, *chain_ids, "globex") if w.lower() in text]


def _calls(s: Seeded) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every public RPC, called by acme's credential with globex's ids."""
    stub, md, chain = s.acme._stub, s.acme.options.metadata, s.globex_chain_ids[0]
    event = memory_pb2.NewEvent(
        role=memory_pb2.ROLE_USER, type=memory_pb2.EVENT_TYPE_MESSAGE, content="let me in", event_id="intruder-1"
    )
    return {
        "StoreEvent": lambda: stub.StoreEvent(
            memory_pb2.StoreEventRequest(scope=GLOBEX, event=event), timeout=30, metadata=md
        ),
        "StoreEvents": lambda: stub.StoreEvents(
            memory_pb2.StoreEventsRequest(scope=GLOBEX, events=[event]), timeout=30, metadata=md
        ),
        "GetContext": lambda: stub.GetContext(
            memory_pb2.GetContextRequest(scope=GLOBEX, query="sailing in Croatia"), timeout=30, metadata=md
        ),
        "SearchMemory": lambda: stub.SearchMemory(
            memory_pb2.SearchMemoryRequest(scope=GLOBEX, query="sailing in Croatia", limit=5), timeout=30, metadata=md
        ),
        "GetChain": lambda: stub.GetChain(
            memory_pb2.GetChainRequest(scope=GLOBEX, chain_id=chain), timeout=30, metadata=md
        ),
        "ListChains": lambda: stub.ListChains(memory_pb2.ListChainsRequest(scope=GLOBEX), timeout=30, metadata=md),
        "ForgetUser": lambda: stub.ForgetUser(
            memory_pb2.ForgetUserRequest(tenant_id="globex", user_id="bob"), timeout=30, metadata=md
        ),
        "FlushWindow": lambda: stub.FlushWindow(memory_pb2.FlushWindowRequest(scope=GLOBEX), timeout=30, metadata=md),
        "DeleteChain": lambda: stub.DeleteChain(
            memory_pb2.DeleteChainRequest(scope=GLOBEX, chain_id=chain, delete_events=True), timeout=30, metadata=md
        ),
        "UpdateChain": lambda: stub.UpdateChain(
            memory_pb2.UpdateChainRequest(scope=GLOBEX, chain_id=chain, summary="overwritten"), timeout=30, metadata=md
        ),
        "GetChainEvents": lambda: stub.GetChainEvents(
            memory_pb2.GetChainEventsRequest(scope=GLOBEX, chain_id=chain), timeout=30, metadata=md
        ),
        "ListRejections": lambda: stub.ListRejections(
            memory_pb2.ListRejectionsRequest(scope=GLOBEX), timeout=30, metadata=md
        ),
        "AdmitRejection": lambda: stub.AdmitRejection(
            memory_pb2.AdmitRejectionRequest(scope=GLOBEX, segment_id="seg_globex_bob"), timeout=30, metadata=md
        ),
        "RestoreChain": lambda: stub.RestoreChain(
            memory_pb2.RestoreChainRequest(scope=GLOBEX, chain_id=chain), timeout=30, metadata=md
        ),
        "GetTaskResult": lambda: stub.GetTaskResult(
            memory_pb2.GetTaskResultRequest(scope=GLOBEX, task_id="task_0"), timeout=30, metadata=md
        ),
        "ExportUser": lambda: _drain(
            stub.ExportUser(memory_pb2.ExportUserRequest(tenant_id="globex", user_id="bob"), timeout=30, metadata=md)
        ),
    }


async def _drain(call: Any) -> list[Any]:
    """A server-streaming call's items (raises its error)."""
    return [item async for item in call]


async def test_every_public_rpc_refuses_another_tenants_ids_and_leaks_nothing(seeded: Seeded, redis: Redis) -> None:
    calls = _calls(seeded)
    methods = {m.name for m in memory_pb2.DESCRIPTOR.services_by_name["MemoryService"].methods}
    assert set(calls) == methods, "a public RPC is missing from this test"
    for name, call in calls.items():
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call()
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED, (
            f"{name}: {err.value.code()} {err.value.details()}"
        )
        assert not _leaks(err.value.details() or "", seeded.globex_chain_ids), f"{name} leaked {err.value.details()}"
        assert not _leaks(str(err.value.trailing_metadata()), seeded.globex_chain_ids), name
    # nothing of globex changed: no intruding event, nothing erased, no flush queued
    assert await _globex_events(seeded.services) == seeded.globex_event_count
    queued = await redis.lrange(
        keys.scope_queue_key(keys.scope_id(GLOBEX.tenant_id, GLOBEX.user_id, GLOBEX.agent_id)), 0, -1
    )
    assert not [raw for raw in queued if task_pb2.Task.FromString(raw).type == WINDOW_FLUSH]
    async with seeded.services.client("globex") as globex:
        assert len(await globex.get_context(GLOBEX)) == len(SAILING)
        assert {c.id for c in await globex.list_chains(GLOBEX)} == {seeded.globex_chain_ids[0]}


async def test_own_tenant_calls_with_the_other_tenants_user_and_chain_ids_see_only_their_own_data(
    seeded: Seeded,
) -> None:
    acme, chains = seeded.acme, seeded.globex_chain_ids
    # acme/alice and globex/alice share user and agent ids; the tenant from the credential keeps them apart
    window = await acme.get_context(ACME)
    assert len(window) == len(KUBERNETES) and not _leaks(
        "".join(text_format.MessageToString(e) for e in window), chains
    )
    context = await acme._stub.GetContext(
        memory_pb2.GetContextRequest(scope=ACME, query="sailing in Croatia", chain_limit=5),
        timeout=30,
        metadata=acme.options.metadata,
    )
    assert not _leaks(context, chains)
    hits = await acme.search_memory(ACME, "Where should we sail from Split in Croatia?", limit=10)
    assert all(h.chain.scope.tenant_id == "acme" for h in hits) and not _leaks(
        memory_pb2.SearchMemoryResponse(hits=hits), chains
    )
    # another tenant's chain id answers exactly as an id that never existed: no existence oracle
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await acme.get_chain(ACME, "ch_00000000000000000000000000000000")
    for chain_id in chains:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await acme.get_chain(ACME, chain_id)
        assert err.value.code() == unknown.value.code() == grpc.StatusCode.NOT_FOUND
        assert (err.value.details() or "").replace(chain_id, "ID") == (unknown.value.details() or "").replace(
            "ch_00000000000000000000000000000000", "ID"
        )
    own = await acme.list_chains(ACME)
    assert len(own) == 1 and own[0].scope.tenant_id == "acme" and not _leaks(own[0], chains)
    assert await acme.list_chains(memory_pb2.Scope(tenant_id="acme", user_id="bob", agent_id="travel")) == []
    # an empty tenant is the credential's: acme's forget of "bob" erases nothing of globex's bob
    receipt = await acme.forget_user("", "bob")
    assert (receipt.events, receipt.chains, receipt.embeddings) == (0, 0, 0)
    assert await _globex_events(seeded.services) == seeded.globex_event_count


async def test_an_empty_tenant_in_the_request_is_the_credentials_tenant(seeded: Seeded) -> None:
    acme = seeded.acme
    unnamed = memory_pb2.Scope(user_id="carol", agent_id="travel")
    stored = await acme.store_event(unnamed, EventInput("user", "Note for later: my seat preference is the aisle."))
    (event,) = await acme.get_context(memory_pb2.Scope(tenant_id="acme", user_id="carol", agent_id="travel"))
    assert event.id == stored.event_id and event.scope.tenant_id == "acme"
    async with seeded.services.client("globex") as globex:
        assert await globex.get_context(memory_pb2.Scope(user_id="carol", agent_id="travel")) == []
