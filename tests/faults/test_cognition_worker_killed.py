"""SIGKILL the cognition process in the middle of tasks, repeatedly, while several users talk."""

from __future__ import annotations

import asyncio
import time

import pytest
from redis.asyncio import Redis
from support.fake_openai import FakeOpenAI
from support.pipeline_ledger import Acked, StackFactory, conversation, drive, patient_options, read_ledger, wait_decided

from athena import keys
from athena.internal.v1 import task_pb2

pytestmark = pytest.mark.slow

TENANT = "faults-kill"
USERS = 3
KILLS = 3
EVENTS_PER_TOPIC = 4  # two user/agent exchanges


async def _in_flight(redis: Redis, *, timeout: float) -> list[str]:
    """Wait until cognition holds a lease or has parked a cut segment: the ids of the tasks in flight."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        scopes = [s.decode() for s in await redis.zrange(keys.QUEUE_LEASES, 0, -1)]
        handoffs = [k.decode() async for k in redis.scan_iter(match=f"{keys.STM_HANDOFF_PREFIX}*")]
        tasks = [k.rsplit(":", 1)[1] for k in handoffs]
        for scope in scopes:
            head = await redis.lindex(keys.scope_queue_key(scope), 0)
            if head is not None:
                task = task_pb2.Task()
                task.ParseFromString(head)
                tasks.append(task.id)
        if tasks:
            return sorted(set(tasks))
        await asyncio.sleep(0.01)
    return []


async def test_killing_cognition_mid_task_repeatedly_decides_every_message_once_and_loses_no_segment(
    fault_stack: StackFactory, fake_openai: FakeOpenAI
) -> None:
    # Each decision embeds: a slower embedding endpoint keeps every task in flight for a while, so
    # the kill lands in the middle of tasks on a fast machine too.
    fake_openai.embedding_delay = 0.05
    with fault_stack() as stack:
        redis_url = stack.redis_url
        redis = Redis.from_url(redis_url)
        talks = {f"user{i}": conversation(user_index=i, topics=KILLS + 1) for i in range(USERS)}
        acked: list[Acked] = []
        errors: list[BaseException] = []
        injected: list[str] = []
        interrupted: list[str] = []
        try:
            for round_ in range(KILLS + 1):
                chunk = {
                    u: turns[round_ * EVENTS_PER_TOPIC : (round_ + 1) * EVENTS_PER_TOPIC] for u, turns in talks.items()
                }
                sending = asyncio.create_task(
                    drive(stack, tenant_id=TENANT, conversations=chunk, pace=0.05, options=patient_options())
                )
                if round_ < KILLS:
                    tasks = await _in_flight(redis, timeout=30)
                    stack.kill_service("cognition")
                    interrupted += tasks
                    injected.append(
                        f"round {round_}: SIGKILL cognition with task(s) {', '.join(tasks) or 'none'} in flight"
                    )
                a, e = await sending
                acked += a
                errors += e
                if "cognition" not in stack.procs:
                    await asyncio.to_thread(stack.start_service, "cognition")
                    await asyncio.to_thread(stack.wait_serving, "cognition")
                    # The next kill must hit fresh work: first let the interrupted tasks run again.
                    await wait_decided(redis_url, [a for a in acked if a.task_id in interrupted], timeout=60)
            started = time.monotonic()
            await wait_decided(redis_url, acked, timeout=120)
            drained = time.monotonic() - started
            ledger = await read_ledger(stack, tenant_id=TENANT, acked=acked)
        finally:
            await redis.aclose()

    print("\ninjected:", *injected, sep="\n  ")
    print(f"store errors: {len(errors)}; every message decided {drained:.1f}s after the last one was acknowledged")
    print("counted:", ledger.summary())
    assert not errors
    assert len(injected) == KILLS and all("none in flight" not in i for i in injected)
    # Each interrupted task ran again to completion (its result is "done", asserted by problems()).
    assert all(ledger.results.get(t, {}).get("status") == "done" for t in interrupted)
    assert ledger.problems() == []
    assert ledger.outcomes, "no segment was cut: the test exercised nothing"
