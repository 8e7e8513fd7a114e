"""The fair work queue's guarantees, in one process, against a real Redis.

Each test names the behaviour it proves. Workers use short leases (1 s), short claim timeouts (0.2 s)
and a 0.1 s maintenance interval; tests poll with deadlines instead of sleeping fixed amounts.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from athena import keys
from athena.errors import PermanentTaskError
from athena.internal.v1 import task_pb2
from athena.queue import ExponentialFullJitter, FairQueue, NoBackoff, RetryPolicy, WorkerPool
from athena_client.memory.v1 import memory_pb2

LEASE = 1.0
FAST_RETRY = RetryPolicy(backoff=ExponentialFullJitter(base=0.02, cap=0.05))


# --- helpers -------------------------------------------------------------------------------------
def scope_of(user: str) -> str:
    return keys.scope_id("acme", user, "agent")


def make_task(user: str, task_id: str) -> task_pb2.Task:
    return task_pb2.Task(
        id=task_id,
        type="test",
        scope=memory_pb2.Scope(tenant_id="acme", user_id=user, agent_id="agent"),
    )


async def wait_until(predicate: Callable[[], Any], *, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll `predicate` (sync or async) until it is truthy, or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


async def server_ms(redis: Redis) -> int:
    sec, usec = await redis.time()
    return int(sec) * 1000 + int(usec) // 1000


@asynccontextmanager
async def running_pool(
    queue: FairQueue, handler: Callable[[task_pb2.Task], Awaitable[Mapping[str, Any]]], **options: Any
) -> AsyncIterator[WorkerPool]:
    options = {"count": 1, "claim_timeout": 0.2, "maintenance_interval": 0.1, **options}
    pool = WorkerPool(queue, handler, **options)
    await pool.start()
    try:
        yield pool
    finally:
        await pool.stop(grace=0)


class Ceiling(random.Random):
    """A "jitter" that always picks the top of its range, so a test knows the exact backoff."""

    def uniform(self, a: float, b: float) -> float:
        return b


async def dispatcher(redis: Redis) -> list[str]:
    return [s.decode() for s in await redis.lrange(keys.DISPATCHER, 0, -1)]


async def queued_ids(redis: Redis, user: str) -> list[str]:
    out = []
    for raw in await redis.lrange(keys.scope_queue_key(scope_of(user)), 0, -1):
        t = task_pb2.Task()
        t.ParseFromString(raw)
        out.append(t.id)
    return out


async def is_done(queue: FairQueue, user: str, task_id: str) -> bool:
    result = await queue.result(scope_of(user), task_id)
    return result is not None and result["status"] == "done"


async def dead_letter_count(redis: Redis, n: int) -> bool:
    return await redis.llen(keys.QUEUE_DEAD_LETTERS) == n


async def head_of(redis: Redis, user: str) -> task_pb2.Task:
    t = task_pb2.Task()
    t.ParseFromString(await redis.lindex(keys.scope_queue_key(scope_of(user)), 0))
    return t


# --- fairness ------------------------------------------------------------------------------------
async def test_a_scope_with_1000_tasks_does_not_starve_ten_scopes_with_one_task_each(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    async with redis.pipeline(transaction=False) as pipe:
        for i in range(1000):
            await queue.enqueue(make_task("heavy", f"heavy-{i}"), client=pipe)
        for u in range(10):
            await queue.enqueue(make_task(f"light{u}", f"light-{u}"), client=pipe)
        await pipe.execute()
    assert await redis.llen(keys.scope_queue_key(scope_of("heavy"))) == 1000

    order: list[str] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        order.append(task.id)
        return {}

    async with running_pool(queue, handler, count=1):
        await wait_until(lambda: all(f"light-{u}" in order for u in range(10)), what="the ten single tasks")

    positions = sorted(order.index(f"light-{u}") for u in range(10))
    assert positions[-1] < 20, f"single tasks ran at claims {positions}: starved behind the heavy scope"
    # round robin: the heavy scope got one turn, then each light scope one turn
    assert order[:11] == ["heavy-0"] + [f"light-{u}" for u in range(10)]
    heavy = [t for t in order if t.startswith("heavy-")]
    assert heavy == [f"heavy-{i}" for i in range(len(heavy))]


async def test_scopes_are_served_round_robin_one_task_per_turn(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    for user, n in (("a", 3), ("b", 2), ("c", 1)):
        for i in range(1, n + 1):
            await queue.enqueue(make_task(user, f"{user.upper()}{i}"))

    served = []
    while (lease := await queue.claim("w", timeout=0.1)) is not None:
        served.append(lease.task.id)
        assert await queue.ack(lease, {})
    assert served == ["A1", "B1", "C1", "A2", "B2", "A3"]


async def test_ack_and_claim_serves_scopes_round_robin_like_separate_ack_and_claim(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    for user, n in (("a", 3), ("b", 2), ("c", 1)):
        for i in range(1, n + 1):
            await queue.enqueue(make_task(user, f"{user.upper()}{i}"))

    lease = await queue.claim("w", timeout=0.1)
    served = []
    while lease is not None:
        served.append(lease.task.id)
        acked, lease = await queue.ack_and_claim(lease, {"n": len(served)})
        assert acked
    assert served == ["A1", "B1", "C1", "A2", "B2", "A3"]
    assert await is_done(queue, "a", "A3") and await dispatcher(redis) == []
    assert await redis.zcard(keys.QUEUE_LEASES) == 0


async def test_a_ready_claim_skips_a_leased_scope_and_an_empty_scope_on_the_dispatcher(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    await queue.enqueue(make_task("a", "a1"))
    held = await queue.claim("w1", timeout=0.1)
    assert held is not None
    # A stale dispatcher entry of the leased scope and one of a scope without work (as after a reap race).
    await redis.rpush(keys.DISPATCHER, scope_of("a"), scope_of("nobody"))
    await queue.enqueue(make_task("b", "b1"))

    lease = await queue.claim("w2", timeout=0.1)

    assert lease is not None and lease.task.id == "b1"
    assert await dispatcher(redis) == []
    assert await redis.get(keys.lease_key(scope_of("a"))) == held.token.encode(), "the held lease was touched"


# --- order and exclusivity -------------------------------------------------------------------------
async def test_a_leased_scope_is_invisible_to_other_workers(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    await queue.enqueue(make_task("a", "a1"))
    await queue.enqueue(make_task("a", "a2"))

    first = await queue.claim("w1", timeout=0.1)
    assert first is not None and first.task.id == "a1"
    assert await queue.claim("w2", timeout=0.2) is None, "a second worker got a scope that is leased"

    assert await queue.ack(first, {})
    second = await queue.claim("w2", timeout=0.1)
    assert second is not None and second.task.id == "a2"


async def test_tasks_of_one_scope_never_overlap_and_run_in_fifo_order_while_scopes_run_in_parallel(
    redis: Redis,
) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    users = [f"u{i}" for i in range(6)]
    expected = {scope_of(u): [f"{u}-{i}" for i in range(5)] for u in users}
    for i in range(5):
        for u in users:
            await queue.enqueue(make_task(u, f"{u}-{i}"))

    events: list[tuple[str, str, str]] = []  # (start|end, scope, task id), in the order they happened
    rng = random.Random(1)

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        scope = keys.scope_id(task.scope.tenant_id, task.scope.user_id, task.scope.agent_id)
        events.append(("start", scope, task.id))
        await asyncio.sleep(rng.uniform(0.005, 0.03))
        events.append(("end", scope, task.id))
        return {}

    async with running_pool(queue, handler, count=4):
        await wait_until(lambda: sum(e[0] == "end" for e in events) == 30, what="all 30 tasks")

    for scope, ids in expected.items():
        mine = [(kind, tid) for kind, s, tid in events if s == scope]
        # strictly start, end, start, end... in enqueue order: no overlap, FIFO, each once
        assert mine == [(kind, tid) for tid in ids for kind in ("start", "end")], f"{scope}: {mine}"

    running, most = 0, 0
    for kind, _, _ in events:
        running += 1 if kind == "start" else -1
        most = max(most, running)
    assert most >= 2, "different scopes never ran in parallel"


# --- idempotent enqueue and results ----------------------------------------------------------------
async def test_enqueueing_the_same_task_id_twice_queues_it_once(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    assert await queue.enqueue(make_task("a", "same")) is True
    assert await queue.enqueue(make_task("a", "same")) is False

    assert await queued_ids(redis, "a") == ["same"]
    assert await dispatcher(redis) == [scope_of("a")]

    runs: list[str] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        runs.append(task.id)
        return {}

    async with running_pool(queue, handler):
        await wait_until(lambda: is_done(queue, "a", "same"), what="the result")
    assert runs == ["same"]
    assert await queue.enqueue(make_task("a", "same")) is False, "a finished task id was queued again"


async def test_result_is_stored_under_task_results_key_with_a_one_hour_ttl(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    await queue.enqueue(make_task("a", "t1"))

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        return {"chain_break": False}

    async with running_pool(queue, handler):
        await wait_until(lambda: is_done(queue, "a", "t1"), what="the result")

    key = "task_results:v1:acme:a:agent:t1"
    assert key == keys.task_result_key(scope_of("a"), "t1")
    assert await redis.exists(key)
    ttl = await redis.ttl(key)
    assert 3590 < ttl <= 3600
    assert await queue.result(scope_of("a"), "t1") == {"task_id": "t1", "status": "done", "chain_break": False}


# --- leases ----------------------------------------------------------------------------------------
async def test_an_expired_lease_is_reaped_and_the_old_holders_late_ack_is_rejected(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=0.2)
    await queue.enqueue(make_task("a", "a1"))
    await queue.enqueue(make_task("a", "a2"))
    stale = await queue.claim("w1", timeout=0.1)
    assert stale is not None and stale.deliveries == 1

    # w1 stops renewing (it hung or died): once the lease expires the reaper requeues the scope
    async def reaped() -> bool:
        await queue.reap()
        return await dispatcher(redis) == [scope_of("a")]

    await wait_until(reaped, timeout=5, what="the reaper to requeue the scope")
    fresh = await queue.claim("w2", timeout=0.1)
    assert fresh is not None and fresh.task.id == "a1", "the same head task must run again"
    assert fresh.deliveries == 2

    assert await queue.extend(stale) is False
    assert await queue.ack(stale, {}) is False, "a late ack from the old holder was accepted"
    assert await queued_ids(redis, "a") == ["a1", "a2"], "the fenced ack removed a task"
    assert await queue.ack(fresh, {}) is True
    assert await queued_ids(redis, "a") == ["a2"]


async def test_extending_a_lease_keeps_the_reaper_away(redis: Redis) -> None:
    # A lease long enough that a busy machine's stall between two renewals does not outlast it.
    queue = FairQueue(redis, lease_seconds=1.0)
    await queue.enqueue(make_task("a", "a1"))
    lease = await queue.claim("w1", timeout=0.1)
    assert lease is not None

    end = time.monotonic() + 3.0  # three lease lengths
    while time.monotonic() < end:
        assert await queue.extend(lease)
        await queue.reap()
        assert await dispatcher(redis) == [], "a renewed lease was reaped"
        await asyncio.sleep(0.2)
    assert await queue.ack(lease, {})


async def test_a_claim_interrupted_between_blmove_and_the_claim_script_does_not_strand_the_scope(
    redis: Redis,
) -> None:
    """Redis drops the connection after BLMOVE moved the scope into the worker's claiming list. The
    worker lives on, so the reaper (which only recovers dead workers' lists) would never free it."""
    queue = FairQueue(redis, lease_seconds=LEASE)
    real_claim_script = queue._claim
    calls = 0

    async def drops_first_call(**kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RedisConnectionError("Connection closed by server.")
        return await real_claim_script(**kwargs)

    queue._claim = drops_first_call  # type: ignore[method-assign]
    # The worker is idle and blocks in BLMOVE (a ready scope would be claimed in one script instead).
    waiting = asyncio.create_task(queue.claim("w1", timeout=10))

    async def blocked_in_blmove() -> bool:
        return any(c.get("cmd") == "blmove" for c in await redis.client_list())

    await wait_until(blocked_in_blmove, what="the worker blocking in BLMOVE")
    await queue.enqueue(make_task("a", "a1"))

    try:
        await waiting
        raise AssertionError("the injected connection error did not surface")
    except RedisConnectionError:
        pass
    assert await dispatcher(redis) == []
    assert await redis.lrange(keys.claiming_key("w1"), 0, -1) == [scope_of("a").encode()]

    lease = await queue.claim("w1", timeout=0.1)
    assert lease is not None and lease.task.id == "a1", "the scope stayed stranded in the claiming list"
    assert await redis.llen(keys.claiming_key("w1")) == 0
    assert await queue.ack(lease, {})


# --- retries ---------------------------------------------------------------------------------------
def test_full_jitter_backoff_stays_between_zero_and_the_capped_exponential() -> None:
    backoff = ExponentialFullJitter(base=0.5, cap=4.0, rng=random.Random(42))
    for failures, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 4.0), (12, 4.0)]:
        delays = [backoff.compute(failures) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in delays), (failures, max(delays))
        assert max(delays) > 0.8 * ceiling and min(delays) < 0.2 * ceiling, "not spread over the full range"
    assert RetryPolicy().max_attempts == 3


