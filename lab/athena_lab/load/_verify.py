"""After the traffic: wait until every user message is decided, then check the durable log.

Decided means cognition acknowledged the message's chain check with a decision about it: its task
result (`task_results:v1:{scope}:{task}`, written by the queue's ACK) has status "done" and a path
other than "not_in_window" (the message left the short-term window, trimmed at its cap, before its
check ran: it never reaches a chain). A dead-lettered check, or one still without a final result when
the wait ends, is a user message lost to cognition too.
In the log means the acknowledged event id is a document of `cognitive_events`.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from athena import keys
from athena.stores import EventLog
from athena_lab.load._driver import Ack

__all__ = ["NOT_IN_WINDOW", "Decisions", "events_in_log", "wait_decided"]

_BATCH = 500
_FINAL = ("done", "dead_lettered")
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
    """Poll the task results of the user messages in `acks` until all are final or `timeout` passes."""
    checks = [(keys.task_result_key(keys.scope_id(a.tenant_id, a.user_id, a.agent_id), a.task_id), a.task_id) for a in acks if a.task_id]
    waiting = list(checks)
    out = Decisions()
    started = time.monotonic()
    deadline = started + timeout
    while waiting:
        still: list[tuple[str, str]] = []
        for batch in _chunks(waiting):
            raws = await redis.mget([k for k, _ in batch])
            for (key, task_id), raw in zip(batch, raws):
                result = json.loads(raw) if raw else None
                if result is not None and result.get("status") in _FINAL:
                    out.results[task_id] = result
                else:
                    still.append((key, task_id))
        waiting = still
        if on_progress:
            on_progress(len(checks) - len(waiting), len(checks))
        if not waiting or time.monotonic() >= deadline:
            break
        await asyncio.sleep(poll)
    out.seconds = time.monotonic() - started
    return out


async def events_in_log(mongo: AsyncMongoClient[dict[str, Any]], database: str, event_ids: Sequence[str]) -> set[str]:
    """The ids among `event_ids` that are documents of the durable log."""
    collection = EventLog(mongo, database).collection
    found: set[str] = set()
    for batch in _chunks(list(event_ids)):
        async for doc in collection.find({"_id": {"$in": list(batch)}}, {"_id": 1}):
            found.add(str(doc["_id"]))
    return found
