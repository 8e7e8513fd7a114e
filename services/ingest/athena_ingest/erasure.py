"""MemoryService.ForgetUser: erase what Athena holds about one user of one tenant, up to a point in time.

The tombstone (athena.tombstones) draws the line: everything derived from the user's events stored
at or before `erased_at` is erased, in every store; events stored after it are a new memory and are
kept, with whatever was already made of them. Order (docs/architecture.md, "Erasure"):

1. the tombstone, MongoDB first (formation's view), then Redis (ingest's and cognition's view). From
   the Redis write on, ingest's script drops every event stored at or before it, so no such event
   reaches Redis any more: those that did are in the log already, and the next read finds them all;
2. Redis, per scope: the erased events' tasks leave the scope queues (ERASE_TASKS, fencing a worker
   that holds one), their events leave the windows and parked hand-offs, and their dead letters,
   task results, dedup keys and applied markers are deleted; later events' stay;
3. formation (FormationService.ForgetUser): embeddings, chains and formation records of erased
   events; a chain that also holds later events is re-formed from those alone;
4. the erased events (`cognitive_events`) last: they are the source everything else derives from, so
   a forget that fails half-way leaves them for the retry;
5. the tombstone record is marked done with the receipt;
6. a rewrite of Redis's files on disk is asked for (persistence_rewrite.py), so the erased text
   leaves the append-only file too.

Every step is idempotent: a repeated call writes a new tombstone and erases what came since.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from athena import keys
from athena.errors import FieldViolation
from athena.formation_client import FormationClient
from athena.internal.v1 import task_pb2
from athena.queue import FairQueue, chain_check_task_id, task_event_id
from athena.redis_util import redis_unavailable
from athena.stm import ShortTermWindow
from athena.stores import EventLog
from athena.tombstones import MongoTombstones, erased_at_now, erases, millis, write_redis_tombstone
from athena_client.memory.v1 import memory_pb2
from athena_ingest.ingestor import event_id_millis
from athena_ingest.persistence_rewrite import PersistenceRewrite
from athena_ingest.validation import ID_PATTERN, raise_if_any

__all__ = ["Eraser", "validate_forget"]

log = logging.getLogger("athena.ingest.erasure")

_DELETE_BATCH = 500


def validate_forget(request: memory_pb2.ForgetUserRequest) -> None:
    violations = []
    for name in ("tenant_id", "user_id"):
        value = getattr(request, name)
        if not value:
            violations.append(FieldViolation(name, "is required"))
        elif not ID_PATTERN.match(value):
            violations.append(FieldViolation(name, "must be 1-128 characters of A-Z a-z 0-9 . _ @ -"))
    raise_if_any(violations)


@dataclass
class Eraser:
    redis: Redis
    queue: FairQueue
    window: ShortTermWindow
    event_log: EventLog
    tombstones: MongoTombstones
    formation: FormationClient
    persistence_rewrite: PersistenceRewrite | None = None
    """Asked for a rewrite of Redis's files once an erasure is done (ERASURE_AOF_REWRITE)."""

    async def forget(self, tenant_id: str, user_id: str) -> memory_pb2.ForgetUserResponse:
        erased_at = erased_at_now()
        receipt = memory_pb2.ForgetUserResponse()
        receipt.erased_at.FromMilliseconds(round(erased_at * 1000))

        # 1. tombstone, MongoDB first (formation's view), then Redis (cognition's and ingest's view)
        record_id = await self.tombstones.begin(tenant_id, user_id, erased_at)
        with redis_unavailable():
            await write_redis_tombstone(self.redis, tenant_id, user_id, erased_at)

        # 2. Redis: the erased events' traces, read from the log now that no more of them can reach Redis
        def stored_by_then(stored_at: Any) -> bool:
            return erases(erased_at, stored_at)

        erased_ids = set(await self.event_log.user_event_ids(tenant_id, user_id, stored=stored_by_then))
        with redis_unavailable():
            await _RedisErasure(self, tenant_id, user_id, erased_at, erased_ids, receipt).run()

        # 3. formation: embeddings, chains, formation records (it reads the tombstone itself)
        part = await self.formation.call(
            self.formation.stub.ForgetUser, memory_pb2.ForgetUserRequest(tenant_id=tenant_id, user_id=user_id)
        )
        for name in ("chains", "chains_rebuilt", "formation_records", "embeddings"):
            setattr(receipt, name, getattr(part, name))

        # 4. the events (read again: one stored by then whose Redis step met the tombstone may not be deleted by its ingest yet)
        receipt.events = await self.event_log.delete(
            await self.event_log.user_event_ids(tenant_id, user_id, stored=stored_by_then)
        )

        # 5. done
        counts = {f: int(getattr(receipt, f)) for f in _COUNTS}
        await self.tombstones.finish(record_id, counts)
        log.info("erased %s/%s up to %.3f: %s", tenant_id, user_id, erased_at, counts)
        # 6. Redis's files on disk (docs/security.md)
        if self.persistence_rewrite is not None:
            await self.persistence_rewrite.request()
        return receipt