async def test_a_failed_task_waits_in_the_delayed_set_until_its_backoff_is_due(redis: Redis) -> None:
    cap = 0.4
    queue = FairQueue(redis, lease_seconds=LEASE, retry=RetryPolicy(backoff=ExponentialFullJitter(base=cap, cap=cap)))
    await queue.enqueue(make_task("a", "a1"))
    lease = await queue.claim("w1", timeout=0.1)
    assert lease is not None

    before = await server_ms(redis)
    assert (await queue.fail(lease, "RuntimeError: boom")).value == "retry_scheduled"
    after = await server_ms(redis)

    due = await redis.zscore(keys.QUEUE_DELAYED, scope_of("a"))
    assert due is not None and before <= due <= after + cap * 1000
    head = await head_of(redis, "a")
    assert (head.id, head.attempt, head.last_error) == ("a1", 1, "RuntimeError: boom")
    assert await redis.exists(keys.lease_key(scope_of("a"))) == 0
    assert await queue.claim("w1", timeout=0.1) is None, "the retry was not delayed"

    while True:
        t0 = await server_ms(redis)
        moved = await queue.promote_due()
        t1 = await server_ms(redis)
        if moved:
            assert t1 >= due, "promoted before its due time"
            break
        assert t0 < due, "not promoted although due"
        await asyncio.sleep(0.01)
    retry = await queue.claim("w1", timeout=0.1)
    assert retry is not None and retry.task.id == "a1" and retry.task.attempt == 1


