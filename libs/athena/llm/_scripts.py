"""Lua scripts of the shared LLM budget (athena.llm._shared). Each runs atomically on the Redis server.

Times are epoch milliseconds from the server's TIME, so processes with skewed clocks agree; a test may
pass its own clock's time instead (the limiter's `clock`). Key names: athena.keys (LLM_*).
"""

from __future__ import annotations

__all__ = [
    "BREAKER_ADMIT",
    "BREAKER_FAILURE",
    "BREAKER_RELEASE",
    "BREAKER_STATE",
    "BREAKER_SUCCESS",
    "RATE_RESERVE",
]

RATE_RESERVE = """
-- KEYS[1] total log (zset)      KEYS[2] tenant log (zset; unused when ARGV[3] is 0)
-- ARGV[1] member, unique per call   ARGV[2] total limit   ARGV[3] tenant limit (0: no tenant budget)
-- ARGV[4] window (ms)   ARGV[5] max wait (ms)   ARGV[6] now (ms; empty: the server's TIME)
-- Returns {1, delay ms, budget that made the call wait ('' when none)} once a slot at now + delay is
-- reserved in both logs, or {0, delay ms, budget that refused ('tenant' or 'total')} when the earliest
-- slot lies beyond the max wait (nothing is written then).
--
-- A slot s is valid for a log of limit L when at most L - 1 entries lie after s - window: then every
-- window holding s holds at most L slots. Hence s = max(now, (L-th newest entry) + window), which
-- also holds with reservations in the future (a slot delayed by one budget sits in the other's log).
local now
if ARGV[6] ~= '' then
  now = tonumber(ARGV[6])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = tonumber(ARGV[4])
local max_wait = tonumber(ARGV[5])

local function next_slot(key, limit)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  if redis.call('ZCARD', key) < limit then
    return now
  end
  local kth = redis.call('ZREVRANGE', key, limit - 1, limit - 1, 'WITHSCORES')
  return math.max(now, tonumber(kth[2]) + window)
end

local function reserve(key, slot)
  redis.call('ZADD', key, slot, ARGV[1])
  -- the key lives until its newest slot has left the window
  local newest = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
  redis.call('PEXPIRE', key, math.max(1, tonumber(newest[2]) + window - now))
end

local tenant_limit = tonumber(ARGV[3])
local tenant_slot = now
if tenant_limit > 0 then
  tenant_slot = next_slot(KEYS[2], tenant_limit)
  if tenant_slot - now > max_wait then
    return {0, tenant_slot - now, 'tenant'}
  end
end
local total_slot = next_slot(KEYS[1], tonumber(ARGV[2]))
if total_slot - now > max_wait then
  return {0, total_slot - now, 'total'}
end
local slot = math.max(tenant_slot, total_slot)
reserve(KEYS[1], slot)
if tenant_limit > 0 then
  reserve(KEYS[2], slot)
end
local budget = ''
if slot > now then
  if tenant_slot >= total_slot then budget = 'tenant' else budget = 'total' end
end
return {1, slot - now, budget}
"""

_BREAKER_KEYS = """
-- KEYS[1] open   KEYS[2] tripped   KEYS[3] trial   KEYS[4] consecutive failures
local function state()
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return 'open'
  end
  if redis.call('EXISTS', KEYS[2]) == 1 then
    if redis.call('EXISTS', KEYS[3]) == 1 then
      return 'trial_taken'
    end
    return 'half_open'
  end
  return 'closed'
end
local function failures()
  return tonumber(redis.call('GET', KEYS[4]) or '0')
end
"""

BREAKER_STATE = (
    _BREAKER_KEYS
    + """
-- Returns {state ('open', 'half_open', 'trial_taken' or 'closed'), consecutive failures}.
return {state(), failures()}
"""
)

BREAKER_ADMIT = (
    _BREAKER_KEYS
    + """
-- ARGV[1] trial token   ARGV[2] reset (ms)
-- Returns {'closed' (call), 'trial' (call: this caller holds the half-open trial), 'open' or
-- 'trial_taken' (no call), consecutive failures}.
local s = state()
if s == 'half_open' then
  if redis.call('SET', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return {'trial', failures()}
  end
  return {'trial_taken', failures()}
end
return {s, failures()}
"""
)

BREAKER_FAILURE = (
    _BREAKER_KEYS
    + """
-- ARGV[1] failure threshold   ARGV[2] reset (ms)   ARGV[3] tripped ttl (ms)   ARGV[4] failures ttl (ms)
-- Returns {state after, 1 when this failure opened the breaker else 0, consecutive failures}.
local function open()
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
  redis.call('DEL', KEYS[3], KEYS[4])
  return {'open', 1, 0}
end
local s = state()
if s == 'open' then
  -- a late failure must not extend the pause
  return {s, 0, failures()}
end
if s == 'half_open' or s == 'trial_taken' then
  return open()
end
local n = redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
if n >= tonumber(ARGV[1]) then
  return open()
end
return {'closed', 0, n}
"""
)

BREAKER_SUCCESS = (
    _BREAKER_KEYS
    + """
-- Returns {state after, 1 when this success closed the breaker else 0}.
redis.call('DEL', KEYS[4])
local s = state()
-- A late success from a call started before the breaker opened proves little; only a success while
-- HALF_OPEN (normally the trial's) closes the breaker.
if s == 'half_open' or s == 'trial_taken' then
  redis.call('DEL', KEYS[2], KEYS[3])
  return {'closed', 1}
end
return {s, 0}
"""
)

BREAKER_RELEASE = """
-- KEYS[1] trial
-- ARGV[1] the caller's trial token
-- A permitted trial did not run after all: free it for the next caller (only if still the caller's).
-- Returns 1 when freed.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
