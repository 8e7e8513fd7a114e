"""Lua scripts of the fair work queue. Each runs atomically on the Redis server.

Invariant they keep: a scope whose list is non-empty is in exactly one place: the dispatcher
(`cognitive_work_queue`), some worker's claiming list, leased, or in the delayed set. That is what
makes each scope appear at most once on the dispatcher (fairness) and run one task at a time (order).
Times come from the server's TIME so that workers with skewed clocks agree.
"""

from __future__ import annotations

from athena import keys

__all__ = [
    "ACK",
    "ACK_AND_CLAIM",
    "CLAIM",
    "CLAIM_READY",
    "ENQUEUE",
    "ENQUEUE_FN",
    "ERASE_TASKS",
    "EXTEND",
    "FAIL",
    "PROMOTE",
    "REAP",
    "RELEASE",
    "REPLAY",
]

_NOW_MS = """
local _t = redis.call('TIME')
local now = tonumber(_t[1]) * 1000 + math.floor(tonumber(_t[2]) / 1000)
"""

ENQUEUE_FN = """
-- enqueue(scope queue, dispatcher, task dedup key, envelope bytes, scope id, dedup ttl (s)):
-- 1 when queued, 0 when this task id was queued before.
local function enqueue(queue, dispatcher, dedup, envelope, scope, ttl)
  if not redis.call('SET', dedup, '1', 'NX', 'EX', ttl) then
    return 0
  end
  if redis.call('RPUSH', queue, envelope) == 1 then
    -- the scope had no work, so it is nowhere: make it runnable
    redis.call('RPUSH', dispatcher, scope)
  end
  return 1
end
"""
"""ENQUEUE as a Lua function, for the scripts that enqueue along with their other writes (ingest's APPLY_EVENTS)."""

ENQUEUE = (
    ENQUEUE_FN
    + """
-- KEYS[1] scope queue      KEYS[2] dispatcher      KEYS[3] task dedup key
-- ARGV[1] envelope bytes   ARGV[2] scope id        ARGV[3] dedup ttl (s)
-- Returns 1 when queued, 0 when this task id was queued before.
return enqueue(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])
"""
)

CLAIM = (
    _NOW_MS
    + """
-- KEYS[1] this worker's claiming list   KEYS[2] scope queue   KEYS[3] lease key   KEYS[4] leases zset
-- KEYS[5] deliveries hash
-- ARGV[1] scope id   ARGV[2] lease token   ARGV[3] lease ttl (ms)
-- Returns {head envelope, deliveries} or false when the scope has no work any more.
redis.call('LREM', KEYS[1], 1, ARGV[1])
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then
  return false
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  -- leased already (a reaped claim raced a slow worker): the holder will requeue it
  return false
end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[3]), ARGV[1])
-- deliveries of this head since it last settled: grows only when workers die holding it
return {head, redis.call('HINCRBY', KEYS[5], ARGV[1], 1)}
"""
)

EXTEND = (
    _NOW_MS
    + """
-- KEYS[1] lease key   KEYS[2] leases zset
-- ARGV[1] lease token   ARGV[2] lease ttl (ms)   ARGV[3] scope id
-- Returns 1 when renewed, 0 when the lease is no longer ours.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
return 1
"""
)

_ACK_FN = """
-- ack(lease key, leases zset, scope queue, dispatcher, result key, deliveries hash, token, scope id,
--     result JSON, result ttl): 1 when acknowledged, 0 when the lease was lost.
local function ack(lease, leases, queue, dispatcher, result_key, deliveries, token, scope, result, ttl)
  if redis.call('GET', lease) ~= token then
    return 0
  end
  redis.call('LPOP', queue)
  redis.call('SET', result_key, result, 'EX', ttl)
  redis.call('HDEL', deliveries, scope)
  redis.call('DEL', lease)
  redis.call('ZREM', leases, scope)
  if redis.call('LLEN', queue) > 0 then
    -- to the tail: one task per turn, round-robin across scopes
    redis.call('RPUSH', dispatcher, scope)
  end
  return 1
end
"""

