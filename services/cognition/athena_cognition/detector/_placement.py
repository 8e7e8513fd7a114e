"""Boundary placement: did the agent turn right before the new user message open a new topic?

In chit-chat the other speaker often introduces the new topic ("...anyway, do you like cooking?")
and the user just answers it. The user message then *continues* the agent turn, so the continuity
score stays high and the break is missed, or it is placed one turn late. The opener model
estimates P(the agent message at new_index - 1 starts a new segment) from the window up to and
including the new user message (causal: the user's reply is the evidence). `decide()` asks it
first; at or above its threshold the break opens at new_index - 1 (`Decision.starts_at`).

A small `Classifier` (detector/_classifier.py), numpy at inference, trained by `athena train opener`
(lab/athena_lab/segmentation/train_opener.py). Two artifacts beside continuity_v1:
`opener_v2.npz` reads the hand features below plus the agent turn's own embedding (what kind of
message it is: "do you like cooking?" reads as an opener whatever came before), so only the
embedding model it was trained with may run it (the `continuity` scorer's, which reads the new
message's raw embedding too); `opener_v1.npz` reads the hand features alone, whose embeddings enter
only as cosines, and runs with any embedding model (the `continuity_agnostic` scorer's). The
`continuity` scorer's opener breaks only at an agent turn typical of its training turns
(`OpenerModel.typical`, detector/_typicality.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from athena_cognition.detector._classifier import Classifier, load_classifier, packaged_artifact, save_classifier
from athena_cognition.detector._features import _ACK, _QUESTION_OPENER, _SHIFT, _content, _unit, _words
from athena_cognition.detector._turns import Turn, message_indices
from athena_cognition.detector._typicality import TypicalTurns

__all__ = [
    "AGENT_EMBEDDING_PREFIX",
    "OPENER_ARTIFACT",
    "OPENER_FEATURE_NAMES",
    "OPENER_VECTOR_ARTIFACT",
    "OpenerModel",
    "load_opener_model",
    "opener_candidate",
    "opener_feature_names",
    "opener_features",
]

OPENER_ARTIFACT = "opener_v1.npz"
"""The hand features alone: any embedding model (the `continuity_agnostic` scorer's opener)."""

OPENER_VECTOR_ARTIFACT = "opener_v2.npz"
"""The hand features and the agent turn's embedding: its own embedding model only (the `continuity` scorer's)."""

AGENT_EMBEDDING_PREFIX = "agent_emb_"
"""Feature names of the agent turn's embedding, one per dimension (`agent_emb_0`, ...)."""

OPENER_FEATURE_NAMES: tuple[str, ...] = (
    "cos_agent_user",  # agent turn vs the new user message: does the user take it up?
    "cos_agent_before",  # agent turn vs the segment before it (centroid)
    "cos_user_before",  # new user message vs the segment before the agent turn
    "cos_agent_last_user",  # agent turn vs the latest user message before it
    "cos_user_last_user",
    "agent_has_question",
    "log_agent_words",
    "user_starts_ack",
    "log_user_words",
    "agent_starts_question",
    "agent_user_minus_agent_before",
    "user_has_question",
    "overlap_user_agent",  # share of the user's content words in the agent turn
    "overlap_user_before",
    "overlap_agent_before",
    "user_starts_question",
    "agent_starts_shift_cue",
    "cos_agent_prev_agent",  # agent turn vs the agent message before it
    "log_segment_messages",  # segment length before the agent turn: topics wear out
    "cos_agent_nearest",  # agent turn vs its nearest message in the segment
    "cos_agent_last3_mean",  # agent turn vs the segment's last three messages
    "cos_agent_first",  # agent turn vs the message that opened the segment
    "agent_statement_then_question",  # "nice. do you like cooking?": react, then open
    "overlap_agent_last_sentence_before",  # content words of the agent's last sentence already in the segment
    "agent_last_sentence_topic_question",  # the agent's last sentence opens with "do you", "what about", ...
    "segment_coherence",  # length of the segment's mean vector: how tight it is
    "cos_user_first",
    "cos_user_nearest",
)


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_TOPIC_QUESTION = (
    "do you",
    "have you",
    "what do you",
    "what is your",
    "what's your",
    "are you",
    "did you",
    "what kind",
    "who is your",
    "what are your",
    "how about",
    "what about",
    "by the way",
    "anyway",
    "speaking of",
    "so ",
)


def opener_candidate(window: Sequence[Turn], new_index: int) -> bool:
    """The turn right before the new message is an agent message with a user message before it."""
    if new_index < 2:
        return False
    prev = window[new_index - 1]
    if prev.type != "message" or prev.role != "agent":
        return False
    return any(window[i].role == "user" for i in message_indices(window, new_index - 2))


def opener_feature_names(agent_embedding_dim: int = 0) -> tuple[str, ...]:
    """The hand features, then `agent_embedding_dim` columns of the agent turn's embedding (0: none)."""
    return OPENER_FEATURE_NAMES + tuple(f"{AGENT_EMBEDDING_PREFIX}{i}" for i in range(agent_embedding_dim))


def opener_features(
    window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray], *, agent_embedding: bool = False
) -> np.ndarray:
    """Feature row for "the agent message at new_index - 1 opened a new topic" (needs `opener_candidate`);
    with `agent_embedding`, the agent turn's embedding follows the hand features."""
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
    cos_agent = embs @ a
    sentences = [t.strip() for t in _SENTENCE.findall(agent_text) if t.strip()]
    last_sentence = sentences[-1] if sentences else agent_text
    last_content = _content(last_sentence)
    first = embs[0]
    hand = np.array(
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
            np.log1p(len(before)),
            cos_agent.max(),
            cos_agent[-3:].mean(),
            a @ first,
            float(len(sentences) >= 2 and last_sentence.endswith("?")),
            len(last_content & before_content) / max(1, len(last_content)),
            float(last_sentence.lower().startswith(_TOPIC_QUESTION)),
            np.linalg.norm(embs.mean(axis=0)),
            u @ first,
            (embs @ u).max(),
        ],
        dtype=np.float64,
    )
    return np.concatenate([hand, a]) if agent_embedding else hand


