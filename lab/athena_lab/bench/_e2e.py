"""Stage 5, end to end: the StoreEvent that closes a topic until its chain is searchable, no LLM.

Per trial, a fresh scope gets the demo's Kyoto topic (three user messages with agent replies); once
cognition has decided them all, the clock starts at the StoreEvent of a user message on a new topic
(which closes the Kyoto segment) and stops when SearchMemory for a Kyoto question returns a chain
hit (polled every POLL_S; the open events, found at once as WINDOW hits, are not what is timed).
Baseline: one StoreEvent plus one SearchMemory round trip on the same stack, the floor of that loop.
Also reports each service process's peak RSS (VmHWM) after the run.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

from athena import keys
from athena_cli.demo import wait_until_processed
from athena_cli.sample_conversation import sample_conversation
from athena_cli.stack import LocalStack
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_lab.bench._report import Figure, StageResult, percentile, summary

__all__ = ["peak_rss_mb", "run_e2e_stage"]

POLL_S = 0.05
QUERY = "Which neighbourhood in Kyoto is best for temples?"


async def _chain_found(client: AsyncAthenaClient, scope: memory_pb2.Scope) -> bool:
    """Whether SearchMemory returns a chain hit (open events are found at once, as WINDOW hits)."""
    hits = await client.search_memory(scope, QUERY, limit=5)
    return any(h.source == memory_pb2.HIT_SOURCE_CHAIN for h in hits)


async def _trial(client: AsyncAthenaClient, stack: LocalStack, timeout: float) -> tuple[float | None, float]:
    turns = sample_conversation()[:7]
    breaker = sample_conversation()[7]
    tenant, user, agent = "bench", f"e2e-{uuid.uuid4().hex[:10]}", "a"
    scope = client.scope(tenant, user, agent)
    ids = []
    for t in turns:
        r = await client.store_event(scope, EventInput(t.role, t.content, t.type))
        if r.task_id:
            ids.append(r.task_id)
    await wait_until_processed(stack.redis_url, keys.scope_id(tenant, user, agent), ids, timeout=timeout)
    if await _chain_found(client, scope):
        raise RuntimeError("a chain was searchable before the closing message: the trial measures nothing")
    t0 = time.perf_counter()
    await client.store_event(scope, EventInput(breaker.role, breaker.content, breaker.type))
    t1 = time.perf_counter()
    deadline = t0 + timeout
    while time.perf_counter() < deadline:
        if await _chain_found(client, scope):
            return (time.perf_counter() - t0) * 1000, (time.perf_counter() - t1) * 1000
        await asyncio.sleep(POLL_S)
    return None, 0.0


async def _floor(client: AsyncAthenaClient) -> float:
    scope = client.scope("bench", f"floor-{uuid.uuid4().hex[:10]}", "a")
    t0 = time.perf_counter()
    await client.store_event(scope, EventInput("agent", "noted"))
    await client.search_memory(scope, QUERY, limit=5)
    return (time.perf_counter() - t0) * 1000


async def _measure(
    stack: LocalStack, trials: int, repeats: int, timeout: float, tick: Callable[[], None]
) -> StageResult:
    p50s, p95s, floors50, floors95, timeouts = [], [], [], [], 0
    async with stack.client(tenant_id="bench") as client:
        await _floor(client)
        for _ in range(repeats):
            lat, fl = [], []
            for _ in range(trials):
                ms, _ = await _trial(client, stack, timeout)
                if ms is None:
                    timeouts += 1
                else:
                    lat.append(ms)
                fl.append(await _floor(client))
            if lat:
                p50s.append(percentile(lat, 50))
                p95s.append(percentile(lat, 95))
            floors50.append(percentile(fl, 50))
            floors95.append(percentile(fl, 95))
            tick()
    res = StageResult(stage="e2e")
    if p50s:
        res.figures = [
            Figure(
                "StoreEvent -> chain searchable p50",
                "ms",
                summary(p50s),
                "StoreEvent + SearchMemory",
                summary(floors50),
            ),
            Figure(
                "StoreEvent -> chain searchable p95",
                "ms",
                summary(p95s),
                "StoreEvent + SearchMemory",
                summary(floors95),
            ),
        ]
    res.keys = {
        "e2e_p50_ms": (p50s and summary(p50s)["median"]) or None,
        "e2e_p95_ms": (p95s and summary(p95s)["median"]) or None,
        "e2e_floor_p50_ms": summary(floors50)["median"],
    }
    res.detail = {
        "trials_per_repeat": trials,
        "repeats": repeats,
        "timeouts": timeouts,
        "poll_s": POLL_S,
        "figures": {f.name: {"value": f.value, "baseline": f.baseline} for f in res.figures},
    }
    res.notes.append(
        f"{trials} trials x {repeats} repeats, fresh scope each, LLM off, poll {POLL_S * 1000:.0f} ms; timeouts: {timeouts}"
    )
    return res


def run_e2e_stage(stack: LocalStack, *, quick: bool, tick: Callable[[], None]) -> StageResult:
    trials, repeats = (4, 3) if quick else (10, 5)
    t0 = time.perf_counter()
    res = asyncio.run(_measure(stack, trials, repeats, 60.0, tick))
    res.seconds = time.perf_counter() - t0
    return res


def peak_rss_mb(stack: LocalStack) -> dict[str, float | None]:
    """VmHWM of each process of the stack (services, redis-server, nx-27017), in MiB."""
    pids: dict[str, int | None] = {name: p.pid for name, p in stack.procs.items()}
    pids["redis"] = stack.redis.pid if stack.redis else None
    pids["mongo"] = stack.mongo.pid if stack.mongo else None
    out: dict[str, float | None] = {}
    for name, pid in pids.items():
        out[name] = None
        if pid is None:
            continue
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        out[name] = int(line.split()[1]) / 1024
        except OSError:
            pass
    return out
