"""The seed's three-way gate on a continuity score, and the fallback used when no LLM answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["GateOutcome", "Thresholds", "fallback_is_break", "gate"]

GateOutcome = Literal["high", "low", "gray"]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """score >= high: same topic; score < low: topic break; in between: the gray zone."""

    high: float
    low: float

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError(f"low threshold {self.low} exceeds high threshold {self.high}")

    @property
    def midpoint(self) -> float:
        return (self.high + self.low) / 2


def gate(score: float, thresholds: Thresholds) -> GateOutcome:
    if score >= thresholds.high:
        return "high"
    if score < thresholds.low:
        return "low"
    return "gray"


def fallback_is_break(score: float, thresholds: Thresholds) -> bool:
    """Gray zone without an LLM answer: break below the zone's midpoint, continue at or above it.

    The continuity scorer's default thresholds are calibrated so that this rule alone gives the
    measured no-LLM segmentation quality (docs/segmentation.md).
    """
    return score < thresholds.midpoint