@dataclass(frozen=True, slots=True)
class OpenerModel:
    """P(the agent turn before the new message opened a topic) (a `Classifier`) and its threshold."""

    classifier: Classifier
    threshold: float  # P >= threshold: the break opens at the agent turn
    typical: TypicalTurns | None = None
    """When set, the break opens only at an agent turn typical of the training ones (_typicality.py)."""

    def __post_init__(self) -> None:
        names = self.classifier.feature_names
        if names != opener_feature_names(len(names) - len(OPENER_FEATURE_NAMES)):
            raise ValueError("opener trained on a different feature list; retrain it")

    @property
    def agent_embedding(self) -> bool:
        """The agent turn's embedding is among the inputs (the model runs only with its embedding model)."""
        return len(self.classifier.feature_names) > len(OPENER_FEATURE_NAMES)

    def predict(self, features: np.ndarray) -> float:
        return self.classifier.predict(features)

    def probability(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float | None:
        """None when the turn before the new message is not a candidate agent message."""
        if not opener_candidate(window, new_index):
            return None
        return self.predict(opener_features(window, new_index, vectors, agent_embedding=self.agent_embedding))

    def opens(self, probability: float | None, agent_vector: np.ndarray) -> bool:
        """Whether the agent turn, of this `probability` and embedding, opened the new topic."""
        if probability is None or probability < self.threshold:
            return False
        return self.typical is None or self.typical.holds(agent_vector)

    def save(self, path: str | Path) -> None:
        save_classifier(path, self.classifier, threshold=self.threshold)

    @classmethod
    def load(cls, path: str | Path) -> OpenerModel:
        classifier, scalars = load_classifier(path, scalars=("threshold",))
        try:
            return cls(classifier=classifier, threshold=scalars["threshold"])
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc


@lru_cache(maxsize=4)
def load_opener_model(path: str | None = None, *, artifact: str = OPENER_VECTOR_ARTIFACT) -> OpenerModel:
    """The committed `artifact` next to this module (the `continuity` scorer's by default), unless a
    path is given; loaded once per process."""
    if path is not None:
        return OpenerModel.load(path)
    with packaged_artifact(artifact) as p:
        return OpenerModel.load(p)