@dataclass
class _RedisErasure:
    """Step 2 of one forget: what Redis holds of the erased events, and nothing of the later ones."""

    eraser: Eraser
    tenant_id: str
    user_id: str
    erased_at: float
    erased_ids: set[str]
    receipt: memory_pb2.ForgetUserResponse

    def task_erased(self, task: task_pb2.Task) -> bool:
        # A check is its event's, a flush its newest event's; any task queued by then is erased too.
        return task_event_id(task.id) in self.erased_ids or erases(self.erased_at, task.enqueued_at)

    def event_id_erased(self, event_id: str) -> bool:
        """For a key named by an event id: an id carrying a stored_at up to the tombstone (or of no
        known form) is of an erased event, or of one the log no longer has; later ones are kept."""
        made = event_id_millis(event_id)
        return event_id in self.erased_ids or made is None or made <= millis(self.erased_at)

    def event_erased(self, event: memory_pb2.Event) -> bool:
        return erases(self.erased_at, event.stored_at)

    async def run(self) -> None:
        queue, redis, receipt = self.eraser.queue, self.eraser.redis, self.receipt
        task_ids = {chain_check_task_id(e) for e in self.erased_ids}
        for scope in sorted(await queue.user_scopes(self.tenant_id, self.user_id)):
            tasks, leases = await queue.erase_tasks(scope, self.task_erased)
            receipt.queued_tasks += len(tasks)
            receipt.redis_keys += leases
            task_ids.update(t.id for t in tasks)
        dead = await queue.erase_dead_letters(
            lambda t: _of_user(t, self.tenant_id, self.user_id) and self.task_erased(t)
        )
        receipt.dead_letters = len(dead)
        task_ids.update(t.id for t in dead)

        patterns = keys.user_key_patterns(self.tenant_id, self.user_id)
        results = [
            k
            async for k in redis.scan_iter(match=patterns["result"], count=500)
            if self._result_erased(_last_part(k), task_ids)
        ]
        receipt.task_results = await self._delete(results)
        for window in [k async for k in redis.scan_iter(match=patterns["window"], count=500)]:
            receipt.window_events += await self.eraser.window.erase(
                _text(window)[len(keys.STM_WINDOW_PREFIX) :], self.event_erased
            )
        for handoff in [k async for k in redis.scan_iter(match=patterns["handoff"], count=500)]:
            if await self.eraser.window.erase_from_handoff(_text(handoff), self.event_erased):
                receipt.redis_keys += 1
        await self.eraser.window.forget_quiet_agents(self.tenant_id, self.user_id)
        markers = [
            k
            async for k in redis.scan_iter(match=patterns["applied"], count=500)
            if self.event_id_erased(_last_part(k))
        ]
        receipt.redis_keys += await self._delete(markers) + await self._delete(
            sorted(keys.task_dedup_key(t) for t in task_ids)
        )

    def _result_erased(self, task_id: str, erased_tasks: set[str]) -> bool:
        return task_id in erased_tasks or self.event_id_erased(task_event_id(task_id))

    async def _delete(self, names: list[Any]) -> int:
        deleted = 0
        for i in range(0, len(names), _DELETE_BATCH):
            deleted += int(await self.eraser.redis.delete(*names[i : i + _DELETE_BATCH]))
        return deleted


def _of_user(task: task_pb2.Task, tenant_id: str, user_id: str) -> bool:
    return (task.scope.tenant_id, task.scope.user_id) == (tenant_id, user_id)


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _last_part(key: bytes | str) -> str:
    """The last `:`-separated part of a key: the task id of a result key, the event id of a marker."""
    return _text(key).rsplit(":", 1)[-1]


_COUNTS = (
    "redis_keys",
    "queued_tasks",
    "dead_letters",
    "task_results",
    "window_events",
    "events",
    "chains",
    "chains_rebuilt",
    "formation_records",
    "embeddings",
)
