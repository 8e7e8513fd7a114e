"""The short-term window: the recent events of a scope, in Redis, oldest first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from athena import keys
from athena.errors import DependencyUnavailable
from athena.events import scope_key
from athena.internal.v1 import formation_pb2
from athena.redis_util import reply_bytes, reply_bytes_list
from athena_client.memory.v1 import memory_pb2

__all__ = [
    "APPEND_TO_WINDOW_FN",
    "APPLIED_MARKER_TTL_SECONDS",
    "CUT_SEGMENT",
    "FORGET_QUIET_AGENT",
    "REMOVE_EVENTS",
    "REWRITE_HANDOFF",
    "ShortTermWindow",
    "WindowSlice",
    "parse_event",
]

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


@dataclass(frozen=True)
class WindowSlice:
    """Consecutive events of a window, oldest first, as one read saw them."""

    start: int
    """The window index of the first of them (0: the window's oldest event) at that read."""
    events: list[memory_pb2.Event]


class ShortTermWindow:
    def __init__(self, redis: Redis, *, max_events: int = 200) -> None:
        self.redis = redis
        self.max_events = max_events
        self._cut = redis.register_script(CUT_SEGMENT)
        self._remove = redis.register_script(REMOVE_EVENTS)
        self._forget_quiet_agent = redis.register_script(FORGET_QUIET_AGENT)
        self._rewrite_handoff = redis.register_script(REWRITE_HANDOFF)

    def append_args(self, event: memory_pb2.Event) -> tuple[str, str, bytes]:
        """What `append_to_window` (APPEND_TO_WINDOW_FN) takes for this event: its window list, its
        applied marker and its bytes; the cap is `max_events`, the marker's ttl APPLIED_MARKER_TTL_SECONDS."""
        scope = scope_key(event.scope)
        return keys.stm_window_key(scope), keys.stm_applied_key(scope, event.id), event.SerializeToString()

    async def read(self, scope: memory_pb2.Scope, *, limit: int = 0) -> list[memory_pb2.Event]:
        start = -limit if limit > 0 else 0
        raws = reply_bytes_list(await self.redis.lrange(keys.stm_window_key(scope_key(scope)), start, -1))
        return [parse_event(raw) for raw in raws]

    async def read_newest(self, scope: memory_pb2.Scope, *, count: int) -> WindowSlice:
        """The window's newest `count` (>= 1) events (all, if it holds fewer), with their index: the
        length is read in the same transaction, so appends and cuts cannot slip between."""
        if count < 1:
            raise ValueError("count must be at least 1")  # LRANGE -0 -1 would be the whole window
        window = keys.stm_window_key(scope_key(scope))
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.llen(window)
            pipe.lrange(window, -count, -1)
            length, raws = await pipe.execute()
        return WindowSlice(start=length - len(raws), events=[parse_event(raw) for raw in raws])

    async def read_before(
        self, scope: memory_pb2.Scope, *, anchor_id: str, hint: int, count: int
    ) -> WindowSlice | None:
        """The `count` events just before the event `anchor_id` (fewer when the window starts sooner),
        oldest first; None when the anchor is no longer in the window. `hint` is the anchor's index
        when it was read: events enter a window only at its end and leave it anywhere, so the
        anchor is at `hint` still, or nearer the head. Paging (GetContext) reads backwards this way."""
        window = keys.stm_window_key(scope_key(scope))
        low = max(0, hint - count)
        raws = reply_bytes_list(await self.redis.lrange(window, low, hint))
        if len(raws) == hint - low + 1 and parse_event(raws[-1]).id == anchor_id:
            return WindowSlice(start=low, events=[parse_event(raw) for raw in raws[:-1]])
        return await self._find_before(window, anchor_id=anchor_id, hint=hint, count=count)

    async def _find_before(self, window: str, *, anchor_id: str, hint: int, count: int) -> WindowSlice | None:
        """read_before when events before the anchor left the window since `hint`: one read of
        everything up to `hint`, which holds the anchor if the window still does."""
        raws = reply_bytes_list(await self.redis.lrange(window, 0, hint))
        for at in range(len(raws) - 1, -1, -1):
            if parse_event(raws[at]).id == anchor_id:
                low = max(0, at - count)
                return WindowSlice(start=low, events=[parse_event(raw) for raw in raws[low:at]])
        return None

    async def read_raw(self, scope: memory_pb2.Scope) -> list[bytes]:
        return reply_bytes_list(await self.redis.lrange(keys.stm_window_key(scope_key(scope)), 0, -1))

    async def newest(self, scope_id: str) -> tuple[memory_pb2.Event | None, int]:
        """The window's newest event (None when empty) and how many events it holds, in one round trip."""
        window = keys.stm_window_key(scope_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lindex(window, -1)
            pipe.llen(window)
            raw, length = await pipe.execute()
        return (parse_event(raw) if raw is not None else None), int(length)

    async def user_event_count(self, tenant_id: str, user_id: str) -> int:
        """How many events the user's windows (all agents) hold now."""
        pattern = keys.user_key_patterns(tenant_id, user_id)["window"]
        windows = [k async for k in self.redis.scan_iter(match=pattern, count=500)]
        if not windows:
            return 0
        async with self.redis.pipeline(transaction=False) as pipe:
            for window in windows:
                pipe.llen(window)
            return sum(int(n) for n in await pipe.execute())

    async def erase(self, scope_id: str, erased: Callable[[memory_pb2.Event], bool]) -> int:
        """Remove the window's events for which `erased` is true, keeping the others in order
        (REMOVE_EVENTS: appends and cuts around it stay atomic). Returns how many were removed."""
        window = keys.stm_window_key(scope_id)
        doomed = [raw for raw in reply_bytes_list(await self.redis.lrange(window, 0, -1)) if erased(parse_event(raw))]
        if not doomed:
            return 0
        return int(await self._remove(keys=[window, keys.STM_ACTIVITY], args=[scope_id, *doomed]))

    async def forget_quiet_agents(self, tenant_id: str, user_id: str) -> int:
        """Take the user's agents that hold no open event (empty window, nothing parked) out of the
        user's agents set (erasure). Returns how many left it."""
        agents_key = keys.stm_user_agents_key(tenant_id, user_id)
        left = 0
        for raw in await self.redis.smembers(agents_key):
            agent_id = raw.decode() if isinstance(raw, bytes) else raw
            scope_id = keys.scope_id(tenant_id, user_id, agent_id)
            left += int(
                await self._forget_quiet_agent(
                    keys=[keys.stm_window_key(scope_id), keys.stm_parked_key(scope_id), agents_key], args=[agent_id]
                )
            )
        return left

    async def erase_from_handoff(self, handoff_key: str, erased: Callable[[memory_pb2.Event], bool]) -> bool:
        """Remove the events for which `erased` is true from a parked segment: the hand-off is deleted
        when none is left, else rewritten with the rest (same segment id). Returns whether it changed."""
        for _ in range(_REWRITE_ROUNDS):
            parked = await self.redis.hget(handoff_key, "segment")
            if parked is None:
                return False
            segment = formation_pb2.Segment()
            segment.ParseFromString(reply_bytes(parked))
            kept = [e for e in segment.events if not erased(e)]
            if len(kept) == len(segment.events):
                return False
            del segment.events[:]
            segment.events.extend(kept)
            rest = segment.SerializeToString() if kept else b""
            parked_set = keys.stm_parked_key(keys.stm_handoff_scope(handoff_key))
            if await self._rewrite_handoff(keys=[handoff_key, parked_set], args=[parked, rest]):
                return True
        raise DependencyUnavailable("redis", f"hand-off {handoff_key} kept changing while it was erased")

    async def cut(
        self, scope: memory_pb2.Scope, *, head: Sequence[bytes], handoff_key: str, segment: bytes, decision: str
    ) -> bool:
        """Remove `head` (the window's first events, as read) and park `segment` at `handoff_key`
        (listed in the scope's parked set, where search finds it), atomically."""
        scope_id = scope_key(scope)
        return bool(
            await self._cut(
                keys=[keys.stm_window_key(scope_id), handoff_key, keys.stm_parked_key(scope_id)],
                args=[len(head), head[0], head[-1], segment, decision],
            )
        )

    async def drop_handoff(self, scope: memory_pb2.Scope, handoff_key: str) -> None:
        """Delete a parked segment's hand-off key and its entry in the scope's parked set, in one
        transaction (formation answered for it, or the user was erased meanwhile)."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(handoff_key)
            pipe.srem(keys.stm_parked_key(scope_key(scope)), handoff_key)
            await pipe.execute()


def parse_event(raw: bytes) -> memory_pb2.Event:
    event = memory_pb2.Event()
    event.ParseFromString(raw)
    return event


CUT_SEGMENT = """
-- KEYS[1] window list   KEYS[2] handoff key of the task that cuts   KEYS[3] the scope's parked set
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
redis.call('SADD', KEYS[3], KEYS[2])
return 1
"""

REMOVE_EVENTS = """
-- KEYS[1] window list   KEYS[2] window activity zset
-- ARGV[1] scope id   ARGV[2..] events to remove, as stored
-- Erasure (ForgetUser): removes these events wherever they are in the window; the rest keep their
-- order. A window left empty leaves the activity zset too (nothing is left to flush).
-- Returns how many were removed.
local removed = 0
for i = 2, #ARGV do
  removed = removed + redis.call('LREM', KEYS[1], 0, ARGV[i])
end
if redis.call('LLEN', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return removed
"""

FORGET_QUIET_AGENT = """
-- KEYS[1] the scope's window   KEYS[2] the scope's parked set   KEYS[3] the user's agents set
-- ARGV[1] agent id
-- Erasure (ForgetUser): the agent leaves its user's agents set when it holds no open event any more
-- (an empty window and no parked segment). Returns 1 when it left, else 0.
if redis.call('LLEN', KEYS[1]) > 0 or redis.call('SCARD', KEYS[2]) > 0 then
  return 0
end
return redis.call('SREM', KEYS[3], ARGV[1])
"""

REWRITE_HANDOFF = """
-- KEYS[1] hand-off hash   KEYS[2] its scope's parked set
-- ARGV[1] the parked segment, as read   ARGV[2] what replaces it (empty: delete the hand-off)
-- Erasure (ForgetUser) of some of a parked segment's events, only if the segment is still the one
-- read. Returns 1 when done, 0 when the hand-off changed (read it again).
if redis.call('HGET', KEYS[1], 'segment') ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], KEYS[1])
else
  redis.call('HSET', KEYS[1], 'segment', ARGV[2])
end
return 1
"""

_REWRITE_ROUNDS = 5
