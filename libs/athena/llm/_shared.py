"""The LLM budget shared through Redis by every process that calls the LLM (cognition, formation).

SharedRateLimiter: two sliding-window logs (sorted sets), checked and taken by one Lua script
(athena.llm._scripts.RATE_RESERVE): LLM_RATE_LIMIT_PER_MINUTE calls in total and
LLM_TENANT_RATE_LIMIT_PER_MINUTE per tenant, over all processes, so one noisy tenant cannot take the
whole budget. A caller reserves the earliest slot both budgets allow and sleeps until it, or is refused
at once when that slot lies beyond its max wait, as with the per-process limiter.

SharedCircuitBreaker: the CircuitBreaker's state machine kept in Redis: failures of every process
count towards LLM_BREAKER_FAILURES consecutive ones, an open breaker refuses calls in every process
for LLM_BREAKER_RESET_SECONDS, and then one process only gets the half-open trial (SET NX with
expiry); its success closes the breaker for all.

Redis unreachable (or failing): the LLM path never fails a task for it. Each decision is then made by
the per-process fallback (TenantRateLimiter with the same two limits, CircuitBreaker with the same
settings), as before the budget was shared, and Redis is tried again after `retry_seconds`. Keys:
athena.keys (LLM_*), each with an expiry.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from athena import keys
from athena.llm import _scripts
from athena.llm._breaker import BreakerState, CircuitBreaker, check_breaker
from athena.llm._rate_limit import BudgetObserver, Clock, Sleep, TenantRateLimiter, check_budget

__all__ = ["SharedCircuitBreaker", "SharedRateLimiter", "connect_budget_redis"]

_log = logging.getLogger("athena.llm")

_T = TypeVar("_T")

# What "Redis is unreachable" looks like: connection refused or reset, timeouts, a server error.
_STORE_ERRORS = (RedisError, OSError, TimeoutError)


def connect_budget_redis(url: str, *, timeout: float = 1.0) -> Redis:
    """A Redis client for the shared LLM budget (REDIS_URL): short timeouts and no retries, because
    while Redis does not answer the per-process fallback decides (see the module docstring)."""
    return Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0), retry_on_error=[]
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class _StoreHealth:
    """Whether to try Redis now: after a failure the fallback decides for `retry_seconds`, so an
    outage costs one failed round trip per period, not one per call."""

    def __init__(self, what: str, retry_seconds: float, observer: Callable[[], BudgetObserver | None]) -> None:
        self.what = what
        self.retry_seconds = retry_seconds
        self._observer = observer
        self._down_until: float | None = None
        self.fallbacks = 0
        self.last_fell_back = False
        """Whether the last decision was the fallback's."""

    def usable(self) -> bool:
        return self._down_until is None or time.monotonic() >= self._down_until

    def failed(self, exc: BaseException) -> None:
        if self._down_until is None:
            _log.warning(
                "LLM %s: Redis unreachable (%s: %s); deciding in this process alone until it is back",
                self.what,
                type(exc).__name__,
                str(exc)[:200],
            )
        self._down_until = time.monotonic() + self.retry_seconds

    def succeeded(self) -> None:
        if self._down_until is not None:
            _log.info("LLM %s: Redis reachable again; the budget is shared again", self.what)
            self._down_until = None

    def fell_back(self) -> None:
        self.fallbacks += 1
        self.last_fell_back = True
        observer = self._observer()
        if observer is not None:
            try:
                observer("fallback", self.what)
            except Exception:  # a metrics bug must not break the call path
                _log.exception("LLM budget observer failed")

    async def run(self, call: Callable[[], Awaitable[_T]]) -> tuple[bool, _T | None]:
        """(True, the reply) from Redis, or (False, None): use the fallback."""
        if not self.usable():
            self.fell_back()
            return False, None
        try:
            reply = await call()
        except _STORE_ERRORS as exc:
            self.failed(exc)
            self.fell_back()
            return False, None
        self.succeeded()
        self.last_fell_back = False
        return True, reply


