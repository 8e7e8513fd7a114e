"""A circuit breaker: stop calling a dependency that keeps failing, probe it again after a pause.

    CLOSED --(failure_threshold consecutive failures)--> OPEN
    OPEN   --(reset_seconds elapsed)-----------------> HALF_OPEN (one trial call allowed)
    HALF_OPEN --trial succeeds--> CLOSED      HALF_OPEN --trial fails--> OPEN (for another reset_seconds)

While OPEN every call is refused without touching the network, so an outage costs nothing per task
instead of a timeout each. State changes happen lazily when the breaker is consulted; no timers.

LLMClient consults a `Breaker` through its asynchronous methods (`acheck`, `aadmit`, `arecord_success`,
`arecord_failure`, `arelease`): CircuitBreaker (this process alone) answers them at once, and
athena.llm.SharedCircuitBreaker keeps the same state machine in Redis for every process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Protocol

__all__ = ["Breaker", "BreakerState", "CircuitBreaker", "check_breaker"]

_log = logging.getLogger("athena.llm")


def check_breaker(failure_threshold: int, reset_seconds: float) -> None:
    """A breaker's arguments: a threshold of at least 1, a positive reset."""
    if failure_threshold < 1:
        raise ValueError("failure_threshold must be at least 1")
    if reset_seconds <= 0:
        raise ValueError("reset_seconds must be positive")


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Breaker(Protocol):
    """What LLMClient needs from a circuit breaker (CircuitBreaker, SharedCircuitBreaker).

    Protocol for a caller: `acheck()` (a cheap pre-check), `aadmit()` right before the call (None: skip
    it; HALF_OPEN: this caller holds the trial), then exactly one of `arecord_success()`,
    `arecord_failure()` or `arelease()` (the permitted call never ran).
    """

    opens: int
    """Times this breaker object opened the breaker."""
    consecutive_failures: int

    @property
    def state(self) -> BreakerState: ...

    async def acheck(self) -> bool: ...

    async def aadmit(self) -> BreakerState | None: ...

    async def arecord_success(self) -> None: ...

    async def arecord_failure(self) -> None: ...

    async def arelease(self) -> None: ...


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
        check_breaker(failure_threshold, reset_seconds)
        self.failure_threshold = failure_threshold
        self.reset_seconds = reset_seconds
        self.name = name
        self._clock = clock
        self._state = BreakerState.CLOSED
        self._opened_at = 0.0
        self._trial_started_at: float | None = None
        self.consecutive_failures = 0
        self.opens = 0
        self.observer: Callable[[str, str], None] | None = None
        """Hears ("opened", "") each time the breaker opens (athena.llm.BudgetObserver; metrics)."""

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
            if self.observer is not None:
                try:
                    self.observer("opened", "")
                except Exception:  # a metrics bug must not break the call path
                    _log.exception("breaker observer failed")
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

    # --- the Breaker protocol (LLMClient): the same, answered at once ------------------------------------

    async def acheck(self) -> bool:
        return self.would_allow()

    async def aadmit(self) -> BreakerState | None:
        """allow(), saying how: HALF_OPEN when this caller got the trial, CLOSED, or None (refused)."""
        # Read right before allow() with nothing in between, so it is exactly "this is the trial".
        trial = self.state is BreakerState.HALF_OPEN
        if not self.allow():
            return None
        return BreakerState.HALF_OPEN if trial else BreakerState.CLOSED

    async def arecord_success(self) -> None:
        self.record_success()

    async def arecord_failure(self) -> None:
        self.record_failure()

    async def arelease(self) -> None:
        self.release()
