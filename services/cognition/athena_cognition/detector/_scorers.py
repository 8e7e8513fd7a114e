"""Continuity scorers: how much the new user message continues the segment so far (higher = same topic)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from athena.text import ends_in_question, latin_share, terms
from athena_cognition.detector._classifier import Classifier, load_classifier, packaged_artifact, save_classifier
from athena_cognition.detector._features import HAND_FEATURE_NAMES, extract_features, feature_names, hand_features
from athena_cognition.detector._gate import Thresholds
from athena_cognition.detector._placement import OPENER_ARTIFACT, OpenerModel, load_opener_model
from athena_cognition.detector._turns import Turn, message_indices, user_message_indices
from athena_cognition.detector._typicality import load_typical_agent_turns

__all__ = [
    "AGNOSTIC_ARTIFACT",
    "CONTINUITY_ARTIFACT",
    "LEXICAL_OVERLAP_THRESHOLDS",
    "AgnosticContinuityScorer",
    "ContinuityModel",
    "ContinuityScorer",
    "EveryUserMessageScorer",
    "LexicalOverlapScorer",
    "PairCosineScorer",
    "Scorer",
    "default_thresholds",
    "load_continuity_model",
    "make_scorer",
]

CONTINUITY_ARTIFACT = "continuity_v1.npz"
AGNOSTIC_ARTIFACT = "continuity_agnostic_v1.npz"
PAIR_COSINE_THRESHOLDS = Thresholds(high=0.72, low=0.52)  # the seed's CHAIN_SIM_HIGH / CHAIN_SIM_LOW
LEXICAL_OVERLAP_THRESHOLDS = Thresholds(high=0.6, low=0.6)
"""lexical_overlap breaks below 0.6 and has no gray zone: the best share of the grid measured on the
training dialogues (docs/segmentation.md, "Languages")."""
READABLE_LATIN_SHARE = 0.5
"""A text is read by the English-trained model when at least this share of its letters is Latin."""


@runtime_checkable
class Scorer(Protocol):
    """Scores the user message at `new_index` against the window before it; never reads later turns."""

    @property
    def name(self) -> str: ...

    def needed_indices(self, window: Sequence[Turn], new_index: int) -> list[int]:
        """Window positions whose embeddings `score` reads (so a caller can embed them in one batch)."""
        ...

    def score(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float: ...


class PairCosineScorer:
    """The seed's rule exactly: cosine between the two most recent user messages."""

    name = "pair_cosine"

    def needed_indices(self, window: Sequence[Turn], new_index: int) -> list[int]:
        return user_message_indices(window, new_index)[-2:]

    def score(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float:
        prev, cur = self.needed_indices(window, new_index)
        return float(np.dot(vectors[prev], vectors[cur]))


class EveryUserMessageScorer:
    """Baseline only: scores 0, so every checked user message breaks. Not a production choice."""

    name = "every_user"
    reads_embeddings = False  # lets the evaluation skip embedding work

    def needed_indices(self, window: Sequence[Turn], new_index: int) -> list[int]:
        return []

    def score(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float:
        return 0.0


class LexicalOverlapScorer:
    """No embedding: the share of the new user message's terms (athena.text.terms, any script) found in
    the two messages before it in the segment; 1 for a message without terms ("ok", "thanks") and for
    one right after the agent's question ("プリヤです。" after "お名前は？"): an answer continues. What
    decide() falls back to where the embedding model cannot read the messages
    (`ContinuityScorer.reads`), and a scorer of its own to measure that rule."""

    name = "lexical_overlap"
    reads_embeddings = False  # lets the evaluation skip embedding work

    def needed_indices(self, window: Sequence[Turn], new_index: int) -> list[int]:
        return []

    def score(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float:
        new = set(terms(window[new_index].content))
        if not new or _answers_the_agent(window, new_index):
            return 1.0
        before = message_indices(window, new_index)[-3:-1]
        seen = {t for i in before for t in terms(window[i].content)}
        return len(new & seen) / len(new)


def _answers_the_agent(window: Sequence[Turn], new_index: int) -> bool:
    """The event right before the new message is the agent's message ending in a question."""
    if new_index == 0:
        return False
    last = window[new_index - 1]
    return last.role == "agent" and last.type == "message" and ends_in_question(last.content)


@dataclass(frozen=True, slots=True)
class ContinuityModel:
    """P(same topic | features) (a `Classifier`) and the gate thresholds calibrated for it.

    `opener_threshold`: the opener threshold chosen together with this model's gate; None means the
    opener artifact's own (chosen with the default continuity model), and a value above 1 means no
    placement (the opener never fires).
    """

    classifier: Classifier
    thresholds: Thresholds
    opener_threshold: float | None = None

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.classifier.feature_names

    @property
    def embedding_dim(self) -> int:
        """How many inputs are the new message's raw embedding: 0 for a model that reads only cosines."""
        return len(self.feature_names) - len(HAND_FEATURE_NAMES)

    def predict(self, features: np.ndarray) -> float:
        return self.classifier.predict(features)

    def save(self, path: str | Path) -> None:
        scalars = {"high": self.thresholds.high, "low": self.thresholds.low}
        if self.opener_threshold is not None:
            scalars["opener_threshold"] = self.opener_threshold
        save_classifier(path, self.classifier, **scalars)

    @classmethod
    def load(cls, path: str | Path) -> ContinuityModel:
        classifier, scalars = load_classifier(path, scalars=("high", "low"), optional_scalars=("opener_threshold",))
        return cls(
            classifier=classifier,
            thresholds=Thresholds(high=scalars["high"], low=scalars["low"]),
            opener_threshold=scalars.get("opener_threshold"),
        )


@lru_cache(maxsize=4)
def load_continuity_model(path: str | None = None, *, agnostic: bool = False) -> ContinuityModel:
    """The committed artifact next to this module (`agnostic`: the model-agnostic one), unless a path
    is given; loaded once per process."""
    if path is not None:
        return ContinuityModel.load(path)
    with packaged_artifact(AGNOSTIC_ARTIFACT if agnostic else CONTINUITY_ARTIFACT) as p:
        return ContinuityModel.load(p)


class ContinuityScorer:
    """The learned continuity model over the whole segment so far (see docs/segmentation.md).

    A model with the raw embedding among its inputs needs vectors of that size (and, to mean
    anything, of the model it was trained with); a model without it reads only cosines.
    """

    name = "continuity"
    agnostic = False

    def __init__(
        self,
        model: ContinuityModel | None = None,
        *,
        artifact: str | Path | None = None,
        opener: OpenerModel | None = None,
    ) -> None:
        if model is None:
            model = load_continuity_model(str(artifact) if artifact else None, agnostic=self.agnostic)
        self._model = model
        # Boundary placement (detector/_placement.py): None = breaks always open at the new message.
        self.opener = opener
        dim = model.embedding_dim
        if dim < 0 or list(model.feature_names) != feature_names(dim):
            raise ValueError("continuity artifact was trained on a different feature list; retrain it")
        if self.agnostic and dim != 0:
            raise ValueError(
                "a model-agnostic continuity model has no embedding features; this one reads the raw vector"
            )
        self._dim = dim

    @property
    def model(self) -> ContinuityModel:
        return self._model

    def reads(self, text: str) -> bool:
        """Whether the embedding of `text` tells its topic. all-MiniLM-L6-v2 learned English: on text
        mostly in other scripts (Chinese, Cyrillic, Hangul, Arabic...) its cosines are as high between
        two topics as within one, and the model would never see a break (docs/segmentation.md,
        "Languages"). The model-agnostic scorer runs with any embedding model, so it reads everything."""
        if self.agnostic:
            return True
        share = latin_share(text)
        return share is None or share >= READABLE_LATIN_SHARE

    def needed_indices(self, window: Sequence[Turn], new_index: int) -> list[int]:
        return message_indices(window, new_index)

    def score(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float:
        if self._dim == 0:
            return self._model.predict(hand_features(window, new_index, vectors))
        if len(vectors[new_index]) != self._dim:
            raise ValueError(f"continuity model expects {self._dim}-d embeddings, got {len(vectors[new_index])}")
        return self._model.predict(extract_features(window, new_index, vectors))


class AgnosticContinuityScorer(ContinuityScorer):
    """The continuity scorer without the raw embedding among its features: the embedding model's
    vectors enter it only as cosines, so it runs with any embedding model and dimension
    (artifact `continuity_agnostic_v1.npz`, trained by `athena train continuity --agnostic`)."""

    name = "continuity_agnostic"
    agnostic = True


def _opener_for(model: ContinuityModel) -> OpenerModel | None:
    """The committed opener of the hand features alone (any embedding model) at the threshold chosen
    with `model`'s gate (None: no placement)."""
    opener = load_opener_model(artifact=OPENER_ARTIFACT)
    if model.opener_threshold is None:
        return opener
    if not math.isfinite(model.opener_threshold) or model.opener_threshold > 1.0:
        return None
    return replace(opener, threshold=model.opener_threshold)


def make_scorer(name: str, *, placement: bool = True) -> Scorer:
    """ "continuity" (default), "continuity_agnostic" (any embedding model), "pair_cosine" (the seed's
    rule), "every_user" (a baseline for evaluation) or "lexical_overlap" (the rule for text the
    embedding model cannot read, on its own for evaluation).

    `placement` (the continuity scorers): also load the committed opener model, so a break can open
    at the agent turn before the new message (`Decision.starts_at`), for `continuity` only at an
    agent turn typical of the opener's training turns (detector/_typicality.py); False reproduces
    the older behaviour.
    """
    key = getattr(name, "value", name)
    if key == "continuity":
        return ContinuityScorer(
            opener=replace(load_opener_model(), typical=load_typical_agent_turns()) if placement else None
        )
    if key == "continuity_agnostic":
        model = load_continuity_model(agnostic=True)
        return AgnosticContinuityScorer(model, opener=_opener_for(model) if placement else None)
    if key == "pair_cosine":
        return PairCosineScorer()
    if key == "every_user":
        return EveryUserMessageScorer()
    if key == "lexical_overlap":
        return LexicalOverlapScorer()
    raise ValueError(f"unknown chain scorer {name!r}")


def default_thresholds(scorer_name: str) -> Thresholds:
    """The scorer's calibrated gate: the seed's 0.72 / 0.52 for pair_cosine, the artifact's for the continuity scorers."""
    key = getattr(scorer_name, "value", scorer_name)
    if key == "pair_cosine":
        return PAIR_COSINE_THRESHOLDS
    if key == "continuity":
        return load_continuity_model().thresholds
    if key == "continuity_agnostic":
        return load_continuity_model(agnostic=True).thresholds
    if key == "every_user":
        return Thresholds(high=1.0, low=1.0)
    if key == "lexical_overlap":
        return LEXICAL_OVERLAP_THRESHOLDS
    raise ValueError(f"unknown chain scorer {scorer_name!r}")
