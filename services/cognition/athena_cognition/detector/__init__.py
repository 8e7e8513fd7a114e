"""Chain-break detection: does the newest user message continue the current topic segment?

`decide()` is the single decision the cognition worker makes; `replay()` segments a whole
conversation with it, the one replay the offline evaluation, training and benchmark (athena_lab) share.
"""

from athena_cognition.detector._decide import Arbiter, Decision, Path, decide, decision_texts, prefetch_embeddings
from athena_cognition.detector._embedding_match import check_scorer_embedding, embedding_mismatch
from athena_cognition.detector._gate import Thresholds, fallback_is_break, gate
from athena_cognition.detector._placement import OpenerModel, load_opener_model
from athena_cognition.detector._replay import Replay, replay
from athena_cognition.detector._scorers import (
    AgnosticContinuityScorer,
    ContinuityModel,
    ContinuityScorer,
    PairCosineScorer,
    Scorer,
    default_thresholds,
    load_continuity_model,
    make_scorer,
)
from athena_cognition.detector._settings import thresholds_from_settings
from athena_cognition.detector._turns import Turn, is_user_message

__all__ = [
    "AgnosticContinuityScorer",
    "Arbiter",
    "ContinuityModel",
    "ContinuityScorer",
    "Decision",
    "OpenerModel",
    "PairCosineScorer",
    "Path",
    "Replay",
    "Scorer",
    "Thresholds",
    "Turn",
    "check_scorer_embedding",
    "decide",
    "decision_texts",
    "default_thresholds",
    "embedding_mismatch",
    "fallback_is_break",
    "gate",
    "is_user_message",
    "load_continuity_model",
    "load_opener_model",
    "make_scorer",
    "prefetch_embeddings",
    "replay",
    "thresholds_from_settings",
]
