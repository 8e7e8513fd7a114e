"""Conversations that stop are still formed: FlushWindow, the idle flush and time-gap cuts, with
cognition as real processes (tests/support/cognition_harness.py) embedding through the fake
OpenAI-compatible server, so a process starts in seconds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from support.cognition_harness import SCOPE, SCOPE_ID, RecordingFormation, task_result
from support.fake_openai import FakeOpenAI

from athena import keys
from athena.grpc_util import bad_request_violations
from athena.internal.v1 import formation_pb2
from athena_client import AsyncAthenaClient, EventInput

pytestmark = pytest.mark.slow

FACTS = [
    ("user", "Please remember for the recipes: I'm allergic to peanuts and to cashews."),
    ("agent", "Noted: no peanuts and no cashews in any recipe I suggest."),
    ("user", "For the recipes, please also remember my daughter Lucia dislikes cashews and peanuts too."),
    ("agent", "Understood: Lucia's recipes also go without peanuts and cashews."),
]


@pytest.fixture
def fake_env() -> Iterator[dict[str, str]]:
    with FakeOpenAI() as server:
        yield {
            "EMBEDDING_PROVIDER": "openai",
            "EMBEDDING_BASE_URL": server.base_url,
            "EMBEDDING_API_KEY": "test",
            "EMBEDDING_MODEL": "fake-embedding",
            "CHAIN_SCORER": "pair_cosine",
        }


def _handed_off(servicer: RecordingFormation) -> list[str]:
    """Contents of every event handed to formation, in hand-off order, each distinct segment once."""
    seen: dict[str, formation_pb2.Segment] = {}
    for segment in servicer.calls:
        seen.setdefault(segment.id, segment)
    return [e.content for segment in seen.values() for e in segment.events]


async def _until(condition, *, timeout: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.2)


async def test_flush_window_forms_the_window_after_the_tasks_queued_before_it_and_once(
    client: AsyncAthenaClient, formation, cognition, redis, fake_env: dict[str, str]
) -> None:
    servicer, _ = formation
    stored = [await client.store_event(SCOPE, EventInput(role, text)) for role, text in FACTS]
    flush = await client.flush_window(SCOPE)
    again = await client.flush_window(SCOPE)
    assert (flush.events, flush.duplicate) == (4, False) and flush.task_id
    assert (again.task_id, again.duplicate) == (flush.task_id, True)

    cognition(**fake_env)  # only now: the flush waits in the scope's queue behind the two checks
    result = await task_result(redis, flush.task_id, timeout=90)
    checks = [await task_result(redis, s.task_id, timeout=90) for s in stored if s.task_id]

    # Both checks decided on the window before the flush cut it (a check after it finds its event gone).
    assert [c["path"] for c in checks if c["path"] == "not_in_window"] == []
    assert (result["decision"], result["path"], result["trigger"]) == ("flush", "flush", "api")
    assert _handed_off(servicer) == [text for _, text in FACTS]
    assert servicer.calls[-1].reason == formation_pb2.CUT_REASON_FLUSH and result["segment_events"] == len(
        servicer.calls[-1].events
    )
    assert await client.get_context(SCOPE) == []
    empty = await client.flush_window(SCOPE)
    assert (empty.task_id, empty.events, empty.duplicate) == ("", 0, False)


async def test_flush_window_is_refused_for_another_tenant_and_names_a_bad_scope_field(
    client: AsyncAthenaClient,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.flush_window(AsyncAthenaClient.scope("globex", "alice", "helper"))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.flush_window(AsyncAthenaClient.scope("acme", "alice", ""))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in bad_request_violations(err.value)] == ["scope.agent_id"]


async def test_a_quiet_window_is_flushed_once_by_two_cognition_processes_across_a_restart(
    client: AsyncAthenaClient, formation, cognition, redis, fake_env: dict[str, str]
) -> None:
    servicer, _ = formation
    env = {**fake_env, "STM_IDLE_FLUSH_SECONDS": "2"}
    first, second = cognition(**env), cognition(**env)
    for role, text in FACTS:
        await client.store_event(SCOPE, EventInput(role, text))
    first.kill()
    second.kill()  # both gone before the window is quiet
    print(f"injected: SIGKILL of cognition pids {first.proc.pid} and {second.proc.pid} right after the conversation")
    await asyncio.sleep(2.5)
    cognition(**env), cognition(**env)

    await _until(lambda: len(_handed_off(servicer)) == len(FACTS))
    await asyncio.sleep(3.0)  # several more sweeps of both processes: nothing is flushed twice
    flushes = {s.id for s in servicer.calls if s.reason == formation_pb2.CUT_REASON_FLUSH}
    print(
        f"counted: {len(servicer.calls)} FormChain calls, {len({s.id for s in servicer.calls})} segments, {len(flushes)} flushed"
    )
    assert _handed_off(servicer) == [text for _, text in FACTS]
    assert len(flushes) == 1
    assert await redis.zscore(keys.STM_ACTIVITY, SCOPE_ID) is None
    assert await client.get_context(SCOPE) == []


@pytest.mark.parametrize(
    "today",
    [
        [FACTS[2]],  # the user comes back: the same topic, after 20 hours
        [("agent", "Good morning! Did the new plan work out?"), ("user", "It did, thanks.")],  # the agent does
    ],
    ids=["the user resumes", "the agent resumes"],
)
async def test_a_long_gap_closes_the_segment_before_it_and_the_first_event_after_it_opens_the_next(
    client: AsyncAthenaClient, formation, cognition, redis, fake_env: dict[str, str], today: list[tuple[str, str]]
) -> None:
    servicer, _ = formation
    yesterday = datetime.now(UTC) - timedelta(hours=20)
    for k, (role, text) in enumerate(FACTS[:2]):
        await client.store_event(SCOPE, EventInput(role, text, timestamp=yesterday + timedelta(seconds=30 * k)))
    stored = [await client.store_event(SCOPE, EventInput(role, text)) for role, text in today]

    cognition(**fake_env)
    result = await task_result(redis, stored[-1].task_id, timeout=90)

    assert (result["decision"], result["path"]) == ("break", "time_gap")
    assert [[e.content for e in s.events] for s in servicer.calls] == [[text for _, text in FACTS[:2]]]
    assert servicer.calls[0].reason == formation_pb2.CUT_REASON_TIME_GAP
    assert [e.content for e in await client.get_context(SCOPE)] == [text for _, text in today]
