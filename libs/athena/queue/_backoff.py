"""Retry policy and backoff strategies (redis-py `backoff.py` / temporalio `RetryPolicy` style)."""

from __future__ import annotations

from dataclasses import dataclass, field

# One retry strategy for the client and the services: the client's (the services depend on it).
from athena_client.retry import Backoff, ExponentialFullJitter

__all__ = ["Backoff", "ExponentialFullJitter", "NoBackoff", "RetryPolicy"]

_QUEUE_BACKOFF_BASE, _QUEUE_BACKOFF_CAP = 1.0, 60.0
"""A task's retry waits by default (QUEUE_BACKOFF_BASE_SECONDS / QUEUE_BACKOFF_MAX_SECONDS set them in the services)."""


@dataclass(frozen=True)
class NoBackoff:
    """Retry at once. Only for tests: the seed's behaviour that this project replaced."""

    def compute(self, failures: int) -> float:
        return 0.0


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    """Attempts in all, the first included; then the task is dead-lettered."""
    backoff: Backoff = field(
        default_factory=lambda: ExponentialFullJitter(base=_QUEUE_BACKOFF_BASE, cap=_QUEUE_BACKOFF_CAP)
    )
    max_outage_attempts: int = 0
    """Attempts in all when the failures are a dependency outage (the dependency, not the task, is at
    fault, so an outage longer than max_attempts' backoff must not dead-letter); 0 means max_attempts."""
    max_deliveries: int = 0
    """Deliveries without an outcome (the worker died holding the task) before it is dead-lettered as
    stalled; 0 means max_attempts + 2."""

    def stall_limit(self) -> int:
        return self.max_deliveries or self.max_attempts + 2

    def attempts_for(self, *, outage: bool) -> int:
        return max(self.max_attempts, self.max_outage_attempts) if outage else self.max_attempts
