"""A per-process rate limiter for outbound calls: at most `limit` calls in any `window` seconds.

A sliding-window log, not a token bucket: a bucket of R tokens refilled at R per minute lets a full
bucket plus its refill through, close to 2R calls in one 60-second window, and the limit is a promise
made to a provider that bills and throttles per minute.

Callers reserve the earliest free slot at once and then sleep until it. Reservations are handed out in
order of arrival (FIFO, no thundering herd of waiters re-checking), and a caller whose slot lies further
away than its `max_wait` is refused at once instead of queueing behind an outage.

SlidingWindowRateLimiter is one budget in this process. TenantRateLimiter adds a budget per tenant
in this process; athena.llm.SharedRateLimiter keeps both budgets in Redis for every process (and
falls back to a TenantRateLimiter while Redis is unreachable).
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = [
    "BudgetObserver",
    "Clock",
    "RateLimiter",
    "Sleep",
    "SlidingWindowRateLimiter",
    "TenantRateLimiter",
    "check_budget",
]

_log = logging.getLogger("athena.llm")

Clock = Callable[[], float]
"""Monotonic seconds; injectable so tests can run minutes of limiter time in milliseconds."""
Sleep = Callable[[float], Awaitable[None]]
"""Asynchronous sleep matching the Clock (asyncio.sleep for time.monotonic)."""
BudgetObserver = Callable[[str, str], None]
"""Called with (event, label) by the budget-keeping limiters and breakers, the hook for Prometheus:
("granted", "redis" | "local"), ("waited", "tenant" | "total"), ("refused", "tenant" | "total"),
("opened", ""), ("fallback", "limiter" | "breaker") (a decision made in-process, Redis unreachable)."""


def _notify(observer: BudgetObserver | None, event: str, label: str) -> None:
    if observer is not None:
        try:
            observer(event, label)
        except Exception:  # a metrics bug must not break the call path
            _log.exception("LLM budget observer failed")


def check_budget(window: float, *limits: int) -> None:
    """A limiter's arguments: every limit at least 1, a positive window."""
    if any(limit < 1 for limit in limits):
        raise ValueError("limits must be at least 1")
    if window <= 0:
        raise ValueError("window must be positive")


class RateLimiter(Protocol):
    """What a caller needs from a limiter; anything with these members can replace the default."""

    @property
    def waits(self) -> int:
        """Grants that had to wait for a slot (cumulative)."""
        ...

    @property
    def rejections(self) -> int:
        """Callers refused (cumulative)."""
        ...

    async def acquire(self, max_wait: float, *, tenant_id: str | None = None) -> bool:
        """Wait for a slot for at most `max_wait` seconds; False means no slot, the call must be skipped.
        `tenant_id`: whose call it is, for limiters with a budget per tenant (others ignore it)."""
        ...