async def test_a_retry_runs_after_its_backoff_delay_not_immediately(redis: Redis) -> None:
    delay = 0.4
    retry = RetryPolicy(backoff=ExponentialFullJitter(base=delay, cap=delay, rng=Ceiling()))
    queue = FairQueue(redis, lease_seconds=LEASE, retry=retry)
    await queue.enqueue(make_task("a", "a1"))
    attempts: list[tuple[int, float, str]] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        attempts.append((task.attempt, time.time(), task.last_error))
        if task.attempt == 0:
            raise RuntimeError("dependency down")
        return {}

    async with running_pool(queue, handler):
        await wait_until(lambda: len(attempts) == 2, what="the retry")

    (first, failed_at, _), (second, retried_at, last_error) = attempts
    assert (first, second) == (0, 1)
    assert last_error == "RuntimeError: dependency down"
    assert retried_at - failed_at >= delay - 0.005, f"retried after {retried_at - failed_at:.3f}s"
    assert retried_at - failed_at < delay + 1.0


async def test_a_failing_task_is_attempted_three_times_by_default_then_dead_lettered_with_its_last_error(
    redis: Redis,
) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE, retry=FAST_RETRY)
    assert queue.retry.max_attempts == 3
    await queue.enqueue(make_task("a", "doomed"))
    attempts: list[int] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        attempts.append(task.attempt)
        raise RuntimeError(f"boom on attempt {task.attempt + 1}")

    async with running_pool(queue, handler):
        await wait_until(lambda: redis.llen(keys.QUEUE_DEAD_LETTERS), what="the dead letter")
        await asyncio.sleep(0.3)  # any further (wrong) retry would show up here

    assert attempts == [0, 1, 2]
    [dead] = await queue.dead_letters()
    assert (dead.id, dead.attempt, dead.last_error) == ("doomed", 3, "RuntimeError: boom on attempt 3")
    assert await queued_ids(redis, "a") == []
    assert await redis.zcard(keys.QUEUE_DELAYED) == 0
    result = await queue.result(scope_of("a"), "doomed")
    assert result is not None and result["status"] == "dead_lettered" and result["attempt"] == 3


