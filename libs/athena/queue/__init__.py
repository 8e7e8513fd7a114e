"""The crash-safe two-level fair work queue (seed: "The two-level queue") and its worker pool."""

from athena.queue._backoff import Backoff, ExponentialFullJitter, NoBackoff, RetryPolicy
from athena.queue._envelope import (
    CHAIN_CHECK,
    WINDOW_FLUSH,
    chain_check_task,
    chain_check_task_id,
    task_event_id,
    window_flush_task,
    window_flush_task_id,
)
from athena.queue._queue import TASK_DEDUP_TTL_SECONDS, FailOutcome, FairQueue, Lease, QueueDepth
from athena.queue._results import FINAL_STATUSES, TaskResult, read_results, wait_for_results
from athena.queue._scripts import ENQUEUE_FN
from athena.queue._worker import Handler, WorkerPool

__all__ = [
    "CHAIN_CHECK",
    "ENQUEUE_FN",
    "FINAL_STATUSES",
    "TASK_DEDUP_TTL_SECONDS",
    "WINDOW_FLUSH",
    "Backoff",
    "ExponentialFullJitter",
    "FailOutcome",
    "FairQueue",
    "Handler",
    "Lease",
    "NoBackoff",
    "QueueDepth",
    "RetryPolicy",
    "TaskResult",
    "WorkerPool",
    "chain_check_task",
    "chain_check_task_id",
    "read_results",
    "task_event_id",
    "wait_for_results",
    "window_flush_task",
    "window_flush_task_id",
]
