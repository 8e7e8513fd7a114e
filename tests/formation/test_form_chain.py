"""FormChain against the real MongoDB-wire server and Milvus Lite: create, reject, merge, idempotency, crash safety."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import numpy as np
import pytest
from support.formation_data import KYOTO, KYOTO_AGAIN, PYTHON_BUG, SMALL_TALK, make_segment, milvus_ids

from athena.errors import DependencyUnavailable
from athena.internal.v1 import formation_pb2
from athena_formation.forming.form_chain import chain_vector, key_phrases
from athena_formation.server import Formation
from athena_formation.store.chain_store import epoch


async def test_a_substantive_segment_becomes_a_chain_with_one_embedding(formation: Formation, stub) -> None:
    segment = make_segment(KYOTO)

    response = await stub.FormChain(formation_pb2.FormChainRequest(segment=segment), timeout=60)

    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED
    chain = await formation.store.get(response.chain_id)
    assert chain is not None and chain["status"] == "active" and chain["embedding_state"] == "indexed"
    assert chain["topic"] and chain["summary"] and chain["analysis_path"] == "heuristic"
    assert set(chain["quality"]) == {
        "coherence",
        "completeness",
        "relevance",
        "engagement",
        "cognitive_depth",
        "overall",
    }
    assert chain["event_ids"] == [e.id for e in segment.events]
    assert (chain["tenant_id"], chain["user_id"], chain["agent_id"]) == ("acme", "alice", "helper")
    assert await milvus_ids(formation) == {response.chain_id}
    events = await formation.store.event_log.docs(chain["event_ids"])
    assert (
        all(e.get("chain_id") == response.chain_id for e in events) or events == []
    )  # events are in the log only via ingest


async def test_a_retried_form_chain_returns_the_first_outcome_and_writes_nothing_new(
    formation: Formation, stub
) -> None:
    segment = make_segment(PYTHON_BUG)
    first = await stub.FormChain(formation_pb2.FormChainRequest(segment=segment), timeout=60)
    again = await stub.FormChain(formation_pb2.FormChainRequest(segment=segment), timeout=60)

    assert (again.outcome, again.chain_id) == (first.outcome, first.chain_id)
    assert await formation.store.chains.count_documents({}) == 1
    assert await milvus_ids(formation) == {first.chain_id}


async def test_small_talk_is_rejected_with_its_scores_and_reason_recorded(formation: Formation, stub) -> None:
    segment = make_segment(SMALL_TALK)

    response = await stub.FormChain(formation_pb2.FormChainRequest(segment=segment), timeout=60)

    assert response.outcome == formation_pb2.FORM_OUTCOME_REJECTED and response.reason
    assert await formation.store.chains.count_documents({}) == 0
    assert await milvus_ids(formation) == set()
    record = await formation.store.outcome(segment.id)
    assert record is not None and record["outcome"] == "rejected" and record["reason"] == response.reason
    assert 0.0 <= record["quality"]["overall"] < 1.0


async def test_a_returning_topic_merges_into_its_chain_and_another_topic_does_not(formation: Formation, stub) -> None:
    kyoto = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(KYOTO)), timeout=60)
    python = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(PYTHON_BUG)), timeout=60)
    before = await formation.store.get(kyoto.chain_id)
    vector_before = (await formation.vectors.vectors([kyoto.chain_id]))[kyoto.chain_id]

    again = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(KYOTO_AGAIN)), timeout=60)

    assert python.outcome == formation_pb2.FORM_OUTCOME_CREATED and python.chain_id != kyoto.chain_id
    assert again.outcome == formation_pb2.FORM_OUTCOME_MERGED and again.chain_id == kyoto.chain_id
    after = await formation.store.get(kyoto.chain_id)
    assert after["merge_count"] == 1 and after["event_count"] == 8 and len(after["event_ids"]) == 8
    assert {e["text"].lower() for e in before["entities"]} <= {e["text"].lower() for e in after["entities"]}
    assert after["summary"] != before["summary"]
    vector_after = (await formation.vectors.vectors([kyoto.chain_id]))[kyoto.chain_id]
    assert float((vector_before - vector_after) @ (vector_before - vector_after)) > 1e-6
    assert await milvus_ids(formation) == {kyoto.chain_id, python.chain_id}
    record = await formation.store.outcomes.find_one({"outcome": "merged"})
    assert record is not None and record["merge"]["confidence"] >= 0.7 and record["merge"]["similarity"] >= 0.6


@pytest.mark.parametrize(
    ("max_age_hours", "outcome"),
    [(None, formation_pb2.FORM_OUTCOME_MERGED), (72.0, formation_pb2.FORM_OUTCOME_CREATED)],
    ids=["the default year", "the seed's 72 hours"],
)
async def test_a_topic_returning_a_week_later_continues_its_chain_within_the_merge_window(
    formation: Formation, stub, max_age_hours: float | None, outcome: int
) -> None:
    if max_age_hours is not None:
        formation.former.settings = formation.former.settings.model_copy(
            update={"session_max_age_hours": max_age_hours}
        )
    a_week_ago = datetime.now(UTC) - timedelta(days=7)
    kyoto = await stub.FormChain(
        formation_pb2.FormChainRequest(segment=make_segment(KYOTO, start=a_week_ago)), timeout=60
    )

    again = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(KYOTO_AGAIN)), timeout=60)

    assert again.outcome == outcome
    assert (again.chain_id == kyoto.chain_id) == (outcome == formation_pb2.FORM_OUTCOME_MERGED)
    assert await formation.store.chains.count_documents({}) == (1 if again.chain_id == kyoto.chain_id else 2)


async def test_a_returning_topic_whose_chain_is_full_starts_a_new_chain_linked_to_it_and_warms_the_full_one(
    formation: Formation, stub
) -> None:
    formation.former.settings = formation.former.settings.model_copy(update={"session_merge_max_chain_events": 6})
    kyoto = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(KYOTO)), timeout=60)
    an_hour_ago = epoch(datetime.now(UTC) - timedelta(hours=1))
    await formation.store.set_fields(kyoto.chain_id, {"last_accessed_at": an_hour_ago})
    returning = make_segment(KYOTO_AGAIN)

    again = await stub.FormChain(formation_pb2.FormChainRequest(segment=returning), timeout=60)

    # 4 + 4 events would pass 6: the seed's gate still says "same topic", the chain is not grown.
    assert again.outcome == formation_pb2.FORM_OUTCOME_CREATED and again.chain_id != kyoto.chain_id
    record = await formation.store.outcome(returning.id)
    assert record is not None and record["merge"]["continues"] == kyoto.chain_id
    assert record["merge"]["confidence"] >= 0.7 and record["merge"]["similarity"] >= 0.6
    full = await formation.store.get(kyoto.chain_id)
    assert full["event_count"] == 4 and full["merge_count"] == 0 and full["last_accessed_at"] > an_hour_ago
    assert (await formation.store.get(again.chain_id))["continues_chain_id"] == kyoto.chain_id
    assert await milvus_ids(formation) == {kyoto.chain_id, again.chain_id}


def test_the_chain_embedding_weighs_a_long_turn_above_a_short_acknowledgement() -> None:
    long_turn, ack = np.array([1.0, 0.0]), np.array([0.0, 1.0])

    vector = chain_vector(np.stack([long_turn, ack]), event_words=[25, 1])

    assert vector @ long_turn > vector @ ack
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-6


def test_key_phrases_name_the_topic_and_entities_but_not_small_talk() -> None:
    assert (
        key_phrases(topic="trip to Kyoto", subtopics=["temples"], entities=["Kyoto", "Nara"])
        == "trip to Kyoto, temples, Kyoto, Nara"
    )
    assert key_phrases(topic="small talk", subtopics=[], entities=[]) == ""


@pytest.mark.parametrize("step", ["plan_recorded", "chain_written", "vector_written", "indexed", "events_marked"])
async def test_a_crash_between_writes_never_leaves_a_chain_and_its_embedding_apart(
    formation: Formation, stub, step: str
) -> None:
    segment = make_segment(KYOTO)

    async def crash(name: str) -> None:
        if name == step:
            raise DependencyUnavailable("injected", f"stopped after {step}")

    formation.former.step_hook = crash
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.FormChain(formation_pb2.FormChainRequest(segment=segment), timeout=60)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    # Whatever was written, nothing is searchable half-made: an indexed chain always has its embedding,
    # and every embedding belongs to a chain document.
    chains = [c async for c in formation.store.chains.find({})]
    in_milvus = await milvus_ids(formation)
    assert in_milvus <= {c["_id"] for c in chains}
    assert all(c["_id"] in in_milvus for c in chains if c["embedding_state"] == "indexed")

    formation.former.step_hook = None
    response = await stub.FormChain(formation_pb2.FormChainRequest(segment=segment), timeout=60)

    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED
    assert await formation.store.chains.count_documents({}) == 1
    assert await milvus_ids(formation) == {response.chain_id}
    assert (await formation.store.get(response.chain_id))["embedding_state"] == "indexed"


async def test_a_segment_without_events_is_refused_with_the_field_named(stub) -> None:
    from athena.grpc_util import bad_request_violations

    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.FormChain(formation_pb2.FormChainRequest(segment=formation_pb2.Segment(id="seg_x")), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "segment.events" in [f for f, _ in bad_request_violations(err.value)]
