"""The three services as real processes: a conversation goes in through the public API, chains come out."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from athena import keys
from athena.grpc_util import bad_request_violations
from athena_cli.demo import wait_until_processed
from athena_cli.sample_conversation import SAMPLE_SCOPE, sample_conversation
from athena_cli.stack import LocalStack
from athena_client import AsyncAthenaClient

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
async def processed(stack: LocalStack) -> dict:
    """Replays the sample conversation once and waits until every user message was decided."""
    scope = AsyncAthenaClient.scope(*SAMPLE_SCOPE)
    async with stack.client() as client:
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
    assert {r["path"] for r in results.values()} <= {
        "first_message",
        "workflow_skip",
        "high",
        "low",
        "llm_true",
        "llm_false",
        "llm_fallback",
        "force_flush",
        "agent_opened",
        "not_in_window",
    }


async def test_topics_become_chains_small_talk_is_rejected_and_a_returning_topic_merges(
    processed: dict, stack: LocalStack
) -> None:
    outcomes = [r.get("formation_outcome") for r in processed["results"].values() if r.get("segment_id")]
    assert outcomes.count("FORM_OUTCOME_CREATED") >= 2
    assert "FORM_OUTCOME_REJECTED" in outcomes
    assert "FORM_OUTCOME_MERGED" in outcomes
    async with stack.client() as client:
        chains = await client.list_chains(AsyncAthenaClient.scope(*SAMPLE_SCOPE))
    assert len(chains) == outcomes.count("FORM_OUTCOME_CREATED")
    assert all(c.topic and c.summary and c.quality.overall >= 0.5 for c in chains)
    assert any(c.merge_count >= 1 for c in chains)


async def test_search_memory_through_the_public_api_finds_the_returning_topic(
    processed: dict, stack: LocalStack
) -> None:
    async with stack.client() as client:
        hits = await client.search_memory(
            AsyncAthenaClient.scope(*SAMPLE_SCOPE), "Which Kyoto temples need a reservation?", limit=3
        )
        assert hits and "kyoto" in (hits[0].chain.topic + hits[0].chain.summary).lower()
        assert hits[0].chain.recall_count >= 1  # the answer carries the chain as this recall warmed it
        for _ in range(50):  # the warm-up itself is written just after the answer
            chain = await client.get_chain(AsyncAthenaClient.scope(*SAMPLE_SCOPE), hits[0].chain.id)
            if chain.recall_count >= 1:
                break
            await asyncio.sleep(0.1)
        assert chain.id == hits[0].chain.id and chain.recall_count >= 1
        context = await client.get_context(
            AsyncAthenaClient.scope(*SAMPLE_SCOPE), query="JR Pass for Kyoto and Nara", chain_limit=2
        )
        assert context.relevant_chains and context.events and len(context.relevant_chains) <= 2


async def test_search_finds_the_open_turns_beside_the_chains_cognition_formed_and_no_event_twice(
    processed: dict, stack: LocalStack
) -> None:
    from athena_client.memory.v1 import memory_pb2

    scope = AsyncAthenaClient.scope(*SAMPLE_SCOPE)
    async with stack.client() as client:
        window = await client.get_full_context(scope)
        chained = {e for c in await client.list_chains(scope) for e in c.event_ids}
        assert window, "the sample conversation ends with an open segment"
        hits = await client.search_memory(scope, window[0].content, limit=20)
    held = [e for h in hits for e in h.event_ids]
    assert len(held) == len(set(held))
    open_ids = {e for h in hits if h.source == memory_pb2.HIT_SOURCE_WINDOW for e in h.event_ids}
    assert window[0].id in open_ids and open_ids <= {e.id for e in window} and not open_ids & chained
    assert all(list(h.event_ids) == list(h.chain.event_ids) for h in hits)
    # every segment cognition cut was handed off: its entry left the scope's parked set with its hand-off key
    from redis.asyncio import Redis

    redis = Redis.from_url(stack.redis_url)
    try:
        assert [k async for k in redis.scan_iter(match=f"{keys.STM_PARKED_PREFIX}*")] == []
        assert [k async for k in redis.scan_iter(match=f"{keys.STM_HANDOFF_PREFIX}*")] == []
    finally:
        await redis.aclose()


async def test_bad_search_input_is_refused_by_ingest_with_the_field_named(stack: LocalStack) -> None:
    async with stack.client(tenant_id="acme") as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.search_memory(AsyncAthenaClient.scope("acme", "alice", "x"), "   ")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in bad_request_violations(err.value)] == ["query"]


def _scrape(port: int) -> dict[str, float]:
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def _total(samples: dict[str, float], prefix: str, **labels: str) -> float:
    return sum(
        v for k, v in samples.items() if k.startswith(prefix) and all(f'{lk}="{lv}"' in k for lk, lv in labels.items())
    )


async def test_every_service_exports_its_stage_metrics(processed: dict, stack: LocalStack) -> None:
    ingest = _scrape(stack.ports.ingest_metrics)
    cognition = _scrape(stack.ports.cognition_metrics)
    formation = _scrape(stack.ports.formation_metrics)

    user_messages = len(processed["task_ids"])
    assert _total(ingest, "memos_grpc_server_handled_total", grpc_method="StoreEvent", grpc_code="OK") >= len(
        processed["responses"]
    )
    assert _total(ingest, "memos_events_stored_total", role="user", type="message") >= user_messages
    assert _total(cognition, "memos_chain_break_decisions_total") >= user_messages
    assert _total(cognition, "memos_task_outcomes_total", outcome="done") >= user_messages
    assert _total(cognition, "memos_queue_wait_seconds_count") >= user_messages
    assert (
        'memos_queue_depth{state="ready"}' in cognition and cognition['memos_queue_depth{state="dead_lettered"}'] == 0
    )
    assert (
        _total(cognition, "memos_embedding_seconds_count") > 0
        and _total(cognition, "memos_embedding_cache_total", result="hit") > 0
    )
    assert _total(formation, "memos_formation_outcomes_total", outcome="created") >= 2
    assert _total(formation, "memos_formation_outcomes_total", outcome="rejected") >= 1
    assert _total(formation, "memos_grpc_server_handled_total", grpc_method="FormChain", grpc_code="OK") >= 3
    assert _total(formation, "memos_chain_heat_count") > 0
    assert not any(
        "alice" in k or "demo-tenant" in k for k in [*ingest, *cognition, *formation]
    )  # no user ids in labels


async def test_every_service_freezes_its_start_up_heap_and_times_its_collector_pauses(
    processed: dict, stack: LocalStack
) -> None:
    # Each process has imported its libraries and built its clients before serving; what it holds
    # then (tens of thousands of tracked objects in ingest, hundreds of thousands where torch and
    # transformers are loaded) must be out of the collector's full walks, and every collection since
    # is timed by generation.
    for service in ("ingest", "cognition", "formation"):
        assert stack.metric_total(service, "memos_gc_frozen_objects") > 50_000, service
        assert stack.metric_total(service, "memos_gc_pause_seconds_count", generation="0") > 0, service
