"""The short-term window: the recent events of a scope, in Redis, oldest first."""

from __future__ import annotations

from typing import Sequence

from redis.asyncio import Redis

from athena import keys
from athena.events import scope_key
from athena.memory.v1 import memory_pb2

__all__ = ["APPEND_TO_WINDOW_FN", "APPLIED_MARKER_TTL_SECONDS", "CUT_SEGMENT", "ShortTermWindow", "parse_event"]

APPEND_TO_WINDOW_FN = """
-- append_to_window(window list, the event's applied marker, event bytes, window cap (events),
-- marker ttl (s)): appends the event once, however often a retried StoreEvent asks.
-- 1 if appended, 0 if not.
local function append_to_window(window, marker, event, cap, ttl)
  if not redis.call('SET', marker, '1', 'NX', 'EX', ttl) then
    return 0
  end
  redis.call('RPUSH', window, event)
  redis.call('LTRIM', window, -tonumber(cap), -1)
  return 1
end
"""
"""A Lua function, for the scripts that append events along with their other writes (ingest's APPLY_EVENTS)."""

APPLIED_MARKER_TTL_SECONDS = 7 * 24 * 3600
"""How long an event's applied marker keeps a retried StoreEvent from appending it again."""


class ShortTermWindow:
    def __init__(self, redis: Redis, *, max_events: int = 200) -> None:
        self.redis = redis
        self.max_events = max_events
        self._cut = redis.register_script(CUT_SEGMENT)

    def append_args(self, event: memory_pb2.Event) -> tuple[str, str, bytes]:
        """What `append_to_window` (APPEND_TO_WINDOW_FN) takes for this event: its window list, its
        applied marker and its bytes; the cap is `max_events`, the marker's ttl APPLIED_MARKER_TTL_SECONDS."""
        scope = scope_key(event.scope)
        return keys.stm_window_key(scope), keys.stm_applied_key(scope, event.id), event.SerializeToString()

    async def read(self, scope: memory_pb2.Scope, *, limit: int = 0) -> list[memory_pb2.Event]:
        start = -limit if limit > 0 else 0
        raws: Sequence[bytes] = await self.redis.lrange(keys.stm_window_key(scope_key(scope)), start, -1)
        return [parse_event(raw) for raw in raws]


    async def read_raw(self, scope: memory_pb2.Scope) -> list[bytes]:
        return list(await self.redis.lrange(keys.stm_window_key(scope_key(scope)), 0, -1))

    async def cut(
        self, scope: memory_pb2.Scope, *, head: Sequence[bytes], handoff_key: str, segment: bytes, decision: str
    ) -> bool:
        """Remove `head` (the window's first events, as read) and park `segment` at `handoff_key`, atomically."""
        return bool(
            await self._cut(
                keys=[keys.stm_window_key(scope_key(scope)), handoff_key],
                args=[len(head), head[0], head[-1], segment, decision],
            )
        )


def parse_event(raw: bytes) -> memory_pb2.Event:
    event = memory_pb2.Event()
    event.ParseFromString(raw)
    return event


CUT_SEGMENT = """
-- KEYS[1] window list   KEYS[2] handoff key of the task that cuts
-- ARGV[1] how many events to cut from the head   ARGV[2] the first of them, as stored
-- ARGV[3] the last of them, as stored   ARGV[4] the segment to hand off (bytes)
-- ARGV[5] the decision that cut it (JSON)
-- Cuts the completed segment out of the window and parks it for hand-off, in one step, and only if
-- the window still starts with exactly those events (fencing: a retried task never cuts twice).
-- Returns 1 when cut, 0 when the window changed.
local n = tonumber(ARGV[1])
if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[2] or redis.call('LINDEX', KEYS[1], n - 1) ~= ARGV[3] then
  return 0
end
redis.call('LTRIM', KEYS[1], n, -1)
redis.call('HSET', KEYS[2], 'segment', ARGV[4], 'decision', ARGV[5])
return 1
"""