_CLAIM_READY_FN = """
-- claim_ready(dispatcher, leases zset, deliveries hash, scope queue prefix, lease prefix, token,
--             lease ttl ms): pops scopes off the dispatcher until one has a head task and no lease,
-- and leases it. Nothing is held between the pop and the lease (one script), so no claiming list is
-- needed. A popped scope without work, or leased already, is dropped, as CLAIM drops it.
-- Returns {scope, head envelope, deliveries}, or false when no scope was ready.
local function claim_ready(dispatcher, leases, deliveries, qprefix, lprefix, token, ttl)
  for _ = 1, 64 do
    local scope = redis.call('LPOP', dispatcher)
    if not scope then
      return false
    end
    local head = redis.call('LINDEX', qprefix .. scope, 0)
    if head and redis.call('EXISTS', lprefix .. scope) == 0 then
      redis.call('SET', lprefix .. scope, token, 'PX', ttl)
      redis.call('ZADD', leases, now + tonumber(ttl), scope)
      return {scope, head, redis.call('HINCRBY', deliveries, scope, 1)}
    end
  end
  return false
end
"""

ACK = (
    _ACK_FN
    + """
-- KEYS[1] lease key   KEYS[2] leases zset   KEYS[3] scope queue   KEYS[4] dispatcher
-- KEYS[5] task result key   KEYS[6] deliveries hash
-- ARGV[1] lease token   ARGV[2] scope id   ARGV[3] result JSON   ARGV[4] result ttl (s)
-- Removes the finished head task and records its result.
-- Returns 1 when acknowledged, 0 when the lease was lost (another worker may run the task again).
return ack(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
"""
)

CLAIM_READY = (
    _NOW_MS
    + _CLAIM_READY_FN
    + """
-- KEYS[1] dispatcher   KEYS[2] leases zset   KEYS[3] deliveries hash
-- ARGV[1] scope queue key prefix   ARGV[2] lease key prefix   ARGV[3] lease token   ARGV[4] lease ttl (ms)
-- A claim in one round trip when a scope is ready (the blocking BLMOVE + CLAIM path is for waiting).
-- Returns {scope, head envelope, deliveries} or false.
return claim_ready(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
"""
)


def _lua_string(text: str) -> str:
    if any(c in text for c in "'\\\n"):
        raise ValueError(f"not a plain Lua string literal: {text!r}")
    return f"'{text}'"


# Key names and prefixes (from athena.keys) as Lua constants, for the per-task script that derives its
# keys itself instead of taking them (or the prefixes) as arguments: each argument is packed by the
# client on every call, and this is the queue's hot path. One Redis server, not a cluster: a cluster
# would need every key declared in KEYS (and in one hash slot).
_QUEUE_KEYS = f"""
local DISPATCHER = {_lua_string(keys.DISPATCHER)}
local LEASES = {_lua_string(keys.QUEUE_LEASES)}
local DELIVERIES = {_lua_string(keys.QUEUE_DELIVERIES)}
local SCOPE_QUEUE_PREFIX = {_lua_string(keys.SCOPE_QUEUE_PREFIX)}
local LEASE_PREFIX = {_lua_string(keys.LEASE_PREFIX)}
"""