async def test_max_attempts_is_configurable(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE, retry=RetryPolicy(max_attempts=5, backoff=NoBackoff()))
    await queue.enqueue(make_task("a", "doomed"))
    attempts: list[int] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        attempts.append(task.attempt)
        raise RuntimeError("boom")

    async with running_pool(queue, handler):
        await wait_until(lambda: redis.llen(keys.QUEUE_DEAD_LETTERS), what="the dead letter")

    assert attempts == [0, 1, 2, 3, 4]
    [dead] = await queue.dead_letters()
    assert dead.attempt == 5


async def test_a_failing_head_blocks_its_scope_in_order_while_other_scopes_flow(redis: Redis) -> None:
    delay = 0.25
    retry = RetryPolicy(max_attempts=3, backoff=ExponentialFullJitter(base=delay, cap=delay, rng=Ceiling()))
    queue = FairQueue(redis, lease_seconds=LEASE, retry=retry)
    for i in (1, 2, 3):
        await queue.enqueue(make_task("a", f"a{i}"))
    for i in (1, 2, 3):
        await queue.enqueue(make_task("b", f"b{i}"))
    log: list[tuple[str, str, int]] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        log.append(("start", task.id, task.attempt))
        if task.id == "a1" and task.attempt < 2:
            raise RuntimeError("flaky")
        log.append(("end", task.id, task.attempt))
        return {}

    async with running_pool(queue, handler, count=2):
        await wait_until(lambda: sum(e[0] == "end" for e in log) == 6, what="all six tasks")

    a_starts = [(tid, attempt) for kind, tid, attempt in log if kind == "start" and tid.startswith("a")]
    assert a_starts == [("a1", 0), ("a1", 1), ("a1", 2), ("a2", 0), ("a3", 0)], "the scope ran out of order"
    b_done = max(i for i, e in enumerate(log) if e[0] == "end" and e[1].startswith("b"))
    first_retry = log.index(("start", "a1", 1))
    assert b_done < first_retry, "the other scope waited for the failing one's backoff"


