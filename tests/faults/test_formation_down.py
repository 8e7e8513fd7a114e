"""Formation stopped while conversations continue: cognition backs off, nothing is lost, every segment forms once."""

from __future__ import annotations

import asyncio
import time

import pytest
from support.pipeline_ledger import (
    Acked,
    StackFactory,
    conversation,
    drive,
    log_matches,
    patient_options,
    read_ledger,
    wait_decided,
)

from athena import keys
from athena.errors import DependencyUnavailable
from athena.queue import FairQueue, NoBackoff, RetryPolicy, WorkerPool, chain_check_task
from athena_client import AsyncAthenaClient

TENANT = "faults-formation"
USERS = 3
OUTAGE_SECONDS = 10.0
BACKOFF_CAP = 2.0


@pytest.mark.slow
async def test_formation_down_cognition_backs_off_and_every_segment_forms_once_after_it_returns(
    fault_stack: StackFactory,
) -> None:
    with fault_stack(QUEUE_BACKOFF_MAX_SECONDS=str(BACKOFF_CAP)) as stack:
        talks = {f"user{i}": conversation(user_index=i, topics=4) for i in range(USERS)}
        half = {u: t[: len(t) // 2] for u, t in talks.items()}
        rest = {u: t[len(t) // 2 :] for u, t in talks.items()}
        acked: list[Acked] = []
        a, errors = await drive(stack, tenant_id=TENANT, conversations=half, pace=0.05, options=patient_options())
        acked += a

        failed_before = log_matches(stack, "cognition", r"failed \(attempt")
        stack.stop_service("formation")
        down_at = time.monotonic()
        # Conversations go on while formation is down: every topic break now needs a hand-off.
        a, e = await drive(stack, tenant_id=TENANT, conversations=rest, pace=0.1, options=patient_options())
        acked += a
        errors += e
        await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - down_at)))
        downtime = time.monotonic() - down_at
        failed_during = log_matches(stack, "cognition", r"failed \(attempt") - failed_before
        stack.start_service("formation")
        await asyncio.to_thread(stack.wait_serving, "formation")

        await wait_decided(f"redis://127.0.0.1:{stack.ports.redis}/0", acked, timeout=120)
        ledger = await read_ledger(stack, tenant_id=TENANT, acked=acked)

    scopes = len(talks)
    print(f"\ninjected: formation stopped for {downtime:.1f}s while {scopes} users sent {len(acked)} events")
    print(
        f"counted: {failed_during} failed chain-check attempts during the outage "
        f"({failed_during / scopes / downtime:.2f} per scope per second; backoff cap {BACKOFF_CAP}s)"
    )
    print("counted:", ledger.summary())
    assert not errors
    assert failed_during >= 1, "no hand-off was attempted during the outage: the test exercised nothing"
    # Backing off: one scope's failing head is retried after uniform(0, min(cap, base*2**n)) seconds,
    # on average well under two attempts per second; a tight loop would make hundreds.
    assert failed_during <= scopes * downtime * 2
    assert ledger.problems() == []


async def _run_until_settled(redis, handler, *, retry) -> dict:
    """One chain-check task through a real worker pool until it is done or dead-lettered; its result."""
    queue = FairQueue(redis, lease_seconds=5, retry=retry)
    scope = AsyncAthenaClient.scope("t", "u", "a")
    await queue.enqueue(chain_check_task(scope=scope, event_id="ev1"))
    pool = WorkerPool(queue, handler, count=1, claim_timeout=0.2, maintenance_interval=0.05)
    await pool.start()
    try:
        for _ in range(400):
            result = await queue.result(keys.scope_id("t", "u", "a"), "chk-ev1")
            if result and result["status"] in ("done", "dead_lettered"):
                return result
            await asyncio.sleep(0.05)
        raise AssertionError(f"task never settled: {result}")
    finally:
        await pool.stop(grace=0)


async def test_a_dependency_outage_gets_the_outage_budget_not_the_attempt_budget(redis) -> None:
    retry = RetryPolicy(max_attempts=3, max_outage_attempts=8, backoff=NoBackoff())
    seen: list[int] = []

    async def formation_down_six_times(task):
        seen.append(task.attempt)
        if task.attempt < 6:
            raise DependencyUnavailable("formation", "connection refused")
        return {"decision": "break"}

    result = await _run_until_settled(redis, formation_down_six_times, retry=retry)
    print(f"\ninjected: 6 DependencyUnavailable failures; counted attempts {seen}, outcome {result['status']}")
    assert result["status"] == "done" and seen == [0, 1, 2, 3, 4, 5, 6]

    await redis.flushdb()
    seen.clear()

    async def formation_never_returns(task):
        seen.append(task.attempt)
        raise DependencyUnavailable("formation", "connection refused")

    result = await _run_until_settled(redis, formation_never_returns, retry=retry)
    print(f"injected: an endless outage; counted {len(seen)} attempts, outcome {result['status']}")
    assert result["status"] == "dead_lettered" and len(seen) == 8

    await redis.flushdb()
    seen.clear()

    async def broken_task(task):
        seen.append(task.attempt)
        raise RuntimeError("a bug, not an outage")

    result = await _run_until_settled(redis, broken_task, retry=retry)
    print(f"injected: a failing task; counted {len(seen)} attempts, outcome {result['status']}")
    assert result["status"] == "dead_lettered" and len(seen) == 3
