"""Boundary placement: did the agent turn right before the new user message open a new topic?

In chit-chat the other speaker often introduces the new topic ("...anyway, do you like cooking?")
and the user just answers it. The user message then *continues* the agent turn, so the continuity
score stays high and the break is missed, or it is placed one turn late. The opener model
estimates P(the agent message at new_index - 1 starts a new segment) from the window up to and
including the new user message (causal: the user's reply is the evidence). `decide()` asks it
first; at or above its threshold the break opens at new_index - 1 (`Decision.starts_at`).

Small logistic regression on 18 hand features, numpy at inference; trained by
`athena train opener` (training/train_opener.py), artifact `opener_v1.npz` beside continuity_v1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from athena_cognition.detector._features import _ACK, _QUESTION_OPENER, _SHIFT, _content, _unit, _words
from athena_cognition.detector._turns import Turn, message_indices

__all__ = [
    "OPENER_ARTIFACT",
    "OPENER_FEATURE_NAMES",
    "OpenerModel",
    "load_opener_model",
    "opener_candidate",
    "opener_features",
]

OPENER_ARTIFACT = "opener_v1.npz"

OPENER_FEATURE_NAMES: tuple[str, ...] = (
    "cos_agent_user",            # agent turn vs the new user message: does the user take it up?
    "cos_agent_before",          # agent turn vs the segment before it (centroid)
    "cos_user_before",           # new user message vs the segment before the agent turn
    "cos_agent_last_user",       # agent turn vs the latest user message before it
    "cos_user_last_user",
    "agent_has_question",
    "log_agent_words",
    "user_starts_ack",
    "log_user_words",
    "agent_starts_question",
    "agent_user_minus_agent_before",
    "user_has_question",
    "overlap_user_agent",        # share of the user's content words in the agent turn
    "overlap_user_before",
    "overlap_agent_before",
    "user_starts_question",
    "agent_starts_shift_cue",
    "cos_agent_prev_agent",      # agent turn vs the agent message before it
)


def opener_candidate(window: Sequence[Turn], new_index: int) -> bool:
    """The turn right before the new message is an agent message with a user message before it."""
    if new_index < 2:
        return False
    prev = window[new_index - 1]
    if prev.type != "message" or prev.role != "agent":
        return False
    return any(window[i].role == "user" for i in message_indices(window, new_index - 2))


def opener_features(window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> np.ndarray:
    """Feature row for "the agent message at new_index - 1 opened a new topic" (needs `opener_candidate`)."""
    if not opener_candidate(window, new_index):
        raise ValueError("no agent message with an earlier user message right before the new message")
    j = new_index - 1
    before = message_indices(window, j - 1)
    a = np.asarray(vectors[j], dtype=np.float64)
    u = np.asarray(vectors[new_index], dtype=np.float64)
    embs = np.stack([np.asarray(vectors[k], dtype=np.float64) for k in before])
    centroid = _unit(embs.mean(axis=0))
    users = [k for k in before if window[k].role == "user"]
    agents = [k for k in before if window[k].role == "agent"]
    last_user = np.asarray(vectors[users[-1]], dtype=np.float64) if users else centroid
    prev_agent = np.asarray(vectors[agents[-1]], dtype=np.float64) if agents else centroid
    agent_text, user_text = window[j].content, window[new_index].content
    agent_lower, user_lower = agent_text.lower().strip(), user_text.lower().strip()
    agent_content, user_content = _content(agent_text), _content(user_text)
    before_content: set[str] = set().union(*(_content(window[k].content) for k in before))
    return np.array(
        [
            a @ u,
            a @ centroid,
            u @ centroid,
            a @ last_user,
            u @ last_user,
            float("?" in agent_text),
            np.log1p(len(_words(agent_text))),
            float(user_lower.startswith(_ACK)),
            np.log1p(len(_words(user_text))),
            float(agent_lower.startswith(_QUESTION_OPENER)),
            a @ u - a @ centroid,
            float("?" in user_text),
            len(user_content & agent_content) / max(1, len(user_content)),
            len(user_content & before_content) / max(1, len(user_content)),
            len(agent_content & before_content) / max(1, len(agent_content)),
            float(user_lower.startswith(_QUESTION_OPENER)),
            float(agent_lower.startswith(_SHIFT)),
            a @ prev_agent,
        ],
        dtype=np.float64,
    )


@dataclass(frozen=True, slots=True)
class OpenerModel:
    """Standardize, then logistic regression: P(the agent turn before the new message opened a topic)."""

    feature_names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float  # P >= threshold: the break opens at the agent turn

    def predict(self, features: np.ndarray) -> float:
        z = float(((features - self.mean) / self.scale) @ self.coef + self.intercept)
        if z >= 0:
            return 1.0 / (1.0 + float(np.exp(-z)))
        ez = float(np.exp(z))
        return ez / (1.0 + ez)

    def probability(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float | None:
        """None when the turn before the new message is not a candidate agent message."""
        if not opener_candidate(window, new_index):
            return None
        return self.predict(opener_features(window, new_index, vectors))

    def save(self, path: str | Path) -> None:
        np.savez(
            path,
            feature_names=np.array(self.feature_names),
            mean=self.mean.astype(np.float64),
            scale=self.scale.astype(np.float64),
            coef=self.coef.astype(np.float64),
            intercept=np.array(self.intercept, dtype=np.float64),
            threshold=np.array(self.threshold, dtype=np.float64),
        )

    @classmethod
    def load(cls, path: str | Path) -> "OpenerModel":
        with np.load(path, allow_pickle=False) as z:
            model = cls(
                feature_names=tuple(str(n) for n in z["feature_names"]),
                mean=z["mean"].astype(np.float64),
                scale=z["scale"].astype(np.float64),
                coef=z["coef"].astype(np.float64),
                intercept=float(z["intercept"]),
                threshold=float(z["threshold"]),
            )
        if model.feature_names != OPENER_FEATURE_NAMES:
            raise ValueError(f"{path}: trained on a different opener feature list; retrain it")
        n = len(OPENER_FEATURE_NAMES)
        if not (model.mean.shape == model.scale.shape == model.coef.shape == (n,)):
            raise ValueError(f"{path}: parameter shapes do not match {n} features")
        return model


@lru_cache(maxsize=4)
def load_opener_model(path: str | None = None) -> OpenerModel:
    """The committed artifact next to this module, unless a path is given; loaded once per process."""
    if path is not None:
        return OpenerModel.load(path)
    with resources.as_file(resources.files("athena_cognition.detector") / OPENER_ARTIFACT) as p:
        return OpenerModel.load(p)
