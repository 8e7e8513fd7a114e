"""The two-level fair work queue: one Redis list per scope plus the `cognitive_work_queue` dispatcher.

Design (docs/architecture.md, "The queue"): a worker moves a scope id off the dispatcher into its own
claiming list (BLMOVE, so a crash there loses nothing), leases the scope and peeks its head task. The
head is removed only on acknowledge, so a worker killed mid-task leaves it in place; the reaper
requeues the scope once the lease expires. A leased scope is off the dispatcher, so one scope never
runs two tasks at once and its tasks run in order. Failures keep the head in place and park the scope
in a delayed set (exponential backoff, full jitter) instead of the seed's immediate LIFO re-push.

Round trips: when a scope is ready, a claim is one script (CLAIM_READY pops and leases atomically, so
no claiming list is needed), and a busy worker acknowledges a task and leases its next scope in one
script (ACK_AND_CLAIM); BLMOVE + CLAIM is the path of a worker waiting for work.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from redis.asyncio import Redis

from athena import keys
from athena.internal.v1 import task_pb2
from athena.queue import _scripts
from athena.queue._backoff import RetryPolicy
from athena.queue._evalsha import HotScript
from athena.redis_util import reply_bytes_list

__all__ = ["TASK_DEDUP_TTL_SECONDS", "FailOutcome", "FairQueue", "Lease", "QueueDepth"]

TASK_DEDUP_TTL_SECONDS = 7 * 24 * 3600
"""How long a task id, once queued, keeps the same id from being queued again."""


@dataclass(frozen=True)
class Lease:
    """A claimed scope and the task at its head."""

    scope: str
    token: str
    task: task_pb2.Task
    deliveries: int
    claimed_at: float = 0.0
    """Epoch seconds when this worker leased the scope (the end of the task's queue wait)."""


class FailOutcome(str, Enum):
    RETRY_SCHEDULED = "retry_scheduled"
    DEAD_LETTERED = "dead_lettered"
    LEASE_LOST = "lease_lost"


@dataclass(frozen=True)
class QueueDepth:
    ready: int
    in_flight: int
    delayed: int
    dead_lettered: int


class FairQueue:
    """Client of the queue for producers (enqueue) and workers (claim, extend, ack, fail, release)."""

    def __init__(
        self,
        redis: Redis,
        *,
        lease_seconds: float = 30.0,
        result_ttl_seconds: int = 3600,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.redis = redis
        self.lease_ms = int(lease_seconds * 1000)
        self.result_ttl_seconds = result_ttl_seconds
        self.retry = retry or RetryPolicy()
        self._enqueue = redis.register_script(_scripts.ENQUEUE)
        self._claim = redis.register_script(_scripts.CLAIM)
        self._extend = redis.register_script(_scripts.EXTEND)
        self._ack = redis.register_script(_scripts.ACK)
        self._claim_ready = redis.register_script(_scripts.CLAIM_READY)
        self._ack_and_claim = HotScript(redis, _scripts.ACK_AND_CLAIM)
        self._result_ttl_arg = str(result_ttl_seconds).encode()
        self._lease_ms_arg = str(self.lease_ms).encode()
        self._fail = redis.register_script(_scripts.FAIL)
        self._release = redis.register_script(_scripts.RELEASE)
        self._promote = redis.register_script(_scripts.PROMOTE)
        self._reap = redis.register_script(_scripts.REAP)
        self._replay = redis.register_script(_scripts.REPLAY)
        self._erase_tasks = redis.register_script(_scripts.ERASE_TASKS)
        self._interrupted_claims: set[str] = set()
        """Workers whose last claim failed midway, so their claiming list may hold a scope."""

    # --- producers -----------------------------------------------------------------------------
    def enqueue_args(self, task: task_pb2.Task) -> tuple[list[str], list[Any]]:
        scope = _scope_of(task)
        return (
            [keys.scope_queue_key(scope), keys.DISPATCHER, keys.task_dedup_key(task.id)],
            [task.SerializeToString(), scope, TASK_DEDUP_TTL_SECONDS],
        )

    async def enqueue(self, task: task_pb2.Task, *, client: Any = None) -> bool:
        """Queue a task at the tail of its scope. False when a task with this id was queued before.

        `client` may be a pipeline, to enqueue atomically with other writes (MULTI/EXEC).
        """
        k, a = self.enqueue_args(task)
        return bool(await self._enqueue(keys=k, args=a, client=client))

    # --- workers -------------------------------------------------------------------------------
    async def claim(self, worker_id: str, *, timeout: float = 1.0) -> Lease | None:
        """Wait up to `timeout` seconds for a runnable scope and lease it."""
        if worker_id not in self._interrupted_claims:
            # One round trip when a scope is ready; block (BLMOVE + CLAIM) only when none is.
            token = secrets.token_hex(16)
            ready = await self._claim_ready(
                keys=self._claim_ready_keys(), args=[*self._claim_ready_args(), token, self.lease_ms]
            )
            if ready:
                return self._lease(ready, token)
        claiming = keys.claiming_key(worker_id)
        try:
            scope_raw = None
            if worker_id in self._interrupted_claims:
                # The last claim broke off between BLMOVE and the claim script (Redis dropped, or the
                # call was cancelled): the scope may sit in our claiming list, where the reaper never
                # looks while we are alive. Finish that claim first.
                scope_raw = await self.redis.lindex(claiming, 0)
            if scope_raw is None:
                # redis-py types BLMOVE's timeout as int; Redis (>= 6) takes fractional seconds.
                scope_raw = await self.redis.blmove(keys.DISPATCHER, claiming, timeout, "LEFT", "RIGHT")  # type: ignore[arg-type]
            if scope_raw is None:
                self._interrupted_claims.discard(worker_id)
                return None
            scope = _text(scope_raw)
            token = secrets.token_hex(16)
            res = await self._claim(
                keys=[
                    claiming,
                    keys.scope_queue_key(scope),
                    keys.lease_key(scope),
                    keys.QUEUE_LEASES,
                    keys.QUEUE_DELIVERIES,
                ],
                args=[scope, token, self.lease_ms],
            )
        except BaseException:
            self._interrupted_claims.add(worker_id)
            raise
        self._interrupted_claims.discard(worker_id)
        if not res:
            return None
        head, deliveries = res
        return self._lease([scope, head, deliveries], token)

    @staticmethod
    def _claim_ready_keys() -> list[str]:
        return [keys.DISPATCHER, keys.QUEUE_LEASES, keys.QUEUE_DELIVERIES]

    @staticmethod
    def _claim_ready_args() -> list[str]:
        return [keys.SCOPE_QUEUE_PREFIX, keys.LEASE_PREFIX]

    @staticmethod
    def _lease(claimed: list[Any], token: str) -> Lease:
        """A Lease from a claim script's {scope, head envelope, deliveries}."""
        scope, head, deliveries = claimed
        task = task_pb2.Task()
        task.ParseFromString(head)
        return Lease(scope=_text(scope), token=token, task=task, deliveries=int(deliveries), claimed_at=time.time())

    async def extend(self, lease: Lease) -> bool:
        return bool(
            await self._extend(
                keys=[keys.lease_key(lease.scope), keys.QUEUE_LEASES], args=[lease.token, self.lease_ms, lease.scope]
            )
        )

    async def ack(self, lease: Lease, result: Mapping[str, Any]) -> bool:
        """Remove the finished head task and record its result (and queue wait). False if the lease was lost."""
        return bool(await self._ack(keys=self._ack_keys(lease), args=self._ack_args(lease, result)))

    async def ack_and_claim(self, lease: Lease, result: Mapping[str, Any]) -> tuple[bool, Lease | None]:
        """`ack`, then claim a ready scope for the same worker, in one round trip.

        Returns (acknowledged, the next lease or None when no scope was ready). Do not retry it after
        a connection error (the claim may have happened): settle with `ack` instead.
        """
        token = secrets.token_hex(16)
        res = await self._ack_and_claim(
            b"1",  # one key: the task result key
            keys.task_result_key(lease.scope, lease.task.id),
            lease.scope,
            lease.token,
            self._result_json(lease, result),
            self._result_ttl_arg,
            token,
            self._lease_ms_arg,
        )
        if isinstance(res, int):  # nothing was ready: the reply is the acknowledgement alone
            return bool(res), None
        acked, deliveries, scope_len, rest = res.split(b" ", 3)
        n = int(scope_len)
        return acked == b"1", self._lease([rest[:n], rest[n:], deliveries], token)

    @staticmethod
    def _ack_keys(lease: Lease) -> list[str]:
        return [
            keys.lease_key(lease.scope),
            keys.QUEUE_LEASES,
            keys.scope_queue_key(lease.scope),
            keys.DISPATCHER,
            keys.task_result_key(lease.scope, lease.task.id),
            keys.QUEUE_DELIVERIES,
        ]

    def _ack_args(self, lease: Lease, result: Mapping[str, Any]) -> list[Any]:
        return [lease.token, lease.scope, self._result_json(lease, result), self.result_ttl_seconds]

    @staticmethod
    def _result_json(lease: Lease, result: Mapping[str, Any]) -> str:
        """The result record (it also records the task's queue wait, enqueue to this attempt's claim,
        so that waits can be read per tenant and per task, not only as a histogram)."""
        record: dict[str, Any] = {"task_id": lease.task.id, "status": "done", **result}
        if lease.task.HasField("enqueued_at") and lease.claimed_at:
            wait_s = lease.claimed_at - lease.task.enqueued_at.ToNanoseconds() / 1e9
            record["queue_wait_ms"] = round(max(0.0, wait_s) * 1000, 3)
        return json.dumps(record, default=str)

    async def fail(self, lease: Lease, error: str, *, retryable: bool = True, outage: bool = False) -> FailOutcome:
        """Record a failed attempt: back off and retry, or dead-letter once attempts are spent.

        `outage`: the attempt failed because a dependency is unavailable; such failures get the
        larger budget `RetryPolicy.max_outage_attempts`.
        """
        task = task_pb2.Task()
        task.CopyFrom(lease.task)
        task.attempt = lease.task.attempt + 1
        task.last_error = error[:2000]
        exhausted = (not retryable) or task.attempt >= self.retry.attempts_for(outage=outage)
        delay_ms = -1 if exhausted else int(self.retry.backoff.compute(task.attempt) * 1000)
        status = "dead_lettered" if exhausted else "retry_scheduled"
        result = json.dumps(
            {
                "task_id": task.id,
                "status": status,
                "attempt": task.attempt,
                "error": task.last_error,
                "retry_in_ms": max(delay_ms, 0),
            }
        )
        code = await self._fail(
            keys=[
                keys.lease_key(lease.scope),
                keys.QUEUE_LEASES,
                keys.scope_queue_key(lease.scope),
                keys.QUEUE_DELAYED,
                keys.DISPATCHER,
                keys.QUEUE_DEAD_LETTERS,
                keys.task_result_key(lease.scope, task.id),
                keys.QUEUE_DELIVERIES,
            ],
            args=[lease.token, lease.scope, task.SerializeToString(), delay_ms, result, self.result_ttl_seconds],
        )
        return {1: FailOutcome.RETRY_SCHEDULED, 2: FailOutcome.DEAD_LETTERED}.get(int(code), FailOutcome.LEASE_LOST)

    async def release(self, lease: Lease) -> bool:
        """Give the scope back without counting an attempt (shutdown)."""
        return bool(
            await self._release(
                keys=[
                    keys.lease_key(lease.scope),
                    keys.QUEUE_LEASES,
                    keys.DISPATCHER,
                    keys.scope_queue_key(lease.scope),
                    keys.QUEUE_DELIVERIES,
                ],
                args=[lease.token, lease.scope],
            )
        )

    # --- maintenance ---------------------------------------------------------------------------
    async def heartbeat(self, worker_id: str) -> None:
        t = await self.redis.time()
        await self.redis.zadd(keys.QUEUE_WORKERS, {worker_id: int(t[0]) * 1000 + int(t[1]) // 1000})

    async def forget_worker(self, worker_id: str) -> None:
        """A worker that stops cleanly returns anything stranded in its claiming list."""
        claiming = keys.claiming_key(worker_id)
        while await self.redis.lmove(claiming, keys.DISPATCHER, "LEFT", "LEFT") is not None:
            pass
        await self.redis.zrem(keys.QUEUE_WORKERS, worker_id)

    async def promote_due(self, *, limit: int = 1000) -> int:
        return int(await self._promote(keys=[keys.QUEUE_DELAYED, keys.DISPATCHER], args=[limit]))

    async def reap(self, *, worker_stale_ms: int | None = None) -> tuple[int, int]:
        """Requeue scopes of expired leases and of dead workers' claiming lists. (-1, -1): another process holds the reaper lock."""
        stale = worker_stale_ms if worker_stale_ms is not None else 3 * self.lease_ms
        res = await self._reap(
            keys=[keys.QUEUE_LEASES, keys.DISPATCHER, keys.QUEUE_WORKERS, keys.QUEUE_REAPER_LOCK],
            args=[keys.LEASE_PREFIX, keys.CLAIMING_PREFIX, stale, secrets.token_hex(8), max(500, self.lease_ms // 3)],
        )
        return int(res[0]), int(res[1])

    async def depth(self) -> QueueDepth:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.llen(keys.DISPATCHER)
            pipe.zcard(keys.QUEUE_LEASES)
            pipe.zcard(keys.QUEUE_DELAYED)
            pipe.llen(keys.QUEUE_DEAD_LETTERS)
            ready, in_flight, delayed, dead = await pipe.execute()
        return QueueDepth(ready=ready, in_flight=in_flight, delayed=delayed, dead_lettered=dead)

    async def result(self, scope: str, task_id: str) -> dict[str, Any] | None:
        raw = await self.redis.get(keys.task_result_key(scope, task_id))
        return json.loads(raw) if raw else None

    # --- dead letters --------------------------------------------------------------------------
    async def dead_letters(self, *, start: int = 0, count: int = 100) -> list[task_pb2.Task]:
        raws = await self.redis.lrange(keys.QUEUE_DEAD_LETTERS, start, start + count - 1)
        out = []
        for raw in reply_bytes_list(raws):
            t = task_pb2.Task()
            t.ParseFromString(raw)
            out.append(t)
        return out

    async def replay_dead_letters(self, *, task_ids: set[str] | None = None) -> int:
        """Requeue dead-lettered tasks (all, or those named) with a fresh attempt count."""
        replayed = 0
        for raw in reply_bytes_list(await self.redis.lrange(keys.QUEUE_DEAD_LETTERS, 0, -1)):
            task = task_pb2.Task()
            task.ParseFromString(raw)
            if task_ids is not None and task.id not in task_ids:
                continue
            fresh = task_pb2.Task()
            fresh.CopyFrom(task)
            fresh.attempt = 0
            scope = _scope_of(task)
            removed = await self._replay(
                keys=[
                    keys.QUEUE_DEAD_LETTERS,
                    keys.scope_queue_key(scope),
                    keys.DISPATCHER,
                    keys.task_dedup_key(task.id),
                ],
                args=[raw, fresh.SerializeToString(), scope, TASK_DEDUP_TTL_SECONDS],
            )
            replayed += int(removed)
        return replayed

    # --- erasure -------------------------------------------------------------------------------
    async def user_scopes(self, tenant_id: str, user_id: str) -> set[str]:
        """Scope ids of the user anywhere in the queue: own lists, dispatcher, leases, delayed, deliveries."""
        prefix = keys.user_scope_prefix(tenant_id, user_id)
        patterns = keys.user_key_patterns(tenant_id, user_id)
        found: set[str] = set()
        for kind, strip in (("queue", keys.SCOPE_QUEUE_PREFIX), ("lease", keys.LEASE_PREFIX)):
            async for k in self.redis.scan_iter(match=patterns[kind], count=500):
                found.add(_text(k)[len(strip) :])
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lrange(keys.DISPATCHER, 0, -1)
            pipe.zrange(keys.QUEUE_LEASES, 0, -1)
            pipe.zrange(keys.QUEUE_DELAYED, 0, -1)
            pipe.hkeys(keys.QUEUE_DELIVERIES)
            lists = await pipe.execute()
        for members in lists:
            found.update(m for m in map(_text, members) if m.startswith(prefix))
        return found

    async def erase_tasks(self, scope: str, erased: Callable[[task_pb2.Task], bool]) -> tuple[list[task_pb2.Task], int]:
        """Remove the scope's tasks for which `erased` is true, keeping the others in order (ERASE_TASKS).
        Returns (removed tasks, lease keys deleted). A failed head is rewritten in place (its attempt
        count), so the removal is checked against a fresh read until no such task is left."""
        removed: dict[str, task_pb2.Task] = {}
        leased = 0
        for _ in range(_ERASE_ROUNDS):
            doomed = [
                (raw, task)
                for raw, task in _parsed(reply_bytes_list(await self.redis.lrange(keys.scope_queue_key(scope), 0, -1)))
                if erased(task)
            ]
            if not doomed:
                break
            gone, lease_keys = await self._erase_tasks(
                keys=[
                    keys.scope_queue_key(scope),
                    keys.DISPATCHER,
                    keys.QUEUE_DELAYED,
                    keys.QUEUE_LEASES,
                    keys.lease_key(scope),
                    keys.QUEUE_DELIVERIES,
                    keys.QUEUE_WORKERS,
                ],
                args=[scope, keys.CLAIMING_PREFIX, *(raw for raw, _ in doomed)],
            )
            leased += int(lease_keys)
            removed.update((task.id, task) for _, task in _parsed(gone))
        return list(removed.values()), leased

    async def erase_dead_letters(self, erased: Callable[[task_pb2.Task], bool]) -> list[task_pb2.Task]:
        """Remove the dead-lettered tasks for which `erased` is true (LREM of each exact envelope). Returns those removed."""
        removed = []
        for raw, task in _parsed(reply_bytes_list(await self.redis.lrange(keys.QUEUE_DEAD_LETTERS, 0, -1))):
            # redis-py types LREM's value as str; any encodable value (these bytes) is sent as is.
            if erased(task) and int(await self.redis.lrem(keys.QUEUE_DEAD_LETTERS, 0, raw)) > 0:  # type: ignore[arg-type]
                removed.append(task)
        return removed


_ERASE_ROUNDS = 5


def _parsed(raws: list[bytes]) -> list[tuple[bytes, task_pb2.Task]]:
    out = []
    for raw in raws:
        task = task_pb2.Task()
        task.ParseFromString(raw)
        out.append((raw, task))
    return out


def _scope_of(task: task_pb2.Task) -> str:
    s = task.scope
    return keys.scope_id(s.tenant_id, s.user_id, s.agent_id)


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw
