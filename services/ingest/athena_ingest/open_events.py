"""The events of a search's scope that are in no chain yet, read from Redis for formation to rank
beside the chains (docs/formation.md, "Open events").

They are the short-term windows (the scope's, or for an empty agent id every window of the user: the
agents in `keys.stm_user_agents_key`) and the parked segments (cut by cognition, not yet accepted by
formation: listed per scope in `keys.stm_parked_key`). One script reads them all in one step: a cut
moves events from a window to a hand-off atomically, so each event is read exactly once. Events the
user's erasure tombstone covers are left out, as the erasure would take them out anyway.

Formation owns the ranking and ingest owns Redis, so ingest reads and formation ranks; what is sent
is bounded (the newest events, OPEN_MAX_EVENTS and OPEN_MAX_BYTES) so the hop and the answer stay far
under gRPC's message limit however large a window grows with the workers off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from athena import keys
from athena.internal.v1 import formation_pb2
from athena.redis_util import redis_unavailable
from athena.stm import parse_event
from athena.tombstones import erases, millis
from athena_client.memory.v1 import memory_pb2

__all__ = ["OPEN_MAX_BYTES", "OPEN_MAX_EVENTS", "READ_OPEN_EVENTS", "OpenEvents", "newest_events"]

OPEN_MAX_EVENTS = 200
"""Most open events sent with one search, the newest: with the workers on a window holds at most
STM_MAX_EVENTS_BEFORE_FLUSH events; with them off it grows, and only its newest are searched."""
OPEN_MAX_BYTES = 1024 * 1024
"""Most bytes of open events sent with one search, the newest: the request to formation and the
answer (whose WINDOW hits hold at most these events) stay far under gRPC's 4 MiB message limit."""

READ_OPEN_EVENTS = """
-- KEYS[1] the user's agents set   KEYS[2] the user's erasure tombstone
-- ARGV[1] the agent id (empty: every agent in KEYS[1])   ARGV[2] the user's window key prefix
-- ARGV[3] the user's parked-set key prefix   ARGV[4] most events read per window (its newest)
-- Reads each window's newest events and each parked segment in one step (a cut moves events from a
-- window to a hand-off atomically: each event is read once). An entry of a parked set whose hand-off
-- is gone is removed. Returns {tombstone or '', {{agent id, {events}}, ...}, {segments}}.
local agents
if ARGV[1] ~= '' then
  agents = {ARGV[1]}
else
  agents = redis.call('SMEMBERS', KEYS[1])
end
local windows = {}
local segments = {}
for _, agent in ipairs(agents) do
  windows[#windows + 1] = {agent, redis.call('LRANGE', ARGV[2] .. agent, -tonumber(ARGV[4]), -1)}
  local parked = ARGV[3] .. agent
  for _, handoff in ipairs(redis.call('SMEMBERS', parked)) do
    local segment = redis.call('HGET', handoff, 'segment')
    if segment then
      segments[#segments + 1] = segment
    else
      redis.call('SREM', parked, handoff)
    end
  end
end
return {redis.call('GET', KEYS[2]) or '', windows, segments}
"""


class OpenEvents:
    """Reads the open events of a search's scope (module docstring)."""

    def __init__(self, redis: Redis, *, max_events: int = OPEN_MAX_EVENTS, max_bytes: int = OPEN_MAX_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._read = redis.register_script(READ_OPEN_EVENTS)

    async def read(self, scope: memory_pb2.Scope) -> list[formation_pb2.Segment]:
        """Each window as a segment with an empty id, then each parked segment as cut; only their
        newest events within the bounds, none that the user's tombstone erases."""
        tenant_id, user_id = scope.tenant_id, scope.user_id
        user = keys.user_scope_prefix(tenant_id, user_id)
        with redis_unavailable():
            tombstone, windows, parked = await self._read(
                keys=[keys.stm_user_agents_key(tenant_id, user_id), keys.erasure_key(tenant_id, user_id)],
                args=[scope.agent_id, keys.stm_window_key(user), keys.stm_parked_key(user), self.max_events],
            )
        segments = [_window(tenant_id, user_id, agent, raws) for agent, raws in windows]
        segments += [_segment(raw) for raw in parked]
        return newest_events(
            segments,
            erased_at=float(tombstone) if tombstone else None,
            max_events=self.max_events,
            max_bytes=self.max_bytes,
        )


def newest_events(
    segments: Sequence[formation_pb2.Segment], *, erased_at: float | None, max_events: int, max_bytes: int
) -> list[formation_pb2.Segment]:
    """The segments with only their newest events (by stored_at) that fit `max_events` and
    `max_bytes` together, and none that a tombstone at `erased_at` erases; segments left empty are dropped."""
    if (
        erased_at is None
        and sum(len(s.events) for s in segments) <= max_events
        and sum(s.ByteSize() for s in segments) <= max_bytes
    ):
        return [s for s in segments if s.events]  # within the bounds (the common case: a window of a few turns)
    events = [
        (millis(event.stored_at), s, i, event.ByteSize())
        for s, segment in enumerate(segments)
        for i, event in enumerate(segment.events)
        if not erases(erased_at, event.stored_at)
    ]
    events.sort(key=lambda e: (-e[0], -e[1], -e[2]))
    kept: set[tuple[int, int]] = set()
    size = 0
    for _, s, i, n in events:
        if len(kept) >= max_events or size + n > max_bytes:
            break
        kept.add((s, i))
        size += n
    out = []
    for s, segment in enumerate(segments):
        chosen = [e for i, e in enumerate(segment.events) if (s, i) in kept]
        if chosen:
            trimmed = formation_pb2.Segment()
            trimmed.CopyFrom(segment)
            del trimmed.events[:]
            trimmed.events.extend(chosen)
            out.append(trimmed)
    return out


def _window(tenant_id: str, user_id: str, agent_id: Any, raws: Sequence[bytes]) -> formation_pb2.Segment:
    agent = agent_id.decode() if isinstance(agent_id, bytes) else str(agent_id)
    return formation_pb2.Segment(
        scope=memory_pb2.Scope(tenant_id=tenant_id, user_id=user_id, agent_id=agent),
        events=[parse_event(r) for r in raws],
    )


def _segment(raw: bytes) -> formation_pb2.Segment:
    segment = formation_pb2.Segment()
    segment.ParseFromString(raw)
    return segment
