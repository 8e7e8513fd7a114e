"""A circuit breaker: stop calling a dependency that keeps failing, probe it again after a pause.

    CLOSED --(failure_threshold consecutive failures)--> OPEN
    OPEN   --(reset_seconds elapsed)-----------------> HALF_OPEN (one trial call allowed)
    HALF_OPEN --trial succeeds--> CLOSED      HALF_OPEN --trial fails--> OPEN (for another reset_seconds)

While OPEN every call is refused without touching the network, so an outage costs nothing per task
instead of a timeout each. State changes happen lazily when the breaker is consulted; no timers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import StrEnum

__all__ = ["BreakerState", "CircuitBreaker"]

_log = logging.getLogger("athena.llm")


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Consecutive-failure breaker with a single half-open trial.

    Protocol for a caller: `allow()` before the call (False: skip it); then exactly one of
    `record_success()`, `record_failure()`, or `release()` (the permitted call never ran, for example it
    was cancelled or refused by a rate limiter), so a half-open trial can never be lost.

    Counters: `opens` (times the breaker opened), `consecutive_failures`.
    """

    def __init__(
        self,
        failure_threshold: int,
        reset_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        name: str = "llm",
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if reset_seconds <= 0:
            raise ValueError("reset_seconds must be positive")
        self.failure_threshold = failure_threshold
        self.reset_seconds = reset_seconds
        self.name = name
        self._clock = clock
        self._state = BreakerState.CLOSED
        self._opened_at = 0.0
        self._trial_started_at: float | None = None
        self.consecutive_failures = 0
        self.opens = 0

    @property
    def state(self) -> BreakerState:
        self._refresh()
        return self._state

    def _refresh(self) -> None:
        now = self._clock()
        if self._state is BreakerState.OPEN and now - self._opened_at >= self.reset_seconds:
            self._transition(BreakerState.HALF_OPEN)
        elif (
            self._state is BreakerState.HALF_OPEN
            and self._trial_started_at is not None
            and now - self._trial_started_at >= self.reset_seconds
        ):
            # Safety net: a trial whose outcome never came back must not block every later call.
            self._trial_started_at = None

    def _transition(self, new: BreakerState) -> None:
        old, self._state = self._state, new
        if new is BreakerState.OPEN:
            self._opened_at = self._clock()
            self.opens += 1
        self._trial_started_at = None
        level = logging.WARNING if new is BreakerState.OPEN else logging.INFO
        _log.log(level, "circuit breaker %s: %s -> %s", self.name, old.value, new.value)

    def allow(self) -> bool:
        """May a call go out now? In HALF_OPEN only the first caller gets the trial."""
        self._refresh()
        if self._state is BreakerState.CLOSED:
            return True
        if self._state is BreakerState.HALF_OPEN and self._trial_started_at is None:
            self._trial_started_at = self._clock()
            return True
        return False

    def would_allow(self) -> bool:
        """What allow() would answer now, without taking the half-open trial (a cheap pre-check)."""
        self._refresh()
        return self._state is BreakerState.CLOSED or (
            self._state is BreakerState.HALF_OPEN and self._trial_started_at is None
        )

    def record_success(self) -> None:
        self.consecutive_failures = 0
        self._refresh()
        # A late success from a call started before the breaker opened proves little; only a
        # HALF_OPEN success (normally the trial) closes the breaker.
        if self._state is BreakerState.HALF_OPEN:
            self._transition(BreakerState.CLOSED)

    def record_failure(self) -> None:
        self._refresh()
        if self._state is BreakerState.CLOSED:
            self.consecutive_failures += 1
            if self.consecutive_failures >= self.failure_threshold:
                self._transition(BreakerState.OPEN)
        elif self._state is BreakerState.HALF_OPEN:
            self._transition(BreakerState.OPEN)
        # Already OPEN: a late failure must not extend the pause.

    def release(self) -> None:
        """A permitted call did not run after all: free the half-open trial for the next caller."""
        if self._state is BreakerState.HALF_OPEN:
            self._trial_started_at = None