async def test_a_permanent_task_error_is_dead_lettered_at_once(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE, retry=FAST_RETRY)
    await queue.enqueue(make_task("a", "bad"))
    await queue.enqueue(make_task("a", "good"))
    runs: list[tuple[str, int]] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        runs.append((task.id, task.attempt))
        if task.id == "bad":
            raise PermanentTaskError("event no longer exists")
        return {}

    async with running_pool(queue, handler):
        await wait_until(lambda: is_done(queue, "a", "good"), what="the next task of the scope")

    assert runs == [("bad", 0), ("good", 0)]
    [dead] = await queue.dead_letters()
    assert dead.id == "bad" and dead.attempt == 1
    assert dead.last_error == "PermanentTaskError: event no longer exists"


# --- dead letters ----------------------------------------------------------------------------------
async def test_dead_letters_are_listed_and_replayed_with_attempt_zero_then_run(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE, retry=FAST_RETRY)
    await queue.enqueue(make_task("a", "d1"))
    await queue.enqueue(make_task("b", "d2"))
    broken = True
    runs: list[tuple[str, int]] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        runs.append((task.id, task.attempt))
        if broken:
            raise PermanentTaskError("formation rejected the segment")
        return {"ok": True}

    async with running_pool(queue, handler):
        await wait_until(lambda: dead_letter_count(redis, 2), what="both dead letters")

        dead = await queue.dead_letters()
        assert sorted(t.id for t in dead) == ["d1", "d2"]
        assert all(t.attempt == 1 and "formation rejected" in t.last_error for t in dead)
        assert (await queue.depth()).dead_lettered == 2

        broken = False
        runs.clear()
        assert await queue.replay_dead_letters(task_ids={"d1"}) == 1
        await wait_until(lambda: ("d1", 0) in runs, what="d1 to run again")
        assert [t.id for t in await queue.dead_letters()] == ["d2"]
        assert await queue.replay_dead_letters() == 1
        await wait_until(lambda: ("d2", 0) in runs, what="d2 to run again")

    assert sorted(runs) == [("d1", 0), ("d2", 0)], "replayed tasks must start over at attempt 0, once"
    assert await queue.dead_letters() == []
    for user, tid in (("a", "d1"), ("b", "d2")):
        assert await queue.result(scope_of(user), tid) == {"task_id": tid, "status": "done", "ok": True}


