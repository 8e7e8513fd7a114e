"""Ingest's Redis step: a batch of stored events into their windows and their chain checks onto the
queue, in one script call.

One EVALSHA per group commit instead of WATCH + MGET + MULTI + two scripts per event + EXEC: the
tombstone check runs inside the script, which Redis runs atomically, so a ForgetUser that writes its
tombstone is either wholly before the script (its user's events are dropped) or wholly after it (its
erasure then removes what the script appended). Each event's writes are exactly those of
`append_to_window` and `enqueue` (athena.stm, athena.queue), so a repeat is still a no-op per event id
and task id. Keys are passed in ARGV, as the queue's scripts build theirs from prefixes: one Redis
server, not a cluster (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime

from redis.asyncio import Redis

from athena import keys
from athena.queue import ENQUEUE_FN, TASK_DEDUP_TTL_SECONDS, FairQueue, chain_check_task
from athena.redis_util import redis_unavailable
from athena.stm import APPEND_TO_WINDOW_FN, APPLIED_MARKER_TTL_SECONDS, ShortTermWindow
from athena.tombstones import millis
from athena.tracing import inject_context, producer_span
from athena_client.memory.v1 import memory_pb2

__all__ = ["APPLY_EVENTS", "RedisStep"]

APPLY_EVENTS = (
    APPEND_TO_WINDOW_FN
    + ENQUEUE_FN
    + """
-- KEYS[1] dispatcher   KEYS[2] window activity zset   KEYS[3..] the erasure tombstone of each user
-- the batch holds
-- ARGV[1] window cap (events)   ARGV[2] applied marker ttl (s)   ARGV[3] task dedup ttl (s)
-- ARGV[4] how many scopes the batch holds, then 3 per scope: its scope id, its user's agents set,
-- its agent id
-- then 8 per event: its scope's number (1-based), the KEYS index of its user's tombstone, its
-- stored_at (epoch milliseconds), its window list, its applied marker, its bytes, and its chain
-- check: scope queue, task dedup key, envelope bytes (all three empty when it triggers no check)
-- Appends each event to its window and queues its check, in order, except events stored at or before
-- their user's tombstone; a scope that kept an event records its newest stored_at in the activity
-- zset (the idle flush) and its agent in its user's agents set (search of the open windows).
-- Returns the 0-based positions of the events it dropped for the tombstone.
local erased = {}
for k = 3, #KEYS do
  -- the tombstone (epoch seconds) as whole milliseconds, as athena.tombstones.millis reads it
  local seconds = tonumber(redis.call('GET', KEYS[k]) or '')
  erased[k] = seconds and math.floor(math.floor(seconds * 1e6 + 0.5) / 1000)
end
local scopes = tonumber(ARGV[4])
local newest = {}
local dropped = {}
local n = 0
for i = 5 + 3 * scopes, #ARGV, 9 do
  local scope = tonumber(ARGV[i])
  local erased_at = erased[tonumber(ARGV[i + 1])]
  local stored = tonumber(ARGV[i + 2])
  if erased_at and stored <= erased_at then
    dropped[#dropped + 1] = n
  else
    append_to_window(ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[1], ARGV[2])
    if ARGV[i + 6] ~= '' then
      enqueue(ARGV[i + 6], KEYS[1], ARGV[i + 7], ARGV[i + 8], ARGV[2 + 3 * scope], ARGV[3])
    end
    newest[scope] = math.max(newest[scope] or 0, stored)
  end
  n = n + 1
end
for scope, stored in pairs(newest) do
  redis.call('ZADD', KEYS[2], 'GT', stored, ARGV[2 + 3 * scope])
  redis.call('SADD', ARGV[3 + 3 * scope], ARGV[4 + 3 * scope])
end
return dropped
"""
)

_NO_CHECK = ("", "", b"")


class RedisStep:
    """APPLY_EVENTS for a batch of events of any scopes; `triggers_check` says which events get a chain check."""

    def __init__(
        self,
        redis: Redis,
        *,
        window: ShortTermWindow,
        queue: FairQueue,
        triggers_check: Callable[[memory_pb2.Event], bool],
    ) -> None:
        self._script = redis.register_script(APPLY_EVENTS)
        self._window = window
        self._queue = queue
        self._triggers_check = triggers_check

    async def apply(self, events: Sequence[memory_pb2.Event]) -> list[int]:
        """Apply the events; returns the positions of those dropped because their user was erased after
        they were stored. Raises DependencyUnavailable when Redis is unreachable or the reply was lost
        (the script may then have run or not: applying the same events again is a no-op per event)."""
        if not events:
            return []
        users: dict[tuple[str, str], int] = {}
        scopes: dict[str, int] = {}
        scope_args: list[str | bytes | int] = []
        event_args: list[str | bytes | int] = []
        checks = [self._triggers_check(e) for e in events]
        n_checks = sum(checks)
        with producer_span(count=n_checks) if n_checks else nullcontext():
            carrier: dict[str, str] = {}
            if n_checks:
                inject_context(carrier)
            now = datetime.now(UTC)  # one enqueue time for the batch: it is one write
            for event, check in zip(events, checks):
                s = event.scope
                scope_id = keys.scope_id(s.tenant_id, s.user_id, s.agent_id)
                if scope_id not in scopes:
                    scopes[scope_id] = len(scopes) + 1
                    scope_args += [scope_id, keys.stm_user_agents_key(s.tenant_id, s.user_id), s.agent_id]
                tombstone_at = users.setdefault((s.tenant_id, s.user_id), len(users) + 3)  # its KEYS index
                event_args += [
                    scopes[scope_id],
                    tombstone_at,
                    millis(event.stored_at),
                    *self._window.append_args(event),
                ]
                if check:
                    (queue_key, _dispatcher, dedup_key), (envelope, _scope_id, _ttl) = self._queue.enqueue_args(
                        chain_check_task(scope=s, event_id=event.id, trace_context=carrier, now=now)
                    )
                    event_args += [queue_key, dedup_key, envelope]
                else:
                    event_args += _NO_CHECK
            tombstones = [keys.erasure_key(tenant, user) for tenant, user in users]
            args = [
                self._window.max_events,
                APPLIED_MARKER_TTL_SECONDS,
                TASK_DEDUP_TTL_SECONDS,
                len(scopes),
                *scope_args,
                *event_args,
            ]
            with redis_unavailable():
                dropped = await self._script(keys=[keys.DISPATCHER, keys.STM_ACTIVITY, *tombstones], args=args)
        return [int(i) for i in dropped]
