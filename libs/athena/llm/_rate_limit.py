"""A per-process rate limiter for outbound calls: at most `limit` calls in any `window` seconds.

A sliding-window log, not a token bucket: a bucket of R tokens refilled at R per minute lets a full
bucket plus its refill through, close to 2R calls in one 60-second window, and the limit is a promise
made to a provider that bills and throttles per minute.

Callers reserve the earliest free slot at once and then sleep until it. Reservations are handed out in
order of arrival (FIFO, no thundering herd of waiters re-checking), and a caller whose slot lies further
away than its `max_wait` is refused at once instead of queueing behind an outage.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

__all__ = ["Clock", "RateLimiter", "Sleep", "SlidingWindowRateLimiter"]

Clock = Callable[[], float]
"""Monotonic seconds; injectable so tests can run minutes of limiter time in milliseconds."""
Sleep = Callable[[float], Awaitable[None]]
"""Asynchronous sleep matching the Clock (asyncio.sleep for time.monotonic)."""


class RateLimiter(Protocol):
    """What a caller needs from a limiter; anything with these members can replace the default."""

    waits: int
    rejections: int

    async def acquire(self, max_wait: float) -> bool:
        """Wait for a slot for at most `max_wait` seconds; False means no slot, the call must be skipped."""
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
        if limit < 1:
            raise ValueError("limit must be at least 1")
        if window <= 0:
            raise ValueError("window must be positive")
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
            return False
        self._slots.append(now)
        self.grants += 1
        return True

    async def acquire(self, max_wait: float) -> bool:
        """Reserve the earliest free slot and sleep until it; False (at once) if it is beyond `max_wait`.

        A caller cancelled while waiting keeps its reservation: the slot is wasted, never over-granted.
        """
        now = self._clock()
        slot = self._next_slot(now)
        delay = slot - now
        if delay > max_wait:
            self.rejections += 1
            return False
        self._slots.append(slot)
        if delay > 0:
            self.waits += 1
            self.wait_seconds += delay
            # Loop because a sleep may end a hair early on a coarse clock.
            while (remaining := slot - self._clock()) > 0:
                await self._sleep(remaining)
        self.grants += 1
        return True
