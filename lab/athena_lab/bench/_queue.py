"""Stage 1, queue: tasks/s through FairQueue enqueue + claim + ack beside raw LPUSH + RPOP.

Both sides run in this one process against a redis-server started for the stage, with the same
payloads (serialized chain-check Task envelopes), the same enqueue batching (non-transactional
pipelines of ENQUEUE_BATCH) and the same consumer concurrency (CONSUMERS coroutines, one request
at a time each). FairQueue consumers work as WorkerPool's do: a claim when idle (one CLAIM_READY
script when a scope is ready, BLMOVE + CLAIM otherwise), then one ACK_AND_CLAIM script per task,
which settles the task and leases the next ready scope; the baseline needs one RPOP per task. Tasks spread over SCOPES scopes, since one scope runs one task at a time.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from athena.local import RedisServer, free_port
from athena.queue import FairQueue, chain_check_task
from athena.redis_util import connect_redis
from athena_client.memory.v1 import memory_pb2
from athena_lab.bench._report import Figure, StageResult, summary

__all__ = ["run_queue_stage"]

ENQUEUE_BATCH = 100
CONSUMERS = 16
SCOPES = 64
_BASELINE_KEY = "bench:baseline:list"


def _tasks(n: int) -> list:
    tasks = []
    for i in range(n):
        scope = memory_pb2.Scope(tenant_id="bench", user_id=f"u{i % SCOPES}", agent_id="a")
        tasks.append(chain_check_task(scope=scope, event_id=uuid.uuid4().hex))
    return tasks


async def _fair_round(redis, tasks: list) -> tuple[float, float]:
    q = FairQueue(redis)
    t0 = time.perf_counter()
    for i in range(0, len(tasks), ENQUEUE_BATCH):
        async with redis.pipeline(transaction=False) as pipe:
            for task in tasks[i : i + ENQUEUE_BATCH]:
                await q.enqueue(task, client=pipe)
            await pipe.execute()
    t1 = time.perf_counter()
    done = 0
    total = len(tasks)

    async def consumer(k: int) -> None:
        # As WorkerPool does: claim when idle, then each ack takes the next ready scope with it.
        nonlocal done
        wid = f"bench-{k}"
        lease = None
        while done < total:
            if lease is None:
                lease = await q.claim(wid, timeout=0.05)
                if lease is None:
                    continue
            _, lease = await q.ack_and_claim(lease, {"decision": "continue"})
            done += 1

    await asyncio.gather(*(consumer(k) for k in range(CONSUMERS)))
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


async def _baseline_round(redis, payloads: list[bytes]) -> tuple[float, float]:
    t0 = time.perf_counter()
    for i in range(0, len(payloads), ENQUEUE_BATCH):
        async with redis.pipeline(transaction=False) as pipe:
            for p in payloads[i : i + ENQUEUE_BATCH]:
                pipe.lpush(_BASELINE_KEY, p)
            await pipe.execute()
    t1 = time.perf_counter()
    done = 0
    total = len(payloads)

    async def consumer() -> None:
        nonlocal done
        while done < total:
            if await redis.rpop(_BASELINE_KEY) is not None:
                done += 1

    await asyncio.gather(*(consumer() for _ in range(CONSUMERS)))
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


async def _run(port: int, n: int, repeats: int, tick: Callable[[], None]) -> StageResult:
    redis = connect_redis(f"redis://127.0.0.1:{port}/0")
    fair_tps, fair_enq, fair_drain, base_tps, base_enq, base_drain = [], [], [], [], [], []
    try:
        # Warm-up (script loading, connection pool) outside the measurement.
        await redis.flushdb()
        await _fair_round(redis, _tasks(200))
        await _baseline_round(redis, [t.SerializeToString() for t in _tasks(200)])
        for _ in range(repeats):
            tasks = _tasks(n)
            payloads = [t.SerializeToString() for t in tasks]
            await redis.flushdb()
            e, d = await _fair_round(redis, tasks)
            fair_tps.append(n / (e + d))
            fair_enq.append(n / e)
            fair_drain.append(n / d)
            await redis.flushdb()
            e, d = await _baseline_round(redis, payloads)
            base_tps.append(n / (e + d))
            base_enq.append(n / e)
            base_drain.append(n / d)
            tick()
    finally:
        await redis.aclose()
    res = StageResult(stage="queue")
    res.figures = [
        Figure("enqueue+claim+ack", "tasks/s", summary(fair_tps), "LPUSH+RPOP", summary(base_tps)),
        Figure("enqueue only", "tasks/s", summary(fair_enq), "LPUSH only", summary(base_enq)),
        Figure("claim+ack only", "tasks/s", summary(fair_drain), "RPOP only", summary(base_drain)),
    ]
    ratio = res.figures[0].ratio()
    res.keys = {
        "queue_vs_baseline": ratio,
        "queue_tasks_per_s": res.figures[0].value["median"],
        "queue_baseline_tasks_per_s": res.figures[0].baseline["median"],  # type: ignore[index]
    }
    res.detail = {
        "tasks_per_repeat": n,
        "repeats": repeats,
        "consumers": CONSUMERS,
        "scopes": SCOPES,
        "enqueue_batch": ENQUEUE_BATCH,
        "payload_bytes": len(payloads[0]),
        "figures": {f.name: {"value": f.value, "baseline": f.baseline} for f in res.figures},
    }
    res.notes.append(f"{n} tasks x {repeats} repeats, {CONSUMERS} consumers, {SCOPES} scopes, one process")
    return res


def run_queue_stage(*, quick: bool, tick: Callable[[], None]) -> StageResult:
    n, repeats = (2000, 3) if quick else (10000, 5)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="athena-bench-redis-") as tmp:
        server = RedisServer(port=free_port(), data_dir=Path(tmp), persistent=False)
        server.start()
        try:
            res = asyncio.run(_run(server.port, n, repeats, tick))
        finally:
            server.stop()
    res.seconds = time.perf_counter() - t0
    return res
