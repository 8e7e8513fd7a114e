"""Heat and lifecycle of chains.

    importance      = 0.5 x quality.overall + 0.25 x min(1, entities / 10) + 0.25 x activity
    activity        = share of the chain's events that are thoughts, actions or observations, x 2, capped at 1
    recall_strength = 1 - exp(-recall_count / 3)
    heat            = (importance + HEAT_RECALL_WEIGHT x recall_strength) x 0.5 ** (hours since last access / HEAT_HALF_LIFE_HOURS)

Heat grows with intrinsic importance and with recall, and decays exponentially with time since the
chain was last accessed (formed, merged into, or recalled). The archiver archives active chains whose
heat fell below HEAT_ARCHIVE_THRESHOLD once they are older than ARCHIVE_MIN_AGE_HOURS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

__all__ = ["LIFECYCLES", "HeatModel", "importance", "lifecycle_of", "recall_strength"]

LIFECYCLES = ("hot", "warm", "cooling", "cold", "archived")
"""Every value of a chain's `lifecycle` (Chain.lifecycle in memory.proto names the same, in this order)."""


def importance(*, overall: float, entity_count: int, activity: float) -> float:
    return 0.5 * overall + 0.25 * min(1.0, entity_count / 10.0) + 0.25 * min(1.0, max(0.0, activity))


def recall_strength(recall_count: int) -> float:
    return 1.0 - math.exp(-max(0, recall_count) / 3.0)


def lifecycle_of(heat: float, *, archived: bool = False) -> str:
    if archived:
        return "archived"
    if heat >= 0.6:
        return "hot"
    if heat >= 0.3:
        return "warm"
    if heat >= 0.1:
        return "cooling"
    return "cold"


@dataclass(frozen=True)
class HeatModel:
    half_life_hours: float = 168.0
    recall_weight: float = 0.5

    def heat(self, *, importance: float, recall_count: int, last_accessed_at: datetime, now: datetime) -> float:
        hours = max(0.0, (now - last_accessed_at).total_seconds() / 3600.0)
        base = importance + self.recall_weight * recall_strength(recall_count)
        return base * 0.5 ** (hours / self.half_life_hours)
