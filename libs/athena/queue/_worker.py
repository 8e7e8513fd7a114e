"""A pool of async workers consuming the fair queue, with lease renewal, timeouts and graceful stop."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from athena.errors import DependencyUnavailable, PermanentTaskError
from athena.internal.v1 import task_pb2
from athena.metrics import QUEUE_DEPTH, QUEUE_WAIT_SECONDS, TASK_OUTCOMES, TASK_RETRIES, TASK_SECONDS
from athena.queue._backoff import ExponentialFullJitter
from athena.queue._queue import FailOutcome, FairQueue, Lease
from athena.tracing import consumer_span

__all__ = ["Handler", "WorkerPool"]

log = logging.getLogger("athena.queue.worker")

Handler = Callable[[task_pb2.Task], Awaitable[Mapping[str, Any]]]
"""Runs one task and returns what goes into its task_results key. Raise to fail the attempt."""

_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, ConnectionError, OSError)


class WorkerPool:
    """`count` workers in this process, plus one maintenance loop (promote delayed retries, reap)."""

    def __init__(
        self,
        queue: FairQueue,
        handler: Handler,
        *,
        count: int = 2,
        task_timeout: float = 300.0,
        claim_timeout: float = 1.0,
        maintenance_interval: float = 0.5,
        name: str | None = None,
    ) -> None:
        self.queue = queue
        self.handler = handler
        self.task_timeout = task_timeout
        self.claim_timeout = claim_timeout
        self.maintenance_interval = maintenance_interval
        prefix = name or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.worker_ids = [f"{prefix}-{i}" for i in range(count)]
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._in_flight: dict[str, asyncio.Task[Any]] = {}
        self._reconnect = ExponentialFullJitter(base=0.1, cap=5.0)
        self.on_outcome: Callable[[str, task_pb2.Task, float], None] | None = None
        """Optional hook (outcome, task, seconds) for metrics."""

    async def start(self) -> None:
        self._stopping.clear()
        # Heartbeat before the first BLMOVE: the reaper only recovers claiming lists of workers it
        # knows, so a worker dying between its first BLMOVE and first heartbeat would strand a scope.
        with suppress(*_REDIS_DOWN):
            for wid in self.worker_ids:
                await self.queue.heartbeat(wid)
        for wid in self.worker_ids:
            self._tasks.append(asyncio.create_task(self._run_worker(wid), name=f"worker {wid}"))
        self._tasks.append(asyncio.create_task(self._maintain(), name="queue maintenance"))

    async def stop(self, *, grace: float = 20.0) -> None:
        """Stop claiming; let tasks in flight finish within `grace`, then release their leases."""
        self._stopping.set()
        if self._in_flight:
            await asyncio.wait(list(self._in_flight.values()), timeout=grace)
        for t in list(self._in_flight.values()):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for wid in self.worker_ids:
            with suppress(*_REDIS_DOWN):
                await self.queue.forget_worker(wid)

    @property
    def busy(self) -> int:
        return len(self._in_flight)

    async def _maintain(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                for wid in self.worker_ids:
                    await self.queue.heartbeat(wid)
                await self.queue.promote_due()
                await self.queue.reap()
                depth = await self.queue.depth()
                for state, value in (
                    ("ready", depth.ready),
                    ("in_flight", depth.in_flight),
                    ("delayed", depth.delayed),
                    ("dead_lettered", depth.dead_lettered),
                ):
                    QUEUE_DEPTH.labels(state).set(value)
                failures = 0
            except _REDIS_DOWN as exc:
                failures += 1
                log.warning("queue maintenance: redis unavailable (%s)", exc)
                await self._sleep(self._reconnect.compute(failures))
                continue
            await self._sleep(self.maintenance_interval)

    async def _sleep(self, seconds: float) -> None:
        with suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)

    async def _run_worker(self, worker_id: str) -> None:
        failures = 0
        lease: Lease | None = None  # the next task, when claimed together with the last acknowledgement
        while not self._stopping.is_set():
            try:
                if lease is None:
                    lease = await self.queue.claim(worker_id, timeout=self.claim_timeout)
                failures = 0
            except _REDIS_DOWN as exc:
                failures += 1
                log.warning("worker %s: redis unavailable (%s)", worker_id, exc)
                await self._sleep(self._reconnect.compute(failures))
                continue
            if lease is None:
                continue
            if self._stopping.is_set():
                # claimed while stop() ran: stop() no longer waits for new work, so give it back
                with suppress(*_REDIS_DOWN):
                    await self.queue.release(lease)
                return
            lease = await self._process(worker_id, lease)
        if lease is not None:  # claimed with the last ack while stop() ran: give it back
            with suppress(*_REDIS_DOWN):
                await self.queue.release(lease)

    async def _process(self, worker_id: str, lease: Lease) -> Lease | None:
        task = lease.task
        if task.HasField("enqueued_at"):
            QUEUE_WAIT_SECONDS.observe(max(0.0, time.time() - task.enqueued_at.ToNanoseconds() / 1e9))
        with consumer_span(
            trace_context=task.trace_context, task_id=task.id, task_type=task.type, attempt=task.attempt
        ):
            return await self._attempt(worker_id, lease)

    async def _attempt(self, worker_id: str, lease: Lease) -> Lease | None:
        """Run the leased task and settle it. Returns the worker's next lease if one came with the ack."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        if lease.deliveries > self.queue.retry.stall_limit():
            await self._settle_failure(
                lease, f"stalled: delivered {lease.deliveries} times without an outcome", retryable=False
            )
            self._report("stalled", lease.task, 0.0)
            return None
        run = asyncio.create_task(asyncio.wait_for(self.handler(lease.task), self.task_timeout))
        self._in_flight[worker_id] = run
        keeper = asyncio.create_task(self._keep_lease(lease, run))
        try:
            result = await run
        except asyncio.CancelledError:
            # Shutdown past the grace period, or the lease was lost: give the task back uncounted.
            with suppress(*_REDIS_DOWN):
                await self.queue.release(lease)
            self._report("released", lease.task, loop.time() - started)
            return None
        except PermanentTaskError as exc:
            await self._settle_failure(lease, f"{type(exc).__name__}: {exc}", retryable=False)
            self._report("failed", lease.task, loop.time() - started)
            return None
        except Exception as exc:  # any other failure is retried with backoff
            msg = "task timed out" if isinstance(exc, asyncio.TimeoutError) else f"{type(exc).__name__}: {exc}"
            log.warning("task %s failed (attempt %d): %s", lease.task.id, lease.task.attempt + 1, msg)
            await self._settle_failure(lease, msg, retryable=True, outage=isinstance(exc, DependencyUnavailable))
            self._report("failed", lease.task, loop.time() - started)
            return None
        finally:
            keeper.cancel()
            self._in_flight.pop(worker_id, None)
        following = await self._acknowledge(lease, result)
        self._report("done", lease.task, loop.time() - started)
        return following

    async def _acknowledge(self, lease: Lease, result: Mapping[str, Any]) -> Lease | None:
        """Ack and take the next ready task in one round trip; after a Redis error, settle with the plain
        ack (idempotent: a lost lease writes nothing). A scope the failed call may have leased is
        recovered by the reaper when that lease expires."""
        if not self._stopping.is_set():
            try:
                return (await self.queue.ack_and_claim(lease, result))[1]
            except _REDIS_DOWN:
                pass
        await self._settle(lambda: self.queue.ack(lease, result))
        return None

    async def _settle_failure(self, lease: Lease, error: str, *, retryable: bool, outage: bool = False) -> None:
        outcome = await self._settle(lambda: self.queue.fail(lease, error, retryable=retryable, outage=outage))
        if outcome == FailOutcome.RETRY_SCHEDULED:
            TASK_RETRIES.labels(lease.task.type).inc()
        if outcome == FailOutcome.DEAD_LETTERED:
            TASK_OUTCOMES.labels(lease.task.type, "dead_lettered").inc()
            log.error("task %s dead-lettered: %s", lease.task.id, error)

    async def _settle(self, op: Callable[[], Awaitable[Any]]) -> Any:
        # Retry the outcome write through a Redis outage: the lease fences a late write, and if the
        # lease expired meanwhile the task simply runs again (handlers are idempotent).
        failures = 0
        while True:
            try:
                return await op()
            except _REDIS_DOWN as exc:
                failures += 1
                if failures > 20:
                    log.error("giving up settling a task after redis errors: %s", exc)
                    return None
                await asyncio.sleep(self._reconnect.compute(failures))

    async def _keep_lease(self, lease: Lease, run: asyncio.Task[Any]) -> None:
        interval = self.queue.lease_ms / 3000
        while not run.done():
            await asyncio.sleep(interval)
            try:
                if not await self.queue.extend(lease):
                    log.warning("lease on %s lost; abandoning task %s", lease.scope, lease.task.id)
                    run.cancel()
                    return
            except _REDIS_DOWN:
                continue

    def _report(self, outcome: str, task: task_pb2.Task, seconds: float) -> None:
        TASK_OUTCOMES.labels(task.type, outcome).inc()
        TASK_SECONDS.labels(task.type).observe(seconds)
        if self.on_outcome is not None:
            self.on_outcome(outcome, task, seconds)
