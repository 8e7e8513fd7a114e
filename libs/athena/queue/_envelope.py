"""Building task envelopes (athena.internal.v1.Task)."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from athena.internal.v1 import task_pb2
from athena_client.memory.v1 import memory_pb2

__all__ = [
    "CHAIN_CHECK",
    "WINDOW_FLUSH",
    "chain_check_task",
    "chain_check_task_id",
    "task_event_id",
    "window_flush_task",
    "window_flush_task_id",
]

CHAIN_CHECK = "cognitive_chain_check"
WINDOW_FLUSH = "cognitive_window_flush"


_CHECK_PREFIX = "chk-"
_FLUSH_PREFIX = "flush-"


def chain_check_task_id(event_id: str) -> str:
    # Deterministic, so a retried StoreEvent of the same event enqueues nothing new.
    return _CHECK_PREFIX + event_id


def task_event_id(task_id: str) -> str:
    """The event a task id is named by: a chain check's event, a flush's newest event ("" for any
    other task id)."""
    for prefix in (_CHECK_PREFIX, _FLUSH_PREFIX):
        if task_id.startswith(prefix):
            return task_id[len(prefix) :]
    return ""


def chain_check_task(
    *, scope: memory_pb2.Scope, event_id: str, trace_context: dict[str, str] | None = None, now: datetime | None = None
) -> task_pb2.Task:
    task = _task(chain_check_task_id(event_id), CHAIN_CHECK, scope, trace_context, now)
    task.chain_check.event_id = event_id
    return task


def window_flush_task_id(through_event_id: str) -> str:
    # Deterministic by the window's newest event: a repeated FlushWindow, or the idle flush of the same
    # window, queues nothing new; a flush after new events is a new task.
    return _FLUSH_PREFIX + through_event_id


def window_flush_task(
    *,
    scope: memory_pb2.Scope,
    through_event_id: str,
    trigger: str,
    trace_context: dict[str, str] | None = None,
    now: datetime | None = None,
) -> task_pb2.Task:
    """Cut the scope's window up to and including `through_event_id` and form it ("api" or "idle")."""
    task = _task(window_flush_task_id(through_event_id), WINDOW_FLUSH, scope, trace_context, now)
    task.window_flush.CopyFrom(task_pb2.WindowFlushPayload(through_event_id=through_event_id, trigger=trigger))
    return task


def _task(
    task_id: str, task_type: str, scope: memory_pb2.Scope, trace_context: dict[str, str] | None, now: datetime | None
) -> task_pb2.Task:
    ts = Timestamp()
    ts.FromDatetime(now or datetime.now(UTC))
    return task_pb2.Task(
        id=task_id, type=task_type, scope=scope, enqueued_at=ts, attempt=0, trace_context=trace_context or {}
    )