class SharedRateLimiter:
    """`limit` calls per `window` seconds in total and `tenant_limit` per tenant, over every process
    sharing `redis` (see the module docstring). Implements RateLimiter.

    :param clock: None (default): slots are timed by the Redis server's clock and waits by
        time.monotonic; a test passes a virtual clock (its `sleep` too) and the script uses its time.
    :param fallback: the per-process limiter used while Redis is unreachable (default: a
        TenantRateLimiter with the same limits).
    :param retry_seconds: after a Redis failure, how long the fallback decides before Redis is tried again.

    Counters: `grants`, `waits`, `wait_seconds`, `rejections`, `rejected_by` / `waited_for` (by budget:
    "tenant", "total"), `fallbacks` (decisions the fallback made); the fallback's own counters are
    included in grants, waits, wait_seconds and rejections.
    """

    def __init__(
        self,
        redis: Redis,
        limit: int,
        tenant_limit: int,
        window: float = 60.0,
        *,
        clock: Clock | None = None,
        sleep: Sleep = asyncio.sleep,
        fallback: TenantRateLimiter | None = None,
        retry_seconds: float = 5.0,
    ) -> None:
        check_budget(window, limit, tenant_limit)
        self.limit = limit
        self.tenant_limit = tenant_limit
        self.window = window
        self._window_ms = max(1, round(window * 1000))
        self._clock = clock
        self._wait_clock: Clock = clock if clock is not None else time.monotonic
        self._sleep = sleep
        self._reserve = redis.register_script(_scripts.RATE_RESERVE)
        self.fallback = (
            fallback
            if fallback is not None
            else TenantRateLimiter(limit, tenant_limit, window, clock=self._wait_clock, sleep=sleep)
        )
        self.observer: BudgetObserver | None = None
        self._store = _StoreHealth("limiter", retry_seconds, lambda: self.observer)
        self._grants = 0
        self._waits = 0
        self._wait_seconds = 0.0
        self._rejections = 0
        self.rejected_by: Counter[str] = Counter()
        self.waited_for: Counter[str] = Counter()

    # Totals over Redis and the fallback (the RateLimiter protocol's counters).
    @property
    def grants(self) -> int:
        return self._grants + self.fallback.grants

    @property
    def waits(self) -> int:
        return self._waits + self.fallback.waits

    @property
    def wait_seconds(self) -> float:
        return self._wait_seconds + self.fallback.wait_seconds

    @property
    def rejections(self) -> int:
        return self._rejections + self.fallback.rejections

    @property
    def fallbacks(self) -> int:
        return self._store.fallbacks

    def _notify(self, event: str, label: str) -> None:
        if self.observer is not None:
            try:
                self.observer(event, label)
            except Exception:  # a metrics bug must not break the call path
                _log.exception("LLM budget observer failed")

    async def acquire(self, max_wait: float, *, tenant_id: str | None = None) -> bool:
        """Reserve the earliest slot both budgets allow (over all processes) and sleep until it; False
        (at once) when it lies beyond `max_wait`. A cancelled waiter keeps its reservation."""
        member = secrets.token_hex(8)
        now_arg = "" if self._clock is None else str(round(self._clock() * 1000))
        tenant_key = keys.llm_rate_tenant_key(tenant_id) if tenant_id is not None else keys.LLM_RATE_TOTAL
        ok, reply = await self._store.run(
            lambda: self._reserve(
                keys=[keys.LLM_RATE_TOTAL, tenant_key],
                args=[
                    member,
                    self.limit,
                    self.tenant_limit if tenant_id is not None else 0,
                    self._window_ms,
                    max(0, int(max_wait * 1000)),
                    now_arg,
                ],
            )
        )
        if not ok:
            self.fallback.observer = self.observer
            return await self.fallback.acquire(max_wait, tenant_id=tenant_id)
        granted, delay_ms, budget = int(reply[0]), int(reply[1]), _text(reply[2])  # type: ignore[index]
        if not granted:
            self._rejections += 1
            self.rejected_by[budget] += 1
            self._notify("refused", budget)
            return False
        if delay_ms > 0:
            delay = delay_ms / 1000
            self._waits += 1
            self._wait_seconds += delay
            self.waited_for[budget] += 1
            self._notify("waited", budget)
            until = self._wait_clock() + delay
            while (remaining := until - self._wait_clock()) > 0:
                await self._sleep(remaining)
        self._grants += 1
        self._notify("granted", "redis")
        return True


