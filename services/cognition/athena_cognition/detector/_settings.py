"""Thresholds from the settings: CHAIN_SIM_HIGH / CHAIN_SIM_LOW override the chosen scorer's defaults."""

from __future__ import annotations

from athena.config import Settings
from athena_cognition.detector._gate import Thresholds
from athena_cognition.detector._scorers import default_thresholds

__all__ = ["thresholds_from_settings"]


def thresholds_from_settings(settings: Settings) -> Thresholds:
    defaults = default_thresholds(settings.chain_scorer.value)
    high = defaults.high if settings.chain_sim_high is None else settings.chain_sim_high
    low = defaults.low if settings.chain_sim_low is None else settings.chain_sim_low
    return Thresholds(high=high, low=low)  # raises if one override crosses the other default