class SlidingWindowRateLimiter:
    """At most `limit` grants in any half-open interval of `window` seconds.

    Counters (read them for metrics): `grants`, `waits` (grants that had to wait for a slot),
    `wait_seconds` (total time spent waiting), `rejections` (callers refused because of `max_wait`).
    """

    def __init__(
        self,
        limit: int,
        window: float = 60.0,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        check_budget(window, limit)
        self.limit = limit
        self.window = window
        self._clock = clock
        self._sleep = sleep
        # Start times of granted or reserved calls, non-decreasing (see _next_slot).
        self._slots: deque[float] = deque()
        self.grants = 0
        self.waits = 0
        self.wait_seconds = 0.0
        self.rejections = 0
        self.observer: BudgetObserver | None = None

    def _notify(self, event: str, label: str) -> None:
        _notify(self.observer, event, label)

    def _next_slot(self, now: float) -> float:
        # A slot at t occupies [t, t + window); once that has passed it no longer counts.
        while self._slots and self._slots[0] + self.window <= now:
            self._slots.popleft()
        if len(self._slots) < self.limit:
            # Fewer than `limit` live slots implies none lies in the future (a future slot is only
            # ever reserved behind `limit` live ones), so appending `now` keeps the log sorted.
            return now
        # The new slot may share a window with at most limit-1 others: it goes one window after
        # the limit-th most recent slot. Reservations are monotonic, so the log stays sorted.
        return max(now, self._slots[-self.limit] + self.window)

    def try_acquire(self) -> bool:
        """Take a slot only if one is free right now."""
        now = self._clock()
        if self._next_slot(now) > now:
            self.rejections += 1
            self._notify("refused", "total")
            return False
        self._slots.append(now)
        self.grants += 1
        self._notify("granted", "local")
        return True

    async def acquire(self, max_wait: float, *, tenant_id: str | None = None) -> bool:
        """Reserve the earliest free slot and sleep until it; False (at once) if it is beyond `max_wait`.
        One budget for every caller: `tenant_id` is ignored.

        A caller cancelled while waiting keeps its reservation: the slot is wasted, never over-granted.
        """
        now = self._clock()
        slot = self._next_slot(now)
        delay = slot - now
        if delay > max_wait:
            self.rejections += 1
            self._notify("refused", "total")
            return False
        self._slots.append(slot)
        if delay > 0:
            self.waits += 1
            self.wait_seconds += delay
            self._notify("waited", "total")
            # Loop because a sleep may end a hair early on a coarse clock.
            while (remaining := slot - self._clock()) > 0:
                await self._sleep(remaining)
        self.grants += 1
        self._notify("granted", "local")
        return True


def _next_slot(log: list[float], limit: int, window: float, now: float) -> float:
    """The earliest valid slot of a sorted log (see athena.llm._scripts.RATE_RESERVE, the same rule):
    at most limit - 1 entries may lie after slot - window."""
    del log[: bisect.bisect_right(log, now - window)]
    if len(log) < limit:
        return now
    return max(now, log[-limit] + window)


class TenantRateLimiter:
    """Two sliding-window budgets in this process: `limit` calls per `window` in total and
    `tenant_limit` per tenant (a call without a tenant counts against the total only). The fallback of
    SharedRateLimiter while Redis is unreachable; same rule, same counters.

    Counters: `grants`, `waits`, `wait_seconds`, `rejections`, and `rejected_by` / `waited_for`
    (by budget: "tenant", "total").
    """

    # Beyond this many tenants with live slots, empty logs are swept away (bounded memory).
    _SWEEP_AT = 1024

    def __init__(
        self,
        limit: int,
        tenant_limit: int,
        window: float = 60.0,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        check_budget(window, limit, tenant_limit)
        self.limit = limit
        self.tenant_limit = tenant_limit
        self.window = window
        self._clock = clock
        self._sleep = sleep
        self._total: list[float] = []
        self._tenants: dict[str, list[float]] = {}
        self.grants = 0
        self.waits = 0
        self.wait_seconds = 0.0
        self.rejections = 0
        self.rejected_by: Counter[str] = Counter()
        self.waited_for: Counter[str] = Counter()
        self.observer: BudgetObserver | None = None

    def _notify(self, event: str, label: str) -> None:
        _notify(self.observer, event, label)

    def reserve(self, max_wait: float, tenant_id: str | None) -> tuple[float | None, str]:
        """Reserve the earliest slot within `max_wait` (its time), or (None, the budget that refused)."""
        now = self._clock()
        tenant_log: list[float] | None = None
        tenant_slot = now
        if tenant_id is not None:
            if len(self._tenants) > self._SWEEP_AT:
                self._sweep(now)
            tenant_log = self._tenants.setdefault(tenant_id, [])
            tenant_slot = _next_slot(tenant_log, self.tenant_limit, self.window, now)
            if tenant_slot - now > max_wait:
                return None, "tenant"
        total_slot = _next_slot(self._total, self.limit, self.window, now)
        if total_slot - now > max_wait:
            return None, "total"
        slot = max(tenant_slot, total_slot)
        bisect.insort(self._total, slot)
        if tenant_log is not None:
            bisect.insort(tenant_log, slot)
        return slot, ("tenant" if tenant_slot >= total_slot else "total") if slot > now else ""

    def _sweep(self, now: float) -> None:
        for tenant in [t for t, log in self._tenants.items() if not log or log[-1] + self.window <= now]:
            del self._tenants[tenant]

    async def acquire(self, max_wait: float, *, tenant_id: str | None = None) -> bool:
        """Reserve the earliest slot both budgets allow and sleep until it; False (at once) when it
        lies beyond `max_wait`. A cancelled waiter keeps its reservation (wasted, never over-granted)."""
        slot, budget = self.reserve(max_wait, tenant_id)
        if slot is None:
            self.rejections += 1
            self.rejected_by[budget] += 1
            self._notify("refused", budget)
            return False
        delay = slot - self._clock()
        if delay > 0:
            self.waits += 1
            self.wait_seconds += delay
            self.waited_for[budget] += 1
            self._notify("waited", budget)
            while (remaining := slot - self._clock()) > 0:
                await self._sleep(remaining)
        self.grants += 1
        self._notify("granted", "local")
        return True