ACK_AND_CLAIM = (
    _NOW_MS
    + _QUEUE_KEYS
    + _ACK_FN
    + _CLAIM_READY_FN
    + """
-- KEYS[1] task result key
-- ARGV[1] scope id   ARGV[2] lease token   ARGV[3] result JSON   ARGV[4] result ttl (s)
-- ARGV[5] new lease token   ARGV[6] lease ttl (ms)
-- Also writes the dispatcher, leases zset, deliveries hash (names above), the scope's lease key and
-- queue key (built from ARGV[1], as CLAIM_READY builds those of the scopes it pops) and the lease key
-- of the scope it claims.
-- ACK, then CLAIM_READY for the same worker: a busy worker settles a task and takes the next in one
-- round trip. Returns acked (0 or 1) when no scope was ready, else one string
-- "<acked> <deliveries> <length of scope id> <scope id><head envelope>" (one bulk reply parses far
-- faster in the client than a four-element array; the envelope is binary, so it goes last, whole).
local scope = ARGV[1]
local acked = ack(LEASE_PREFIX .. scope, LEASES, SCOPE_QUEUE_PREFIX .. scope, DISPATCHER, KEYS[1], DELIVERIES,
                  ARGV[2], scope, ARGV[3], ARGV[4])
local claimed = claim_ready(DISPATCHER, LEASES, DELIVERIES, SCOPE_QUEUE_PREFIX, LEASE_PREFIX, ARGV[5], ARGV[6])
if not claimed then
  return acked
end
return acked .. ' ' .. claimed[3] .. ' ' .. #claimed[1] .. ' ' .. claimed[1] .. claimed[2]
"""
)

FAIL = (
    _NOW_MS
    + """
-- KEYS[1] lease key   KEYS[2] leases zset   KEYS[3] scope queue   KEYS[4] delayed zset
-- KEYS[5] dispatcher   KEYS[6] dead-letter list   KEYS[7] task result key   KEYS[8] deliveries hash
-- ARGV[1] lease token   ARGV[2] scope id   ARGV[3] envelope with attempt and last_error updated
-- ARGV[4] retry delay (ms), or -1 to dead-letter   ARGV[5] result JSON   ARGV[6] result ttl (s)
-- Returns 1 when scheduled for retry, 2 when dead-lettered, 0 when the lease was lost.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[8], ARGV[2])
redis.call('SET', KEYS[7], ARGV[5], 'EX', ARGV[6])
if ARGV[4] == '-1' then
  redis.call('LPOP', KEYS[3])
  redis.call('RPUSH', KEYS[6], ARGV[3])
  if redis.call('LLEN', KEYS[3]) > 0 then
    redis.call('RPUSH', KEYS[5], ARGV[2])
  end
  return 2
end
-- the failed head stays first, so the scope keeps its order; it waits in the delayed set
redis.call('LSET', KEYS[3], 0, ARGV[3])
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[4]), ARGV[2])
return 1
"""
)

RELEASE = """
-- KEYS[1] lease key   KEYS[2] leases zset   KEYS[3] dispatcher   KEYS[4] scope queue
-- KEYS[5] deliveries hash
-- ARGV[1] lease token   ARGV[2] scope id
-- Gives a claimed scope back without counting an attempt (graceful shutdown).
-- Returns 1 when released, 0 when the lease was no longer ours.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
-- a delivery given back on purpose is not a stall: undo the count CLAIM added
if redis.call('HINCRBY', KEYS[5], ARGV[2], -1) <= 0 then
  redis.call('HDEL', KEYS[5], ARGV[2])
end
if redis.call('LLEN', KEYS[4]) > 0 then
  -- to the head: it was this scope's turn already
  redis.call('LPUSH', KEYS[3], ARGV[2])
end
return 1
"""

PROMOTE = (
    _NOW_MS
    + """
-- KEYS[1] delayed zset   KEYS[2] dispatcher
-- ARGV[1] most scopes to move
-- Moves scopes whose retry time has come onto the dispatcher. Returns how many moved.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, scope in ipairs(due) do
  redis.call('ZREM', KEYS[1], scope)
  redis.call('RPUSH', KEYS[2], scope)
end
return #due
"""
)

