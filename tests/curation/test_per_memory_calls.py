"""The per-memory calls of the public API against real servers (formation and ingest in this process,
the session's redis-server and nx-27017, a Milvus Lite file of their own): DeleteChain, UpdateChain,
GetChainEvents, ListRejections, AdmitRejection, RestoreChain, ExportUser. Chains are formed by calling
FormChain with the stored events, as cognition would hand them off."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from support.memories_stack import ALICE, BOB, KYOTO, TRAVEL, Memories

from athena.grpc_util import bad_request_violations
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2


def _code(exc: pytest.ExceptionInfo[grpc.aio.AioRpcError]) -> grpc.StatusCode:
    return exc.value.code()


# --- GetChainEvents ----------------------------------------------------------------------------------


async def test_get_chain_events_returns_the_chains_events_oldest_first_over_pages(memories: Memories) -> None:
    chain = await memories.client.get_chain(ALICE, memories.kyoto)
    events = await memories.client.get_chain_events(ALICE, memories.kyoto, page_size=3)
    assert [e.id for e in events] == list(chain.event_ids)
    assert [e.content for e in events] == [t for _, t in KYOTO]


async def test_get_chain_events_of_another_users_or_tenants_chain_is_not_found(memories: Memories) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as bob:
        await memories.client.get_chain_events(BOB, memories.kyoto)
    async with memories.stack.client("globex") as other:
        with pytest.raises(grpc.aio.AioRpcError) as tenant:
            await other.get_chain_events(AsyncAthenaClient.scope("globex", "alice", ""), memories.kyoto)
    assert _code(bob) == _code(tenant) == grpc.StatusCode.NOT_FOUND


# --- UpdateChain and the archiver -------------------------------------------------------------------


async def test_a_corrected_summary_is_kept_and_the_embedding_follows_it(memories: Memories) -> None:
    before = await memories.vector(memories.kyoto)
    corrected = "Alice's April trip: Kyoto temples, then she changed plans and goes to Osaka for street food."
    chain = await memories.client.update_chain(ALICE, memories.kyoto, summary=corrected)
    after = await memories.vector(memories.kyoto)
    assert chain.summary == corrected and list(chain.edited_fields) == ["summary"]
    assert before is not None and after is not None and float(np.dot(before, after)) < 0.9999
    assert (await memories.client.get_chain(ALICE, memories.kyoto)).summary == corrected
    hits = await memories.client.search_memory(ALICE, "Osaka street food", limit=1)
    assert hits and hits[0].chain.id == memories.kyoto


async def test_update_chain_names_the_field_of_a_bad_request(memories: Memories) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as nothing:
        await memories.client.update_chain(ALICE, memories.kyoto)
    with pytest.raises(grpc.aio.AioRpcError) as importance:
        await memories.client.update_chain(ALICE, memories.kyoto, importance=1.5)
    assert [f for f, _ in bad_request_violations(nothing.value)] == ["request"]
    assert [f for f, _ in bad_request_violations(importance.value)] == ["importance"]


async def test_update_chain_of_another_tenants_chain_is_not_found_and_changes_nothing(memories: Memories) -> None:
    async with memories.stack.client("globex") as other:
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await other.update_chain(AsyncAthenaClient.scope("globex", "alice", ""), memories.kyoto, pinned=True)
    assert _code(exc) == grpc.StatusCode.NOT_FOUND
    assert not (await memories.client.get_chain(ALICE, memories.kyoto)).pinned


async def _make_cold(memories: Memories, *chain_ids: str) -> None:
    """As if nobody had recalled the chains for a year."""
    long_ago = 1.0e9
    for chain_id in chain_ids:
        await memories.store.chains.update_one(
            {"_id": chain_id}, {"$set": {"last_accessed_at": long_ago, "created_at": long_ago}}
        )


async def test_a_pinned_chain_is_never_archived_and_an_unpinned_one_is(memories: Memories) -> None:
    pinned = await memories.client.update_chain(ALICE, memories.kyoto, pinned=True, importance=0.9)
    assert pinned.pinned and pinned.importance == pytest.approx(0.9)
    await _make_cold(memories, memories.kyoto, memories.webhook)
    archived = await memories.stack.formation.archiver.run_once()
    assert archived == [memories.webhook]
    assert (await memories.client.get_chain(ALICE, memories.kyoto)).status == memory_pb2.CHAIN_STATUS_ACTIVE
    assert await memories.vector(memories.kyoto) is not None

    await memories.client.update_chain(ALICE, memories.kyoto, pinned=False)
    await _make_cold(memories, memories.kyoto)
    assert await memories.stack.formation.archiver.run_once() == [memories.kyoto]


# --- RestoreChain ------------------------------------------------------------------------------------


async def test_an_archived_chain_is_restored_into_search_from_its_events(memories: Memories) -> None:
    await _make_cold(memories, memories.webhook)
    assert memories.webhook in await memories.stack.formation.archiver.run_once()
    assert await memories.vector(memories.webhook) is None
    query = "KeyError user_id in the webhook payload"
    assert memories.webhook not in [h.chain.id for h in await memories.client.search_memory(ALICE, query)]

    restored = await memories.client.restore_chain(ALICE, memories.webhook)
    assert restored.status == memory_pb2.CHAIN_STATUS_ACTIVE and restored.lifecycle != "archived"
    assert await memories.vector(memories.webhook) is not None
    hits = await memories.client.search_memory(ALICE, query, limit=1)
    assert hits[0].chain.id == memories.webhook
    again = await memories.client.restore_chain(ALICE, memories.webhook)  # idempotent
    assert again.status == memory_pb2.CHAIN_STATUS_ACTIVE


async def test_restore_chain_of_another_users_chain_is_not_found(memories: Memories) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as exc:
        await memories.client.restore_chain(BOB, memories.webhook)
    assert _code(exc) == grpc.StatusCode.NOT_FOUND


# --- ListRejections and AdmitRejection ----------------------------------------------------------------


async def test_rejections_are_listed_with_scores_and_reason_and_admitting_one_forms_a_chain(
    memories: Memories,
) -> None:
    (rejection,) = await memories.client.list_rejections(ALICE)
    assert rejection.segment_id == "seg_small_talk" and rejection.scope.agent_id == "coder"
    assert rejection.reason and 0.0 <= rejection.quality.overall < 1.0 and rejection.event_count == 2
    assert await memories.client.list_rejections(AsyncAthenaClient.scope("acme", "alice", "travel")) == []

    chain = await memories.client.admit_rejection(ALICE, "seg_small_talk")
    assert list(chain.event_ids) == list(rejection.event_ids)
    assert (await memories.client.get_chain(ALICE, chain.id)).status == memory_pb2.CHAIN_STATUS_ACTIVE
    events = await memories.stack.formation.store.event_log.docs(list(rejection.event_ids))
    assert {(d["formation"], d["chain_id"]) for d in events} == {("chained", chain.id)}
    assert (await memories.client.admit_rejection(ALICE, "seg_small_talk")).id == chain.id  # a repeat
    assert await memories.client.list_rejections(ALICE) == []


async def test_another_users_rejections_are_neither_listed_nor_admitted(memories: Memories) -> None:
    assert await memories.client.list_rejections(BOB) == []
    with pytest.raises(grpc.aio.AioRpcError) as exc:
        await memories.client.admit_rejection(BOB, "seg_small_talk")
    assert _code(exc) == grpc.StatusCode.NOT_FOUND


# --- DeleteChain -------------------------------------------------------------------------------------


async def test_a_deleted_chain_leaves_search_and_milvus_and_its_events_stay_in_the_log(memories: Memories) -> None:
    chain = await memories.client.get_chain(ALICE, memories.kyoto)
    receipt = await memories.client.delete_chain(ALICE, memories.kyoto)
    assert (receipt.chains, receipt.embeddings, receipt.events, receipt.events_deleted) == (1, 1, 4, False)
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await memories.client.get_chain(ALICE, memories.kyoto)
    assert _code(gone) == grpc.StatusCode.NOT_FOUND
    assert await memories.vector(memories.kyoto) is None
    hits = await memories.client.search_memory(ALICE, "Kyoto temples in April")
    assert memories.kyoto not in [h.chain.id for h in hits]
    events = await memories.store.event_log.docs(list(chain.event_ids))
    assert len(events) == 4 and {d["formation"] for d in events} == {"chain_deleted"}
    assert not any("chain_id" in d for d in events)
    with pytest.raises(grpc.aio.AioRpcError) as again:
        await memories.client.delete_chain(ALICE, memories.kyoto)
    assert _code(again) == grpc.StatusCode.NOT_FOUND


async def test_delete_chain_with_its_events_removes_them_from_the_log(memories: Memories) -> None:
    chain = await memories.client.get_chain(ALICE, memories.webhook)
    receipt = await memories.client.delete_chain(ALICE, memories.webhook, delete_events=True)
    assert receipt.events_deleted and receipt.events == 4
    assert await memories.store.event_log.docs(list(chain.event_ids)) == []


async def test_delete_chain_of_another_tenant_is_not_found_and_the_chain_stays(memories: Memories) -> None:
    async with memories.stack.client("globex") as other:
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await other.delete_chain(AsyncAthenaClient.scope("globex", "alice", ""), memories.kyoto)
    assert _code(exc) == grpc.StatusCode.NOT_FOUND
    assert await memories.vector(memories.kyoto) is not None


# --- ExportUser --------------------------------------------------------------------------------------


async def test_export_names_what_forget_user_then_erases_in_the_same_counts(memories: Memories) -> None:
    await memories.client.store_event(TRAVEL, EventInput("user", "Also, I'm allergic to peanuts."))
    items = [item async for item in memories.client.export_user("acme", "alice")]
    kinds = [item.WhichOneof("item") for item in items]
    summary = items[-1].summary
    assert kinds[-1] == "summary" and "summary" not in kinds[:-1]
    assert kinds.count("event") == summary.events == 11
    assert kinds.count("chain") == summary.chains == 2
    assert kinds.count("formation_record") == summary.formation_records == 3
    assert summary.embeddings == 2 and summary.window_events == 11
    assert {i.event.scope.user_id for i in items if i.HasField("event")} == {"alice"}

    receipt = await memories.client.forget_user("acme", "alice")
    assert (receipt.events, receipt.chains, receipt.formation_records, receipt.embeddings, receipt.window_events) == (
        summary.events,
        summary.chains,
        summary.formation_records,
        summary.embeddings,
        summary.window_events,
    )


async def test_export_of_another_tenants_user_is_refused(memories: Memories) -> None:
    async with memories.stack.client("globex") as other:
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            [item async for item in other.export_user("acme", "alice")]
    assert _code(exc) == grpc.StatusCode.PERMISSION_DENIED
