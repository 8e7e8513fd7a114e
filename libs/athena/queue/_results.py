"""Task results: the record a task leaves under `task_results:v1:{scope}:{task_id}` (one hour), and
the one way to wait for them.

The worker writes the record when it acknowledges or fails a task (`FairQueue.ack` / `fail`): the
queue's fields (task_id, status, and on failure attempt and error) and, for a task that ran, what its
handler returned (the chain check's decision, a flush's trigger, the segment handed off and
formation's answer).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import TypedDict

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from athena import keys

__all__ = ["FINAL_STATUSES", "TaskResult", "read_results", "wait_for_results"]

FINAL_STATUSES = frozenset({"done", "dead_lettered"})
"""Statuses after which a task never runs again (retry_scheduled is not final)."""

_BATCH = 500


class TaskResult(TypedDict, total=False):
    task_id: str
    status: str
    """done, retry_scheduled or dead_lettered."""
    attempt: int
    error: str
    """Why the last attempt failed (retry_scheduled, dead_lettered)."""
    decision: str
    """Chain check: break, continue or none; flush: flush or none."""
    path: str
    """Which rule decided (athena_cognition.detector.Path), flush, erased or not_in_window."""
    score: float | None
    scorer: str
    trigger: str
    """Flush: api (FlushWindow) or idle."""
    segment_id: str
    segment_events: int
    formation_outcome: str
    """FORM_OUTCOME_CREATED, _MERGED or _REJECTED."""
    chain_id: str
    formation_reason: str
    queue_wait_ms: float
    """From the enqueue to the claim of the attempt that succeeded."""


async def read_results(redis: Redis, tasks: Sequence[tuple[str, str]]) -> dict[str, TaskResult]:
    """The results recorded so far of these (scope id, task id) pairs, by task id."""
    out: dict[str, TaskResult] = {}
    for i in range(0, len(tasks), _BATCH):
        batch = tasks[i : i + _BATCH]
        raws = await redis.mget([keys.task_result_key(scope, task_id) for scope, task_id in batch])
        out.update({task_id: json.loads(raw) for (_, task_id), raw in zip(batch, raws) if raw})
    return out


async def wait_for_results(
    redis: Redis,
    tasks: Sequence[tuple[str, str]],
    *,
    timeout: float,
    poll: float = 0.3,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, TaskResult]:
    """Poll until every (scope id, task id) has a final result or `timeout` passes; returns what was
    read last (a task without a final result is missing or not final). An unreachable Redis counts as
    no result yet. `on_progress(final, total)` after each poll."""
    deadline = time.monotonic() + timeout
    final: dict[str, TaskResult] = {}
    waiting = list(tasks)
    while True:
        try:
            found = await read_results(redis, waiting)
        except (RedisConnectionError, OSError):
            found = {}  # Redis restarting: no result yet
        final.update({t: r for t, r in found.items() if r.get("status") in FINAL_STATUSES})
        latest = {**found, **final}
        waiting = [(scope, t) for scope, t in waiting if t not in final]
        if on_progress is not None:
            on_progress(len(tasks) - len(waiting), len(tasks))
        if not waiting or time.monotonic() >= deadline:
            return {t: latest[t] for _, t in tasks if t in latest}
        await asyncio.sleep(poll)