async def test_replaying_dead_letters_twice_does_not_duplicate_them(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    for user in ("a", "b"):
        await queue.enqueue(make_task(user, f"{user}-dead"))
        lease = await queue.claim("w", timeout=0.1)
        assert lease is not None
        assert (await queue.fail(lease, "PermanentTaskError: no", retryable=False)).value == "dead_lettered"
    assert await dispatcher(redis) == []

    replayed = await asyncio.gather(queue.replay_dead_letters(), queue.replay_dead_letters())
    assert sum(replayed) == 2
    assert await queue.replay_dead_letters() == 0

    assert await queue.dead_letters() == []
    assert await queued_ids(redis, "a") == ["a-dead"]
    assert await queued_ids(redis, "b") == ["b-dead"]
    assert sorted(await dispatcher(redis)) == [scope_of("a"), scope_of("b")]
    assert (await head_of(redis, "a")).attempt == 0


# --- graceful stop and timeouts --------------------------------------------------------------------
async def test_stop_lets_an_in_flight_task_finish_within_the_grace(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    await queue.enqueue(make_task("a", "a1"))
    log: list[str] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        log.append("start")
        await asyncio.sleep(0.3)
        log.append("end")
        return {}

    pool = WorkerPool(queue, handler, count=1, claim_timeout=0.2, maintenance_interval=0.1)
    await pool.start()
    await wait_until(lambda: log == ["start"], what="the task to start")
    t0 = time.monotonic()
    await pool.stop(grace=3.0)

    assert log == ["start", "end"]
    assert time.monotonic() - t0 < 2.0
    assert (await queue.result(scope_of("a"), "a1") or {}).get("status") == "done"
    assert await queued_ids(redis, "a") == []
    assert await redis.llen(keys.claiming_key(pool.worker_ids[0])) == 0
    assert await redis.zscore(keys.QUEUE_WORKERS, pool.worker_ids[0]) is None


async def test_stop_releases_a_task_that_overruns_the_grace_without_counting_an_attempt(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    await queue.enqueue(make_task("a", "long"))
    log: list[tuple[str, int]] = []

    async def slow(task: task_pb2.Task) -> Mapping[str, Any]:
        log.append(("start", task.attempt))
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append(("cancelled", task.attempt))
            raise
        return {}

    pool = WorkerPool(queue, slow, count=1, claim_timeout=0.2, maintenance_interval=0.1)
    await pool.start()
    await wait_until(lambda: log == [("start", 0)], what="the task to start")
    t0 = time.monotonic()
    await pool.stop(grace=0.3)
    assert 0.25 <= time.monotonic() - t0 < 1.5
    assert log == [("start", 0), ("cancelled", 0)]

    # given back as it was: first on the dispatcher, attempt not counted, no backoff, no result
    assert await dispatcher(redis) == [scope_of("a")]
    head = await head_of(redis, "a")
    assert (head.id, head.attempt, head.last_error) == ("long", 0, "")
    assert await redis.exists(keys.lease_key(scope_of("a"))) == 0
    assert await redis.zcard(keys.QUEUE_LEASES) == 0
    assert await redis.zcard(keys.QUEUE_DELAYED) == 0
    assert await queue.result(scope_of("a"), "long") is None

    async def quick(task: task_pb2.Task) -> Mapping[str, Any]:
        log.append(("rerun", task.attempt))
        return {}

    async with running_pool(queue, quick):
        await wait_until(lambda: is_done(queue, "a", "long"), what="the rerun")
    assert log[-1] == ("rerun", 0)


async def test_a_scope_claimed_while_the_pool_is_stopping_is_given_back_not_run(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    started: list[str] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        started.append(task.id)
        await asyncio.sleep(2)
        return {}

    pool = WorkerPool(queue, handler, count=1, claim_timeout=1.0, maintenance_interval=0.1)
    await pool.start()

    async def worker_blocked_in_blmove() -> bool:
        return any(c.get("cmd") == "blmove" for c in await redis.client_list())

    await wait_until(worker_blocked_in_blmove, what="the worker to wait on the dispatcher")
    stopping = asyncio.create_task(pool.stop(grace=0.2))
    await asyncio.sleep(0)  # stop() has begun: it waits for nothing that is not yet in flight
    await queue.enqueue(make_task("a", "late"))  # the blocked BLMOVE hands this scope to the worker
    t0 = time.monotonic()
    await stopping

    assert started == [], "a task claimed after stop() began ran past the grace period"
    assert time.monotonic() - t0 < 1.5
    assert await dispatcher(redis) == [scope_of("a")]
    assert await queued_ids(redis, "a") == ["late"]
    assert await redis.exists(keys.lease_key(scope_of("a"))) == 0


async def test_a_released_task_is_not_counted_as_a_stalled_delivery(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE, retry=RetryPolicy(max_deliveries=2))
    await queue.enqueue(make_task("a", "a1"))
    for _ in range(5):  # e.g. five rolling restarts, each past the grace period
        lease = await queue.claim("w", timeout=0.1)
        assert lease is not None and lease.deliveries == 1
        assert await queue.release(lease)

    runs: list[str] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        runs.append(task.id)
        return {}

    async with running_pool(queue, handler):
        await wait_until(lambda: is_done(queue, "a", "a1"), what="the result")
    assert runs == ["a1"]
    assert (await queue.result(scope_of("a"), "a1") or {}).get("status") == "done"
    assert await queue.dead_letters() == []


async def test_a_task_exceeding_task_timeout_fails_the_attempt_and_is_retried(redis: Redis) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE, retry=FAST_RETRY)
    await queue.enqueue(make_task("a", "slow"))
    log: list[tuple[str, int, str]] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        log.append(("start", task.attempt, task.last_error))
        if task.attempt == 0:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                log.append(("cancelled", task.attempt, ""))
                raise
        return {}

    t0 = time.monotonic()
    async with running_pool(queue, handler, task_timeout=0.3):
        await wait_until(lambda: is_done(queue, "a", "slow"), what="the retried task")
    assert time.monotonic() - t0 < 3.0

    assert log == [("start", 0, ""), ("cancelled", 0, ""), ("start", 1, "task timed out")]
    assert (await queue.result(scope_of("a"), "slow") or {}).get("status") == "done"