class SharedCircuitBreaker:
    """CircuitBreaker's state machine in Redis, for every process sharing `redis`; implements Breaker.

    `state` is the state as this process last saw it (read by the metrics gauge); every call consults
    Redis. While Redis is unreachable `local` (a CircuitBreaker with the same settings) decides.

    :param retry_seconds: after a Redis failure, how long `local` decides before Redis is tried again.
    :param tripped_ttl_seconds: how long after opening the breaker stays HALF_OPEN without any call
        before it forgets the outage (CLOSED); beyond LLM_BREAKER_RESET_SECONDS.
    :param failures_ttl_seconds: consecutive failures further apart than this start counting afresh.
    """

    def __init__(
        self,
        redis: Redis,
        failure_threshold: int,
        reset_seconds: float,
        *,
        local: CircuitBreaker | None = None,
        name: str = "llm",
        retry_seconds: float = 5.0,
        tripped_ttl_seconds: float = 3600.0,
        failures_ttl_seconds: float = 3600.0,
    ) -> None:
        check_breaker(failure_threshold, reset_seconds)
        self.failure_threshold = failure_threshold
        self.reset_seconds = reset_seconds
        self.name = name
        self.local = local if local is not None else CircuitBreaker(failure_threshold, reset_seconds, name=name)
        self._reset_ms = max(1, round(reset_seconds * 1000))
        self._tripped_ms = self._reset_ms + max(1, round(tripped_ttl_seconds * 1000))
        self._failures_ms = max(1, round(failures_ttl_seconds * 1000))
        self._keys = [
            keys.LLM_BREAKER_OPEN,
            keys.LLM_BREAKER_TRIPPED,
            keys.LLM_BREAKER_TRIAL,
            keys.LLM_BREAKER_FAILURES,
        ]
        self._state_script = redis.register_script(_scripts.BREAKER_STATE)
        self._admit = redis.register_script(_scripts.BREAKER_ADMIT)
        self._failure = redis.register_script(_scripts.BREAKER_FAILURE)
        self._success = redis.register_script(_scripts.BREAKER_SUCCESS)
        self._release = redis.register_script(_scripts.BREAKER_RELEASE)
        self._observer: BudgetObserver | None = None
        self._store = _StoreHealth("breaker", retry_seconds, lambda: self._observer)
        self._seen = BreakerState.CLOSED
        self._trial_token: str | None = None
        self.opens = 0
        self.consecutive_failures = 0
        """As last seen in Redis (all processes' failures since the last success)."""

    @property
    def observer(self) -> BudgetObserver | None:
        """Hears ("opened", "") and ("fallback", "breaker"); passed on to the local breaker."""
        return self._observer

    @observer.setter
    def observer(self, observer: BudgetObserver | None) -> None:
        self._observer = observer
        self.local.observer = observer

    @property
    def state(self) -> BreakerState:
        """As this process last saw it (Redis's, or the local breaker's while Redis is unreachable)."""
        return self.local.state if self._store.last_fell_back else self._seen

    @property
    def fallbacks(self) -> int:
        return self._store.fallbacks

    def _see(self, state: str, failures: int | None = None) -> None:
        old = self._seen
        self._seen = BreakerState.OPEN if state == "open" else BreakerState(state.replace("trial_taken", "half_open"))
        if failures is not None:
            self.consecutive_failures = failures
        if old is not self._seen:
            level = logging.WARNING if self._seen is BreakerState.OPEN else logging.INFO
            _log.log(level, "shared circuit breaker %s: %s -> %s", self.name, old.value, self._seen.value)

    async def acheck(self) -> bool:
        """Would a call be admitted now (without taking the half-open trial)?"""
        ok, reply = await self._store.run(lambda: self._state_script(keys=self._keys))
        if not ok:
            return self.local.would_allow()
        state = _text(reply[0])  # type: ignore[index]
        self._see(state, int(reply[1]))  # type: ignore[index]
        return state in ("closed", "half_open")

    async def aadmit(self) -> BreakerState | None:
        """CLOSED: call; HALF_OPEN: call, this process holds the one trial of every process; None: skip."""
        token = secrets.token_hex(8)
        ok, reply = await self._store.run(lambda: self._admit(keys=self._keys, args=[token, self._reset_ms]))
        if not ok:
            return await self.local.aadmit()
        answer = _text(reply[0])  # type: ignore[index]
        failures = int(reply[1])  # type: ignore[index]
        if answer == "trial":
            self._trial_token = token
            self._see("half_open", failures)
            return BreakerState.HALF_OPEN
        self._see(answer, failures)
        return BreakerState.CLOSED if answer == "closed" else None

    async def arecord_failure(self) -> None:
        ok, reply = await self._store.run(
            lambda: self._failure(
                keys=self._keys, args=[self.failure_threshold, self._reset_ms, self._tripped_ms, self._failures_ms]
            )
        )
        if not ok:
            self.local.record_failure()
            return
        if int(reply[1]):  # type: ignore[index]
            self.opens += 1
            if self._observer is not None:
                try:
                    self._observer("opened", "")
                except Exception:
                    _log.exception("LLM budget observer failed")
        self._see(_text(reply[0]), int(reply[2]))  # type: ignore[index]

    async def arecord_success(self) -> None:
        ok, reply = await self._store.run(lambda: self._success(keys=self._keys))
        if not ok:
            self.local.record_success()
            return
        self._see(_text(reply[0]), 0)  # type: ignore[index]

    async def arelease(self) -> None:
        """The admitted trial did not run: free it for the next caller of any process (only if this
        process still holds it: the token is compared)."""
        token, self._trial_token = self._trial_token, None
        if token is None:
            self.local.release()
            return
        ok, _ = await self._store.run(lambda: self._release(keys=[keys.LLM_BREAKER_TRIAL], args=[token]))
        if not ok:
            self.local.release()  # the trial key expires after reset_seconds anyway
