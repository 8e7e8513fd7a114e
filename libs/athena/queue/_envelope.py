"""Building task envelopes (athena.internal.v1.Task)."""

from __future__ import annotations

from datetime import datetime, timezone

from google.protobuf.timestamp_pb2 import Timestamp

from athena.internal.v1 import task_pb2
from athena.memory.v1 import memory_pb2

__all__ = ["CHAIN_CHECK", "chain_check_task", "chain_check_task_id", "checked_event_id"]

CHAIN_CHECK = "cognitive_chain_check"


_CHECK_PREFIX = "chk-"


def chain_check_task_id(event_id: str) -> str:
    # Deterministic, so a retried StoreEvent of the same event enqueues nothing new.
    return _CHECK_PREFIX + event_id


def checked_event_id(task_id: str) -> str:
    """The event a chain-check task id names ("" for any other task id)."""
    return task_id[len(_CHECK_PREFIX) :] if task_id.startswith(_CHECK_PREFIX) else ""


def chain_check_task(
    *, scope: memory_pb2.Scope, event_id: str, trace_context: dict[str, str] | None = None, now: datetime | None = None
) -> task_pb2.Task:
    ts = Timestamp()
    ts.FromDatetime(now or datetime.now(timezone.utc))
    return task_pb2.Task(
        id=chain_check_task_id(event_id),
        type=CHAIN_CHECK,
        scope=scope,
        chain_check=task_pb2.ChainCheckPayload(event_id=event_id),
        enqueued_at=ts,
        attempt=0,
        trace_context=trace_context or {},
    )
