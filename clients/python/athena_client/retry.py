"""How long the client waits between attempts of a call the server answered UNAVAILABLE."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["Backoff", "ExponentialFullJitter"]


class Backoff(Protocol):
    """Anything with `compute(failures) -> seconds` (the server's athena.queue backoffs fit too)."""

    def compute(self, failures: int) -> float:
        """Seconds to wait after the `failures`-th consecutive failure (1-based)."""
        ...


@dataclass(frozen=True)
class ExponentialFullJitter:
    """uniform(0, min(cap, base * 2**(failures-1))): AWS's "full jitter", spreads the retries of many
    clients after an outage instead of bringing them back all at once."""

    base: float = 0.2
    cap: float = 5.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def compute(self, failures: int) -> float:
        ceiling = min(self.cap, self.base * (2 ** max(0, failures - 1)))
        return self.rng.uniform(0.0, ceiling)
