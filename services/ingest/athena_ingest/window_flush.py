"""MemoryService.FlushWindow: close a scope's conversation by queueing a flush of its window.

The flush is a task on the scope's own queue, so it runs after every task already queued for the
scope (their decisions see the window as it was); cognition then cuts the window up to the event
that was newest at the call and hands the segment to formation (athena_cognition.chain_check). The
task id derives from that event, so a repeated call, or the idle flush of the same window, queues
nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass

from athena.events import scope_key
from athena.queue import FairQueue, window_flush_task
from athena.redis_util import redis_unavailable
from athena.stm import ShortTermWindow
from athena.tracing import inject_context, producer_span
from athena_client.memory.v1 import memory_pb2

__all__ = ["WindowFlushes"]


@dataclass
class WindowFlushes:
    window: ShortTermWindow
    queue: FairQueue
    enabled: bool = True
    """False when ENABLE_MEMORY_WORKERS=false: nobody would run the task, so none is queued."""

    async def flush(self, scope: memory_pb2.Scope) -> memory_pb2.FlushWindowResponse:
        with redis_unavailable():
            newest, length = await self.window.newest(scope_key(scope))
        if newest is None or not self.enabled:
            return memory_pb2.FlushWindowResponse(events=length)
        with producer_span(count=1):
            carrier: dict[str, str] = {}
            inject_context(carrier)
            task = window_flush_task(scope=scope, through_event_id=newest.id, trigger="api", trace_context=carrier)
            with redis_unavailable():
                queued = await self.queue.enqueue(task)
        return memory_pb2.FlushWindowResponse(task_id=task.id, events=length, duplicate=not queued)
