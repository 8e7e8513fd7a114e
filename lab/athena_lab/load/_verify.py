"""After the traffic: wait until every user message is decided, then check the durable log.

Decided means cognition acknowledged the message's chain check with a decision about it: its task
result (`task_results:v1:{scope}:{task}`, written by the queue's ACK) has status "done" and a path
other than "not_in_window" (the message left the short-term window, trimmed at its cap, before its
check ran: it never reaches a chain). A dead-lettered check, or one still without a final result when
the wait ends, is a user message lost to cognition too.
In the log means the acknowledged event id is a document of `cognitive_events`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from athena import keys
from athena.queue import FINAL_STATUSES, wait_for_results
from athena.stores import EventLog
from athena_lab.load._driver import Ack

__all__ = ["NOT_IN_WINDOW", "Decisions", "events_in_log", "wait_decided"]

_BATCH = 500
NOT_IN_WINDOW = "not_in_window"
"""The path of a check whose message was no longer in the window (chain_check.py)."""


@dataclass
class Decisions:
    """The task results of one phase's user messages."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """task id -> task result, for every check with a final result."""
    seconds: float = 0.0
    """From the start of the wait until the last final result was seen (or the wait gave up)."""

    def decided(self, task_id: str) -> bool:
        result = self.results.get(task_id, {})
        return result.get("status") == "done" and result.get("path") != NOT_IN_WINDOW

    def status(self, task_id: str) -> str:
        return str(self.results.get(task_id, {}).get("status", "pending"))


def _chunks(items: Sequence[Any], size: int = _BATCH) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


async def wait_decided(
    redis: Redis,
    acks: Sequence[Ack],
    *,
    timeout: float,
    poll: float = 0.5,
    on_progress: Callable[[int, int], None] | None = None,
) -> Decisions:
    """Wait for the task results of the user messages in `acks` (athena.queue.wait_for_results)."""
    tasks = [(keys.scope_id(a.tenant_id, a.user_id, a.agent_id), a.task_id) for a in acks if a.task_id]
    started = time.monotonic()
    results = await wait_for_results(redis, tasks, timeout=timeout, poll=poll, on_progress=on_progress)
    final = {t: dict(r) for t, r in results.items() if r.get("status") in FINAL_STATUSES}
    return Decisions(results=final, seconds=time.monotonic() - started)


async def events_in_log(mongo: AsyncMongoClient[dict[str, Any]], database: str, event_ids: Sequence[str]) -> set[str]:
    """The ids among `event_ids` that are documents of the durable log."""
    collection = EventLog(mongo, database).collection
    found: set[str] = set()
    for batch in _chunks(list(event_ids)):
        async for doc in collection.find({"_id": {"$in": list(batch)}}, {"_id": 1}):
            found.add(str(doc["_id"]))
    return found
