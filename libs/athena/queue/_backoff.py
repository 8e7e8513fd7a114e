"""Retry policy and backoff strategies (redis-py `backoff.py` / temporalio `RetryPolicy` style)."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

__all__ = ["Backoff", "ExponentialFullJitter", "NoBackoff", "RetryPolicy"]


class Backoff(ABC):
    @abstractmethod
    def compute(self, failures: int) -> float:
        """Seconds to wait after the `failures`-th consecutive failure (1-based)."""


@dataclass(frozen=True)
class ExponentialFullJitter(Backoff):
    """uniform(0, min(cap, base * 2**(failures-1))): AWS's "full jitter", spreads retries of many tasks."""

    base: float = 1.0
    cap: float = 60.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def compute(self, failures: int) -> float:
        ceiling = min(self.cap, self.base * (2 ** max(0, failures - 1)))
        return self.rng.uniform(0.0, ceiling)


@dataclass(frozen=True)
class NoBackoff(Backoff):
    """Retry at once. Only for tests: the seed's behaviour that this project replaced."""

    def compute(self, failures: int) -> float:
        return 0.0


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    """Attempts in all, the first included; then the task is dead-lettered."""
    backoff: Backoff = field(default_factory=ExponentialFullJitter)
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
