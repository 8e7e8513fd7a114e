"""The fair work queue across processes and crashes: several worker processes, SIGKILL mid-task, a worker
killed between BLMOVE and the claim script, a task that keeps killing its worker, a Redis restart.

Worker processes run tests/support/queue_worker_proc.py (a real WorkerPool) with a 1 s lease, a 0.2 s
claim timeout and a 0.1 s maintenance interval. Their handler RPUSHes one JSON line per task start and
end to a Redis list, so the list's order is the order in which things happened across processes.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from athena import keys
from athena.internal.v1 import task_pb2
from athena.local import RedisServer
from athena.queue import ExponentialFullJitter, FairQueue, RetryPolicy, WorkerPool
from athena.redis_util import connect_redis
from athena_client.memory.v1 import memory_pb2

WORKER_PROC = Path(__file__).resolve().parents[1] / "support" / "queue_worker_proc.py"
LOG = "test:queue:log"
LEASE = 1.0


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


async def read_log(redis: Redis) -> list[dict[str, Any]]:
    return [json.loads(line) for line in await redis.lrange(LOG, 0, -1)]


def task_events(log: list[dict[str, Any]], task_id: str, event: str) -> list[dict[str, Any]]:
    return [e for e in log if e.get("task") == task_id and e["event"] == event]


async def has_event(redis: Redis, event: str, task_id: str) -> bool:
    return bool(task_events(await read_log(redis), task_id, event))


class Workers:
    """Starts worker processes; kills any still running when the test ends."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(self, *options: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, str(WORKER_PROC), self.url, "--log", LOG, "--lease", str(LEASE), *options],
            stdin=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        return proc

    async def ready(self, redis: Redis, *procs: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
        async def all_ready() -> bool:
            pids = {e["pid"] for e in await read_log(redis) if e["event"] == "ready"}
            for p in procs:
                assert p.poll() is None or p.pid in pids, f"worker process exited with {p.returncode}"
            return all(p.pid in pids for p in procs)

        await wait_until(all_ready, timeout=timeout, what="worker processes to start")

    def kill_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def workers(redis: Redis, redis_server: RedisServer) -> Iterator[Workers]:
    w = Workers(redis_server.url)
    yield w
    w.kill_all()


async def exited(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    await wait_until(lambda: proc.poll() is not None, timeout=timeout, what=f"process {proc.pid} to exit")
    return proc.returncode


async def enqueue_through_outage(queue: FairQueue, task: task_pb2.Task) -> None:
    """What a producer does while Redis restarts: retry; the dedup key makes a repeat harmless."""
    failed = False
    for _ in range(100):
        try:
            queued = await queue.enqueue(task)
        except (RedisConnectionError, OSError):
            failed = True
            await asyncio.sleep(0.05)
            continue
        assert queued or failed, f"{task.id} was reported as queued before"
        return
    raise AssertionError(f"could not enqueue {task.id}")


# --- order and exclusivity across processes -------------------------------------------------------
async def test_tasks_of_one_scope_never_overlap_and_run_in_order_across_worker_processes(
    redis: Redis, workers: Workers
) -> None:
    procs = [workers.spawn("--count", "2", "--sleep", "0.03") for _ in range(3)]
    await workers.ready(redis, *procs)

    queue = FairQueue(redis, lease_seconds=LEASE)
    users = [f"u{i}" for i in range(8)]
    for i in range(6):
        for u in users:
            await queue.enqueue(make_task(u, f"{u}-{i}"))

    async def all_done() -> bool:
        return sum(e["event"] == "end" for e in await read_log(redis)) >= 48

    await wait_until(all_done, timeout=20, what="all 48 tasks")
    log = [e for e in await read_log(redis) if e["event"] in ("start", "end")]

    for u in users:
        mine = [(e["event"], e["task"]) for e in log if e["scope"] == scope_of(u)]
        assert mine == [(kind, f"{u}-{i}") for i in range(6) for kind in ("start", "end")], f"{u}: {mine}"

    running: dict[str, int] = {}  # task -> pid, at each point of the log
    cross_process_overlap = False
    for e in log:
        if e["event"] == "start":
            running[e["task"]] = e["pid"]
            cross_process_overlap |= len(set(running.values())) >= 2
        else:
            del running[e["task"]]
    assert cross_process_overlap, "different scopes never ran at the same time in different processes"
    assert len({e["pid"] for e in log}) == 3, "some worker process got no work"

    for p in procs:
        p.send_signal(signal.SIGTERM)
    assert [await exited(p) for p in procs] == [0, 0, 0]
    assert await redis.zcard(keys.QUEUE_WORKERS) == 0, "a cleanly stopped worker left its heartbeat"


# --- crashes -------------------------------------------------------------------------------------
async def test_a_worker_killed_mid_task_loses_nothing_and_the_task_is_acked_once_after_the_lease_expires(
    redis: Redis, workers: Workers
) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    await queue.enqueue(make_task("a", "a1"))
    await queue.enqueue(make_task("a", "a2"))

    doomed = workers.spawn("--count", "1", "--hang", "a1")
    await wait_until(lambda: has_event(redis, "start", "a1"), timeout=15, what="a1 to start")
    survivor = workers.spawn("--count", "2")
    await workers.ready(redis, survivor)

    # other scopes flow while the doomed worker holds scope a
    for i in (1, 2, 3):
        await queue.enqueue(make_task("b", f"b{i}"))
    await wait_until(lambda: has_event(redis, "end", "b3"), what="scope b to flow")
    assert not await has_event(redis, "start", "a2"), "scope a ran two tasks at once"

    doomed.send_signal(signal.SIGKILL)
    killed_at = time.time()
    assert await exited(doomed) == -signal.SIGKILL
    for i in (4, 5):
        await queue.enqueue(make_task("b", f"b{i}"))

    await wait_until(lambda: has_event(redis, "end", "a2"), timeout=10, what="scope a to recover")
    await wait_until(lambda: has_event(redis, "end", "b5"), what="scope b after the crash")
    log = await read_log(redis)

    starts = task_events(log, "a1", "start")
    assert [e["pid"] for e in starts] == [doomed.pid, survivor.pid]
    assert starts[1]["attempt"] == 0, "a crash is not a failed attempt"
    assert starts[1]["t"] >= killed_at, "a1 ran again while its first worker was still alive"
    assert [e["pid"] for e in task_events(log, "a1", "end")] == [survivor.pid]
    # acked exactly once: a second ack would have popped a2 without running it
    assert len(task_events(log, "a2", "start")) == 1
    assert log.index(task_events(log, "a2", "start")[0]) > log.index(task_events(log, "a1", "end")[0])
    result = await queue.result(scope_of("a"), "a1")
    assert result is not None and result["status"] == "done" and result["pid"] == survivor.pid
    for i in range(1, 6):
        assert len(task_events(log, f"b{i}", "end")) == 1
    assert await redis.llen(keys.scope_queue_key(scope_of("a"))) == 0
    assert await redis.exists(keys.lease_key(scope_of("a"))) == 0
    assert await redis.hget(keys.QUEUE_DELIVERIES, scope_of("a")) is None


async def test_a_scope_stranded_between_blmove_and_claim_by_a_killed_worker_is_recovered_by_the_reaper(
    redis: Redis, workers: Workers
) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    await queue.enqueue(make_task("a", "a1"))
    await queue.enqueue(make_task("a", "a2"))

    crasher = workers.spawn("--count", "1", "--name", "crasher", "--crash-after-blmove")
    assert await exited(crasher, timeout=15) == -signal.SIGKILL
    crashed_at = time.monotonic()

    # the scope sits in the dead worker's claiming list: not runnable, not leased
    assert await redis.lrange(keys.claiming_key("crasher-0"), 0, -1) == [scope_of("a").encode()]
    assert await redis.llen(keys.DISPATCHER) == 0
    assert await redis.exists(keys.lease_key(scope_of("a"))) == 0
    assert await redis.zscore(keys.QUEUE_WORKERS, "crasher-0") is not None, "the dead worker never heartbeat"

    done: list[str] = []

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        done.append(task.id)
        return {}

    pool = WorkerPool(queue, handler, count=2, claim_timeout=0.2, maintenance_interval=0.1)
    await pool.start()
    try:
        await wait_until(lambda: done == ["a1", "a2"], timeout=10, what="the stranded scope to be recovered")
    finally:
        await pool.stop(grace=0)

    # recovered by the heartbeat check (3 lease lengths), not by anything faster that could misfire
    assert time.monotonic() - crashed_at >= 2.5
    assert await redis.llen(keys.claiming_key("crasher-0")) == 0
    assert await redis.zscore(keys.QUEUE_WORKERS, "crasher-0") is None


async def test_a_task_that_keeps_killing_its_worker_ends_in_the_dead_letter_list(
    redis: Redis, workers: Workers
) -> None:
    queue = FairQueue(redis, lease_seconds=LEASE)
    await queue.enqueue(make_task("a", "poison"))
    await queue.enqueue(make_task("a", "after"))
    options = ("--count", "1", "--crash-on", "poison", "--max-deliveries", "2")

    procs = [workers.spawn(*options)]
    deadline = time.monotonic() + 20
    while not await redis.llen(keys.QUEUE_DEAD_LETTERS):
        assert time.monotonic() < deadline, "the poison task was never dead-lettered"
        if procs[-1].poll() is not None:
            assert procs[-1].returncode == -signal.SIGKILL
            procs.append(workers.spawn(*options))  # the supervisor restarts the crashed worker
        await asyncio.sleep(0.05)
    await wait_until(lambda: has_event(redis, "end", "after"), what="the scope's next task")

    log = await read_log(redis)
    assert len(task_events(log, "poison", "start")) == 2, "ran more often than max_deliveries"
    assert task_events(log, "poison", "end") == []
    assert len(procs) == 3 and procs[-1].poll() is None, "two crashes, and the third worker survived"
    [dead] = await queue.dead_letters()
    assert dead.id == "poison" and dead.last_error.startswith("stalled: delivered 3 times")
    result = await queue.result(scope_of("a"), "poison")
    assert result is not None and result["status"] == "dead_lettered"


# --- Redis restart -------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["graceful_stop", "sigkill"])
async def test_a_running_worker_pool_survives_a_redis_restart_and_loses_no_task(
    own_redis_server: RedisServer, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    """Redis goes down under a busy WorkerPool, stays down for half a second, and comes back on the same
    port with its append-only file. Tasks are enqueued before, during and after the outage."""
    # the pool's client has no client-side retries: reconnecting is the WorkerPool's own job here
    client = Redis.from_url(own_redis_server.url)
    producer = connect_redis(own_redis_server.url)
    if how == "sigkill":
        # SIGKILL skips the shutdown fsync; with "always" every acknowledged write is on disk
        await producer.config_set("appendfsync", "always")
    retry = RetryPolicy(backoff=ExponentialFullJitter(base=0.05, cap=0.2))
    queue = FairQueue(client, lease_seconds=LEASE, retry=retry)
    producer_queue = FairQueue(producer, lease_seconds=LEASE, retry=retry)
    done: set[str] = set()

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        await asyncio.sleep(0.02)
        done.add(task.id)
        return {}

    before = [make_task(f"u{i % 4}", f"before-{i}") for i in range(40)]
    after = [make_task(f"u{i % 4}", f"after-{i}") for i in range(20)]
    for t in before:
        assert await producer_queue.enqueue(t)
    run_id = (await producer.info("server"))["run_id"]

    async def produce_after() -> None:
        for t in after:
            await enqueue_through_outage(producer_queue, t)

    pool = WorkerPool(queue, handler, count=2, claim_timeout=0.2, maintenance_interval=0.1)
    await pool.start()
    try:
        await wait_until(lambda: len(done) >= 5, what="work to be under way")
        assert len(done) < len(before), "finished before the restart: the test proves nothing"
        await asyncio.to_thread(own_redis_server.stop if how == "graceful_stop" else own_redis_server.kill)
        producing = asyncio.create_task(produce_after())
        await asyncio.sleep(0.5)  # the outage: workers and the maintenance loop hit refused connections
        await asyncio.to_thread(own_redis_server.start)
        await producing
        assert (await producer.info("server"))["run_id"] != run_id, "Redis did not restart"
        assert any("redis unavailable" in r.getMessage() for r in caplog.records), "the pool saw no outage"

        everything = {t.id for t in before + after}
        await wait_until(lambda: done >= everything, timeout=30, what="every task, before and after the restart")

        async def settled() -> bool:
            d = await producer_queue.depth()
            return (d.ready, d.in_flight, d.delayed) == (0, 0, 0)

        await wait_until(settled, what="the queue to drain")
    finally:
        await pool.stop(grace=1)

    for t in before + after:
        result = await producer_queue.result(scope_of(t.scope.user_id), t.id)
        assert result is not None and result["status"] == "done", (t.id, result)
    assert (await producer_queue.depth()).dead_lettered == 0
    for u in range(4):
        assert await producer.llen(keys.scope_queue_key(scope_of(f"u{u}"))) == 0
    await client.aclose()
    await producer.aclose()