REAP = (
    _NOW_MS
    + """
-- KEYS[1] leases zset   KEYS[2] dispatcher   KEYS[3] workers zset   KEYS[4] reaper lock
-- ARGV[1] lease key prefix   ARGV[2] claiming key prefix   ARGV[3] worker stale after (ms)
-- ARGV[4] reaper lock token   ARGV[5] reaper lock ttl (ms)
-- Requeues scopes whose lease expired (their worker died mid-task) and scopes stranded in the
-- claiming list of a worker whose heartbeat stopped. Returns {expired leases, stranded claims}.
if not redis.call('SET', KEYS[4], ARGV[4], 'NX', 'PX', ARGV[5]) then
  return {-1, -1}
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
local requeued = 0
for _, scope in ipairs(expired) do
  if redis.call('EXISTS', ARGV[1] .. scope) == 0 then
    redis.call('ZREM', KEYS[1], scope)
    redis.call('RPUSH', KEYS[2], scope)
    requeued = requeued + 1
  end
end
local stranded = 0
local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[3]))
for _, worker in ipairs(dead) do
  local claiming = ARGV[2] .. worker
  local scope = redis.call('LPOP', claiming)
  while scope do
    redis.call('RPUSH', KEYS[2], scope)
    stranded = stranded + 1
    scope = redis.call('LPOP', claiming)
  end
  redis.call('ZREM', KEYS[3], worker)
end
return {requeued, stranded}
"""
)

REPLAY = """
-- KEYS[1] dead-letter list   KEYS[2] scope queue   KEYS[3] dispatcher   KEYS[4] task dedup key
-- ARGV[1] dead envelope as stored   ARGV[2] envelope to queue (attempt reset)   ARGV[3] scope id
-- ARGV[4] dedup ttl (s)
-- Moves one dead-lettered task back to the tail of its scope. Returns 1, or 0 if it was gone.
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
redis.call('SET', KEYS[4], '1', 'EX', ARGV[4])
if redis.call('RPUSH', KEYS[2], ARGV[2]) == 1 then
  redis.call('RPUSH', KEYS[3], ARGV[3])
end
return 1
"""

ERASE_TASKS = """
-- KEYS[1] scope queue   KEYS[2] dispatcher   KEYS[3] delayed zset   KEYS[4] leases zset
-- KEYS[5] lease key     KEYS[6] deliveries hash   KEYS[7] workers zset
-- ARGV[1] scope id   ARGV[2] claiming key prefix   ARGV[3..] envelopes to remove, as stored
-- Erasure (ForgetUser) of some of a scope's tasks: those of events stored at or before the tombstone;
-- the others stay queued, in order. When the head is removed, deleting its lease fences a worker still
-- running it (its ACK/FAIL/EXTEND find the lease gone and write nothing, so no task result reappears),
-- and its retry and delivery state go with it. A scope left without tasks leaves every place of the
-- queue; one left with tasks is runnable exactly once (it stays where it is when it was ready or
-- being claimed, else it goes back on the dispatcher).
-- Returns {the envelopes removed, lease keys deleted}.
local head = redis.call('LINDEX', KEYS[1], 0)
local removed, head_removed = {}, false
for i = 3, #ARGV do
  if redis.call('LREM', KEYS[1], 0, ARGV[i]) > 0 then
    removed[#removed + 1] = ARGV[i]
    head_removed = head_removed or ARGV[i] == head
  end
end
if not head_removed then
  return {removed, 0}
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
local leased = redis.call('DEL', KEYS[5])
redis.call('HDEL', KEYS[6], ARGV[1])
local workers = redis.call('ZRANGE', KEYS[7], 0, -1)
if redis.call('LLEN', KEYS[1]) == 0 then
  redis.call('LREM', KEYS[2], 0, ARGV[1])
  for _, worker in ipairs(workers) do
    redis.call('LREM', ARGV[2] .. worker, 0, ARGV[1])
  end
  return {removed, leased}
end
if redis.call('LPOS', KEYS[2], ARGV[1]) then
  return {removed, leased}
end
for _, worker in ipairs(workers) do
  if redis.call('LPOS', ARGV[2] .. worker, ARGV[1]) then
    return {removed, leased}
  end
end
redis.call('RPUSH', KEYS[2], ARGV[1])
return {removed, leased}
"""
