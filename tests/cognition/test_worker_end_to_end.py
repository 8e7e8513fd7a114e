"""The cognition worker as a real process: StoreEvent -> queue -> decision -> cut -> FormChain.

Formation is played by a small gRPC server implementing the FormationService contract, so the test
sees exactly which segments cognition hands off, and can hold a hand-off open while it kills the worker.
"""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from support.cognition_harness import KYOTO, PYTHON, SCOPE, SCOPE_ID, task_result

from athena import keys
from athena_client import AsyncAthenaClient, EventInput

pytestmark = pytest.mark.slow


async def test_a_topic_change_hands_the_finished_segment_to_formation(
    client: AsyncAthenaClient, formation, cognition, redis
) -> None:
    servicer, _ = formation
    cognition()
    for role, text in KYOTO:
        await client.store_event(SCOPE, EventInput(role, text))
    response = await client.store_event(SCOPE, EventInput(*PYTHON))

    result = await task_result(redis, response.task_id)

    assert result["decision"] == "break" and result["path"] in ("low", "llm_fallback")
    assert [len(s.events) for s in servicer.calls] == [4]
    assert [e.content for e in servicer.calls[0].events] == [t for _, t in KYOTO]
    assert result["segment_id"] == servicer.calls[0].id and result["formation_outcome"] == "FORM_OUTCOME_CREATED"
    assert [e.content for e in await client.get_context(SCOPE)] == [PYTHON[1]]


CHINESE_FACTS = [
    ("user", "我的生日是十月三日。"),
    ("agent", "好的，我记住了。"),
    ("user", "我的狗叫旺财，它三岁了。"),
    ("agent", "旺财是个好名字。"),
    ("user", "明天我要去北京出差。"),
]


async def test_facts_told_in_a_script_the_model_cannot_read_are_handed_off_one_topic_at_a_time(
    client: AsyncAthenaClient, formation, cognition, redis
) -> None:
    servicer, _ = formation
    cognition()
    responses = [await client.store_event(SCOPE, EventInput(role, text)) for role, text in CHINESE_FACTS]

    second, third = [await task_result(redis, responses[i].task_id) for i in (2, 4)]

    assert [(r["decision"], r["path"]) for r in (second, third)] == [("break", "unreadable")] * 2
    assert [[e.content for e in s.events] for s in servicer.calls] == [
        [t for _, t in CHINESE_FACTS[:2]],
        [t for _, t in CHINESE_FACTS[2:4]],
    ]


async def test_a_topic_break_shorter_than_the_minimum_chain_is_decided_but_not_cut(
    client: AsyncAthenaClient, formation, cognition, redis
) -> None:
    servicer, _ = formation
    cognition(STM_MIN_CHAIN_EVENTS="6")
    for role, text in KYOTO:
        await client.store_event(SCOPE, EventInput(role, text))
    response = await client.store_event(SCOPE, EventInput(*PYTHON))

    result = await task_result(redis, response.task_id)

    # The same break as without the minimum (test above), but 4 events are fewer than 6: they stay
    # in the window and join the next chain; nothing is handed to formation.
    assert result["decision"] == "break" and result["path"] in ("low", "llm_fallback")
    assert result["cut"] == "deferred" and "segment_id" not in result
    assert servicer.calls == []
    assert [e.content for e in await client.get_context(SCOPE)] == [*(t for _, t in KYOTO), PYTHON[1]]


async def test_a_force_flush_that_keeps_events_hands_off_the_older_part_and_leaves_the_newest_in_the_window(
    client: AsyncAthenaClient, formation, cognition, redis
) -> None:
    servicer, _ = formation
    # Every scored message continues (the seed's cosine, gate at 0, no opener), so only the force flush
    # cuts: at 6 events, keeping 2.
    cognition(
        STM_MAX_EVENTS_BEFORE_FLUSH="6",
        STM_FLUSH_KEEP_EVENTS="2",
        CHAIN_SCORER="pair_cosine",
        CHAIN_SIM_HIGH="0",
        CHAIN_SIM_LOW="0",
    )
    turns = [(role, f"{text} ({i})") for i in range(4) for role, text in KYOTO[:2]][:7]
    assert [role for role, _ in turns] == ["user", "agent"] * 3 + ["user"]
    responses = [await client.store_event(SCOPE, EventInput(role, text)) for role, text in turns]

    result = await task_result(redis, responses[-1].task_id)

    # The 7th event fills the window past 6: the cut falls before the user message nearest to keeping
    # 2 events (window indices 4 and 6 are as near: the earlier), so 4 events form a segment.
    assert (result["decision"], result["path"], result["segment_events"]) == ("break", "force_flush", 4)
    assert [[e.content for e in s.events] for s in servicer.calls] == [[t for _, t in turns[:4]]]
    assert [e.content for e in await client.get_context(SCOPE)] == [t for _, t in turns[4:]]


async def test_a_worker_killed_during_the_hand_off_leads_to_exactly_one_segment(
    client: AsyncAthenaClient, formation, cognition, redis
) -> None:
    servicer, _ = formation
    servicer.release.clear()  # formation holds every FormChain open
    first = cognition()
    for role, text in KYOTO:
        await client.store_event(SCOPE, EventInput(role, text))
    response = await client.store_event(SCOPE, EventInput(*PYTHON))
    await asyncio.wait_for(servicer.called.wait(), timeout=90)

    first.kill()  # SIGKILL in the middle of the hand-off: the segment is cut and parked, not acknowledged
    print(f"injected: SIGKILL of cognition pid {first.proc.pid} during FormChain of {servicer.calls[0].id}")
    servicer.release.set()
    cognition()
    result = await task_result(redis, response.task_id)

    segment_ids = {s.id for s in servicer.calls}
    print(f"counted: {len(servicer.calls)} FormChain calls, {len(segment_ids)} distinct segment(s)")
    assert len(servicer.calls) >= 2 and len(segment_ids) == 1
    assert result["segment_id"] in segment_ids
    assert [e.content for e in await client.get_context(SCOPE)] == [PYTHON[1]]  # cut exactly once
    assert await redis.keys(keys.STM_HANDOFF_PREFIX + "*") == []


async def test_sigterm_releases_the_task_in_flight_after_the_grace_and_exits_cleanly(
    client: AsyncAthenaClient, formation, cognition, redis
) -> None:
    servicer, _ = formation
    servicer.release.clear()
    worker = cognition(GRPC_SHUTDOWN_GRACE_SECONDS="2")
    for role, text in KYOTO:
        await client.store_event(SCOPE, EventInput(role, text))
    response = await client.store_event(SCOPE, EventInput(*PYTHON))
    await asyncio.wait_for(servicer.called.wait(), timeout=90)

    started = time.monotonic()
    worker.proc.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(worker.proc.wait, 30)
    print(f"injected: SIGTERM with a FormChain in flight; exited {code} after {time.monotonic() - started:.1f}s")

    assert code == 0
    assert await redis.get(keys.task_result_key(SCOPE_ID, response.task_id)) is None  # not acknowledged
    assert await redis.zcard(keys.QUEUE_LEASES) == 0  # released, not left to expire
    servicer.release.set()
    cognition()
    result = await task_result(redis, response.task_id)
    assert result["segment_id"] == servicer.calls[0].id and len({s.id for s in servicer.calls}) == 1
