"""GetTaskResult: the record a queued task left (athena.queue's task results), as the public message."""

from __future__ import annotations

from redis.asyncio import Redis

from athena.errors import NotFound
from athena.events import scope_key
from athena.queue import TaskResult, read_results
from athena.redis_util import redis_unavailable
from athena_client.memory.v1 import memory_pb2

__all__ = ["read_task_result", "task_result_to_proto"]

_TEXT = ("task_id", "status", "error", "decision", "path", "scorer", "trigger", "segment_id")


def task_result_to_proto(result: TaskResult) -> memory_pb2.TaskResult:
    out = memory_pb2.TaskResult(
        attempt=int(result.get("attempt", 0)),
        segment_events=int(result.get("segment_events", 0)),
        formation_outcome=result.get("formation_outcome", "").removeprefix("FORM_OUTCOME_"),
        chain_id=result.get("chain_id", ""),
        formation_reason=result.get("formation_reason", ""),
        queue_wait_ms=float(result.get("queue_wait_ms", 0.0)),
    )
    for name in _TEXT:
        setattr(out, name, str(result.get(name, "")))
    score = result.get("score")
    if score is not None:
        out.score = float(score)
    return out


async def read_task_result(redis: Redis, scope: memory_pb2.Scope, task_id: str) -> memory_pb2.TaskResult:
    scope_id = scope_key(scope)
    with redis_unavailable():
        found = (await read_results(redis, [(scope_id, task_id)])).get(task_id)
    if found is None:
        raise NotFound(f"no result of task {task_id!r} in this scope (not run yet, or older than an hour)")
    return task_result_to_proto(found)
