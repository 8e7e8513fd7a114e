"""The idle flush: a conversation that simply stops is still formed into a chain.

Ingest's Redis script records, per scope, when the newest event reached its window (the activity
zset, `keys.STM_ACTIVITY`). Every cognition process sweeps the zset's low end: each scope quiet for
STM_IDLE_FLUSH_SECONDS gets the same flush task MemoryService.FlushWindow queues (trigger "idle").
Taking the scope off the zset and queueing its flush is one script that first checks the scope's
activity is still the one read, so with several replicas exactly one flush is queued per quiet
window, and an event appended meanwhile keeps the scope (it is not quiet any more). The state lives
in Redis, so a restart loses nothing, and a sweep reads only the due scopes (a range of the zset),
never every key, however many idle scopes there are.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import cast

from redis.asyncio import Redis

from athena import keys
from athena.errors import DependencyUnavailable
from athena.queue import ENQUEUE_FN, TASK_DEDUP_TTL_SECONDS, window_flush_task
from athena.redis_util import redis_unavailable
from athena.stm import ShortTermWindow

__all__ = ["IDLE_FLUSH", "IdleFlush"]

log = logging.getLogger("athena.cognition.idle_flush")

IDLE_FLUSH = (
    ENQUEUE_FN
    + """
-- KEYS[1] window activity zset   KEYS[2] dispatcher   KEYS[3] scope queue   KEYS[4] task dedup key
-- ARGV[1] scope id   ARGV[2] its activity as read (epoch ms)   ARGV[3] the flush task envelope
-- (empty: the window was empty)   ARGV[4] task dedup ttl (s)
-- Takes a quiet scope off the activity zset and queues its flush, only if no event reached its window
-- since its activity was read. Returns 1 when the flush was queued, else 0.
local activity = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not activity or tonumber(activity) ~= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[3] == '' then
  return 0
end
return enqueue(KEYS[3], KEYS[2], KEYS[4], ARGV[3], ARGV[1], ARGV[4])
"""
)


@dataclass
class IdleFlush:
    redis: Redis
    window: ShortTermWindow
    idle_seconds: float
    """STM_IDLE_FLUSH_SECONDS (> 0)."""
    batch: int = 200
    """Due scopes read per round trip of a sweep."""
    _script: object = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._script = self.redis.register_script(IDLE_FLUSH)

    @property
    def interval(self) -> float:
        """Seconds between sweeps: a quarter of the idle time, within 0.2-5 s."""
        return max(0.2, min(5.0, self.idle_seconds / 4))

    async def sweep(self, *, now: float | None = None) -> int:
        """Queue the flush of every scope quiet since `now` - idle_seconds. Returns how many were queued."""
        cutoff = int(((now if now is not None else time.time()) - self.idle_seconds) * 1000)
        queued = 0
        while True:
            with redis_unavailable():
                # withscores=True: (member, score) pairs; redis-py types the reply as any of its forms.
                due = cast(
                    list[tuple[bytes | str, float]],
                    await self.redis.zrangebyscore(
                        keys.STM_ACTIVITY, "-inf", cutoff, start=0, num=self.batch, withscores=True
                    ),
                )
            for member, activity in due:
                queued += await self._flush(member.decode() if isinstance(member, bytes) else member, int(activity))
            if len(due) < self.batch:
                return queued

    async def _flush(self, scope_id: str, activity: int) -> int:
        with redis_unavailable():
            newest, _ = await self.window.newest(scope_id)
        task = (
            window_flush_task(scope=newest.scope, through_event_id=newest.id, trigger="idle")
            if newest is not None
            else None
        )
        with redis_unavailable():
            done = await self._script(  # type: ignore[operator]
                keys=[
                    keys.STM_ACTIVITY,
                    keys.DISPATCHER,
                    keys.scope_queue_key(scope_id),
                    keys.task_dedup_key(task.id if task else ""),
                ],
                args=[scope_id, activity, task.SerializeToString() if task else b"", TASK_DEDUP_TTL_SECONDS],
            )
        return int(done)

    async def run_forever(self) -> None:
        """Sweep every `interval` seconds until cancelled; an outage is logged and the sweep tried again."""
        while True:
            try:
                queued = await self.sweep()
                if queued:
                    log.info("queued the idle flush of %d windows", queued)
            except DependencyUnavailable as exc:
                log.warning("idle flush sweep skipped: %s", exc)
            await asyncio.sleep(self.interval)
