"""The three services as real processes: a conversation goes in through the public API, chains come out."""

from __future__ import annotations

import grpc
import pytest

from athena import keys
from athena.client import AthenaClient
from athena.grpc_util import bad_request_violations
from athena_cli.demo import wait_until_processed
from athena_cli.sample_conversation import SAMPLE_SCOPE, sample_conversation
from athena_cli.stack import LocalStack

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
async def processed(stack: LocalStack) -> dict:
    """Replays the sample conversation once and waits until every user message was decided."""
    scope = AthenaClient.scope(*SAMPLE_SCOPE)
    async with AthenaClient(stack.ingest_target) as client:
        responses = [await client.store_event(scope, turn) for turn in sample_conversation()]
    task_ids = [r.task_id for r in responses if r.task_id]
    results = await wait_until_processed(
        f"redis://127.0.0.1:{stack.ports.redis}/0", keys.scope_id(*SAMPLE_SCOPE), task_ids, timeout=240
    )
    return {"responses": responses, "task_ids": task_ids, "results": results}


async def test_every_user_message_is_decided_once(processed: dict) -> None:
    results = processed["results"]
    assert set(results) == set(processed["task_ids"])
    assert all(r["status"] == "done" for r in results.values())
    assert {r["path"] for r in results.values()} <= {"first_message", "workflow_skip", "high", "low", "llm_true", "llm_false", "llm_fallback", "force_flush", "not_in_window"}


async def test_topics_become_chains_small_talk_is_rejected_and_a_returning_topic_merges(processed: dict, stack: LocalStack) -> None:
    outcomes = [r.get("formation_outcome") for r in processed["results"].values() if r.get("segment_id")]
    assert outcomes.count("FORM_OUTCOME_CREATED") >= 2
    assert "FORM_OUTCOME_REJECTED" in outcomes
    assert "FORM_OUTCOME_MERGED" in outcomes
    async with AthenaClient(stack.ingest_target) as client:
        chains = await client.list_chains(AthenaClient.scope(*SAMPLE_SCOPE))
    assert len(chains) == outcomes.count("FORM_OUTCOME_CREATED")
    assert all(c.topic and c.summary and c.quality.overall >= 0.5 for c in chains)
    assert any(c.merge_count >= 1 for c in chains)


async def test_search_memory_through_the_public_api_finds_the_returning_topic(processed: dict, stack: LocalStack) -> None:
    async with AthenaClient(stack.ingest_target) as client:
        hits = await client.search_memory(AthenaClient.scope(*SAMPLE_SCOPE), "Which Kyoto temples need a reservation?", limit=3)
        assert hits and "kyoto" in (hits[0].chain.topic + hits[0].chain.summary).lower()
        chain = await client.get_chain(AthenaClient.scope(*SAMPLE_SCOPE), hits[0].chain.id)
        assert chain.id == hits[0].chain.id and chain.recall_count >= 1
        context = await client._stub.GetContext(
            __import__("athena.memory.v1.memory_pb2", fromlist=["x"]).GetContextRequest(
                scope=AthenaClient.scope(*SAMPLE_SCOPE), query="JR Pass for Kyoto and Nara", chain_limit=2
            ),
            timeout=30,
        )
        assert context.relevant_chains and context.events


async def test_bad_search_input_is_refused_by_ingest_with_the_field_named(stack: LocalStack) -> None:
    async with AthenaClient(stack.ingest_target) as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.search_memory(AthenaClient.scope("acme", "alice", "x"), "   ")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in bad_request_violations(err.value)] == ["query"]
