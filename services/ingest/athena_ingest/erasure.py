"""MemoryService.ForgetUser: erase everything Athena holds about one user of one tenant.

Order (docs/architecture.md, "Erasure"):

1. the tombstone: a record in the `erasures` collection (what formation reads) and the Redis key
   `erasure:v1:{tenant}:{user}` (what cognition and ingest read), both holding `erased_at` as epoch
   seconds. From here on every pipeline stage drops the user's work from before that time;
2. Redis, per scope atomically (ERASE_SCOPE: the scope's queue, its dispatcher / delayed / lease /
   deliveries entries), then the user's dead letters, the dedup keys of every removed task, and by
   SCAN the windows, applied markers, hand-offs and task results;
3. formation (FormationService.ForgetUser): Milvus embeddings first, then chains and formation records;
4. the events (`cognitive_events`) last: they are the source everything else derives from, so a
   forget that fails half-way leaves them for the retry;
5. the tombstone record is marked done with the receipt.

Every step is idempotent: a repeated call writes a new tombstone and finds nothing left (zeros).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from athena import keys
from athena.errors import FieldViolation
from athena.formation_client import FormationClient
from athena.memory.v1 import memory_pb2
from athena.queue import FairQueue, chain_check_task_id
from athena.redis_util import redis_unavailable
from athena.stores import insert_own, mongo_unavailable
from athena_ingest.validation import ID_PATTERN, raise_if_any

__all__ = ["ERASURES", "Eraser", "validate_forget"]

log = logging.getLogger("athena.ingest.erasure")

ERASURES = "erasures"
"""MongoDB collection of tombstones: one record per ForgetUser call (tenant_id, user_id, erased_at epoch
seconds, state erasing/done, the receipt). Formation reads the latest erased_at of a user."""

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
    mongo: AsyncMongoClient[dict[str, Any]]
    database: str
    formation: FormationClient

    @property
    def _erasures(self) -> Any:
        return self.mongo[self.database][ERASURES]

    @property
    def _events(self) -> Any:
        return self.mongo[self.database]["cognitive_events"]

    async def forget(self, tenant_id: str, user_id: str) -> memory_pb2.ForgetUserResponse:
        erased_at = time.time()
        receipt = memory_pb2.ForgetUserResponse()
        receipt.erased_at.FromNanoseconds(int(erased_at * 1e9))

        # 1. tombstone, Mongo first (formation's view), then Redis (cognition's and ingest's view)
        record_id = f"{tenant_id}:{user_id}:{int(erased_at * 1e6)}"
        with mongo_unavailable():
            await insert_own(
                self._erasures, {"_id": record_id, "tenant_id": tenant_id, "user_id": user_id, "erased_at": erased_at, "state": "erasing"}
            )
        with redis_unavailable():
            await self.redis.set(keys.erasure_key(tenant_id, user_id), repr(erased_at), ex=keys.ERASURE_TTL_SECONDS)

        # 2. Redis (the user's event ids name the dedup keys of every check task ever queued for them)
        with mongo_unavailable():
            event_ids = [d["_id"] async for d in self._events.find({"tenant_id": tenant_id, "user_id": user_id}, {"_id": 1})]
        with redis_unavailable():
            await self._erase_redis(tenant_id, user_id, receipt, event_ids)

        # 3. formation: embeddings, chains, formation records
        part = await self.formation.call(
            self.formation.stub.ForgetUser, memory_pb2.ForgetUserRequest(tenant_id=tenant_id, user_id=user_id)
        )
        receipt.chains = part.chains
        receipt.formation_records = part.formation_records
        receipt.embeddings = part.embeddings

        # 4. events
        with mongo_unavailable():
            result = await self._events.delete_many({"tenant_id": tenant_id, "user_id": user_id})
            receipt.events = int(result.deleted_count)

        # 5. done
        with mongo_unavailable():
            await self._erasures.update_many(
                {"_id": record_id},
                {
                    "$set": {
                        "state": "done",
                        "finished_at": time.time(),
                        "receipt": {f: int(getattr(receipt, f)) for f in _COUNTS},
                    }
                },
            )
        log.info("erased %s/%s: %s", tenant_id, user_id, {f: int(getattr(receipt, f)) for f in _COUNTS})
        return receipt

    async def _erase_redis(
        self, tenant_id: str, user_id: str, receipt: memory_pb2.ForgetUserResponse, event_ids: list[str]
    ) -> None:
        dedup: set[str] = {keys.task_dedup_key(chain_check_task_id(e)) for e in event_ids}
        for scope in sorted(await self.queue.user_scopes(tenant_id, user_id)):
            tasks, leased = await self.queue.erase_scope(scope)
            receipt.queued_tasks += len(tasks)
            receipt.redis_keys += leased
            dedup.update(keys.task_dedup_key(t.id) for t in tasks)
        dead = await self.queue.erase_dead_letters(tenant_id, user_id)
        receipt.dead_letters = len(dead)
        dedup.update(keys.task_dedup_key(t.id) for t in dead)

        patterns = keys.user_key_patterns(tenant_id, user_id)
        results = [k async for k in self.redis.scan_iter(match=patterns["result"], count=500)]
        receipt.task_results = await self._delete(results)
        # A task whose result is kept was dequeued already; its dedup key is the user's too.
        prefix_len = len(keys.TASK_RESULT_PREFIX) + len(keys.user_scope_prefix(tenant_id, user_id))
        for k in results:
            rest = (k.decode() if isinstance(k, bytes) else k)[prefix_len:]  # {agent}:{taskId}
            dedup.add(keys.task_dedup_key(rest.split(":", 1)[1]))
        stm: list[Any] = []
        for kind in ("window", "applied", "handoff", "lease"):
            stm += [k async for k in self.redis.scan_iter(match=patterns[kind], count=500)]
        receipt.redis_keys += await self._delete(stm) + await self._delete(sorted(dedup))

    async def _delete(self, names: list[Any]) -> int:
        deleted = 0
        for i in range(0, len(names), _DELETE_BATCH):
            deleted += int(await self.redis.delete(*names[i : i + _DELETE_BATCH]))
        return deleted


_COUNTS = ("redis_keys", "queued_tasks", "dead_letters", "task_results", "events", "chains", "formation_records", "embeddings")


async def erased_since(redis: Redis, tenant_id: str, user_id: str) -> float | None:
    """The user's tombstone (epoch seconds), or None."""
    raw = await redis.get(keys.erasure_key(tenant_id, user_id))
    return float(raw) if raw else None
