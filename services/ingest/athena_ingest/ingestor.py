"""Storing events: the durable log first, then the short-term window and the queue in one Redis script call.

Group commit: concurrent StoreEvent/StoreEvents calls are coalesced (athena.batching.Coalescer), so
one MongoDB insert_many, one Redis script call and one commit close serve every event that arrived
while the previous batch was being written. Each caller is answered only after the whole batch holding
its events is in the log and applied to the window and the queue, and fails with the batch otherwise;
the outcomes below hold per batch exactly as they hold per event.

Each group commit is recorded first (EventLog: an `ingest_commits` record naming its events), its
events then carry its id, and the record is closed (deleted) once the batch's Redis step succeeded.

Outcome when a dependency fails (docs/architecture.md, "Storing an event"):
- MongoDB down: nothing is written; UNAVAILABLE.
- MongoDB written, Redis down: the events are in the log, their commit stays open, and the call
  fails with UNAVAILABLE. A retry with the same event_id finds the original (unique index), sees its
  commit open, redoes the Redis step (idempotent per event id and task id) and returns the original
  id, so retries converge. If the client never retries, the repair loop applies the open commit's
  events later and closes it.
- Redis written, closing the commit failed: the call succeeds (the events are durable and queued);
  the repair loop finds the commit open, and its Redis step is a no-op the second time.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis

from athena.batching import Coalescer
from athena.errors import DependencyUnavailable, FieldViolation
from athena.events import ROLE_NAMES, TYPE_NAMES, is_user_message, to_timestamp
from athena.metrics import EVENTS_STORED
from athena.queue import FairQueue, chain_check_task_id
from athena.stm import ShortTermWindow
from athena.stores import EventLog, InsertOutcome
from athena.tombstones import millis
from athena_client.memory.v1 import memory_pb2
from athena_ingest.redis_step import RedisStep
from athena_ingest.validation import Limits, raise_if_any, validate_new_event, validate_scope

__all__ = ["Ingestor", "event_id_millis", "new_event_id"]

log = logging.getLogger("athena.ingest")


def new_event_id(stored_ms: int | None = None) -> str:
    """Its event's stored_at (epoch ms, hex) then random: sorts by arrival, unique without
    coordination, and says on which side of an erasure tombstone the event is (event_id_millis)."""
    stamp = time.time_ns() // 1_000_000 if stored_ms is None else stored_ms
    return f"ev_{stamp:012x}{secrets.token_hex(8)}"


def event_id_millis(event_id: str) -> int | None:
    """The stored_at (epoch ms) an id of `new_event_id` carries; None for any other string."""
    stamp = event_id[3:15]
    if not event_id.startswith("ev_") or len(stamp) != 12:
        return None
    try:
        return int(stamp, 16)
    except ValueError:
        return None


def new_commit_id() -> str:
    return f"cm_{time.time_ns() // 1_000_000:012x}{secrets.token_hex(8)}"


@dataclass
class Ingestor:
    event_log: EventLog
    window: ShortTermWindow
    queue: FairQueue
    redis: Redis
    limits: Limits
    enqueue_checks: bool = True
    """False when ENABLE_MEMORY_WORKERS=false: nobody would consume the tasks."""
    max_commit_events: int = 1000
    """Most events written by one group commit (a larger single request still goes as one batch)."""
    _commit: Coalescer[memory_pb2.Event, InsertOutcome] = field(init=False, repr=False)
    _closes: Coalescer[str, None] = field(init=False, repr=False)
    _closing: set[asyncio.Task[None]] = field(init=False, repr=False, default_factory=set)
    _redis_step: RedisStep = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Two stages: the next batch's log insert overlaps this batch's Redis step (athena.batching).
        self._commit = Coalescer(self._insert, then=self._apply, max_items=self.max_commit_events)
        self._closes = Coalescer(self._close_commits, max_items=self.max_commit_events)
        self._redis_step = RedisStep(
            self.redis, window=self.window, queue=self.queue, triggers_check=self._triggers_check
        )

    def validate(
        self, scope: memory_pb2.Scope, has_scope: bool, events: Sequence[memory_pb2.NewEvent], *, batch: bool
    ) -> None:
        now = datetime.now(UTC)
        violations = validate_scope(scope, has_scope=has_scope)
        if batch and not events:
            violations.append(FieldViolation("events", "must not be empty"))
        if batch and len(events) > self.limits.max_batch:
            violations.append(FieldViolation("events", f"must hold at most {self.limits.max_batch} events"))
        else:
            for i, e in enumerate(events):
                violations += validate_new_event(
                    e, field=f"events[{i}]" if batch else "event", limits=self.limits, now=now
                )
        raise_if_any(violations)

    async def store(
        self, scope: memory_pb2.Scope, new_events: Sequence[memory_pb2.NewEvent]
    ) -> list[memory_pb2.StoreEventResponse]:
        """Store validated events of one scope, in order. Raises DependencyUnavailable on an outage."""
        now = datetime.now(UTC)
        # Whole milliseconds: the erasure tombstone compares stored_at with erased_at at that grain (athena.tombstones).
        stored_at = to_timestamp(now.replace(microsecond=now.microsecond // 1000 * 1000))
        events = []
        for ne in new_events:
            event_id = new_event_id(millis(stored_at))
            events.append(
                memory_pb2.Event(
                    id=event_id,
                    scope=scope,
                    role=ne.role,
                    type=ne.type,
                    content=ne.content,
                    metadata=ne.metadata,
                    timestamp=ne.timestamp if ne.HasField("timestamp") else stored_at,
                    stored_at=stored_at,
                    client_event_id=ne.event_id or event_id,
                )
            )
        outcomes = await self._commit.submit(events)
        for o in outcomes:
            EVENTS_STORED.labels(ROLE_NAMES[o.event.role], TYPE_NAMES[o.event.type], str(o.duplicate).lower()).inc()
        return [
            memory_pb2.StoreEventResponse(
                event_id=o.event.id,
                duplicate=o.duplicate,
                task_id=chain_check_task_id(o.event.id) if self._triggers_check(o.event) else "",
            )
            for o in outcomes
        ]

    async def _insert(self, events: list[memory_pb2.Event]) -> list[InsertOutcome]:
        """A group commit's first stage: record it and insert its events into the log."""
        return await self.event_log.insert(events, commit_id=new_commit_id())

    async def _apply(self, events: list[memory_pb2.Event], outcomes: list[InsertOutcome]) -> None:
        """Its second stage: the Redis step for what it stored, then (after the answer) closing it."""
        # Each stored event reaches Redis once; repeats of an event already applied skip Redis entirely.
        to_apply: dict[str, memory_pb2.Event] = {}
        for o in outcomes:
            if not o.applied:
                to_apply.setdefault(o.event.id, o.event)
        if to_apply:
            await self._apply_to_redis(list(to_apply.values()))
        # Closing is bookkeeping for the repair loop: off the acknowledgement path. A retried event's
        # own (older) commit stays open: it may hold events still unapplied, and the repair loop closes it.
        self._close_later(sorted({o.commit_id for o in outcomes}))

    async def _close_now(self, commit_ids: list[str]) -> None:
        try:
            await self._closes.submit(commit_ids)
        except DependencyUnavailable:
            log.warning("events reached Redis but their commit could not be closed; the repair loop will close it")

    def _close_later(self, commit_ids: list[str]) -> None:
        task = asyncio.create_task(self._close_now(commit_ids))
        self._closing.add(task)  # a reference, so the task is not collected while it runs
        task.add_done_callback(self._closing.discard)

    async def _close_commits(self, commit_ids: list[str]) -> list[None]:
        await self.event_log.close_commits(commit_ids)
        return [None] * len(commit_ids)

    def _triggers_check(self, event: memory_pb2.Event) -> bool:
        return self.enqueue_checks and is_user_message(event)

    async def _apply_to_redis(self, events: Sequence[memory_pb2.Event]) -> list[memory_pb2.Event]:
        """Append to the window and enqueue checks, atomically, idempotently (redis_step.py). Returns the
        events kept (those stored before their user's erasure are deleted from the log instead)."""
        if not events:
            return []
        dropped = set(await self._redis_step.apply(events))
        if dropped:
            await self.event_log.delete([events[i].id for i in sorted(dropped)])
            log.info("dropped %d events stored before their user's erasure", len(dropped))
        return [e for i, e in enumerate(events) if i not in dropped]

    async def repair_pending(self, *, older_than: timedelta = timedelta(seconds=30)) -> int:
        """Apply the events of commits still open after `older_than` (their client gave up before a
        retry converged, or closing failed), then close them. Returns how many events were applied."""
        repaired = 0
        for commit in await self.event_log.open_commits(older_than=time.time() - older_than.total_seconds()):
            if commit.events:
                repaired += len(await self._apply_to_redis(commit.events))
            await self.event_log.close_commits([commit.commit_id])
        if repaired:
            log.info("repaired %d events of open commits", repaired)
        return repaired

    async def repair_forever(self, *, interval: float = 15.0) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.repair_pending()
            except DependencyUnavailable as exc:
                log.warning("pending repair skipped: %s", exc)

    async def backfill_metadata_pairs_forever(self, *, interval: float = 60.0) -> None:
        """Run the event log's one-time metadata_pairs backfill (EventLog.backfill_metadata_pairs) in the
        background until a pass records it done; a failure is logged and the pass retried after
        `interval`, never ending the service. Until then, metadata filters miss the events stored
        before the field existed."""
        while True:
            try:
                filled = await self.event_log.backfill_metadata_pairs()
            except Exception as exc:  # any failure: the service goes on, the backfill tries again later
                log.warning("metadata_pairs backfill failed, retrying in %.0f s: %r", interval, exc)
            else:
                if not filled:
                    return
                log.info("metadata_pairs backfill filled %d events; one more pass in %.0f s", filled, interval)
            await asyncio.sleep(interval)
