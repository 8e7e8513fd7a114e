"""Features of "does the new user message continue the segment so far?", causal by construction.

Everything is computed from the window up to and including the new message: the segment so far
(its messages and their embeddings) and the new message itself. Turns after the new message are
never read. Cost: a few dozen dot products over at most a window of 384-d vectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from athena.text import is_unspaced, terms, tokens
from athena_cognition.detector._turns import Turn, message_indices

__all__ = ["EMBEDDING_FEATURE_PREFIX", "HAND_FEATURE_NAMES", "extract_features", "feature_names", "hand_features"]

# Message openers; tuples so str.startswith takes them directly.
_ACK = (
    "yes",
    "no",
    "ok",
    "okay",
    "sure",
    "thanks",
    "thank",
    "yeah",
    "yep",
    "nope",
    "great",
    "alright",
    "right",
    "correct",
    "not",
    "i do",
    "i am",
    "i did",
)
_ANAPHOR = ("it ", "that ", "this ", "they ", "those ", "these ", "he ", "she ", "his ", "her ", "them ", "there ")
_SHIFT = (
    "also",
    "by the way",
    "btw",
    "what about",
    "how about",
    "another",
    "one more",
    "additionally",
    "and what",
    "i also",
    "other question",
    "now",
)
_GREETING = ("hi", "hello", "hey", "good morning", "good evening", "good afternoon")
_QUESTION_OPENER = (
    "what",
    "how",
    "do you",
    "did you",
    "have you",
    "are you",
    "where",
    "who",
    "which",
    "when",
    "why",
    "is there",
    "can you",
    "would you",
    "any ",
)
_FIRST_PERSON = ("i ", "my ", "i'm")

HAND_FEATURE_NAMES: tuple[str, ...] = (
    "cos_prev_agent",  # new vs the latest agent message of the segment
    "cos_prev_user",  # new vs the latest user message (the seed's pair cosine)
    "cos_first",  # new vs the message that opened the segment
    "cos_centroid",  # new vs the mean of the segment's messages
    "cos_max",  # new vs its nearest message in the segment
    "cos_last",  # new vs the message right before it
    "cos_user_centroid",  # new vs the mean of the segment's user messages
    "cos_last3_mean",  # new vs the last three messages, averaged
    "segment_coherence",  # length of the segment's mean vector: how tight the segment is
    "log_segment_messages",
    "log_segment_user_messages",
    "log_new_words",
    "new_has_question",
    "new_starts_ack",  # "yes", "ok", "thanks": an answer, not a new topic
    "new_starts_anaphor",  # "it ...", "that ...": refers back
    "new_starts_shift_cue",  # "also", "by the way", "what about"
    "new_starts_greeting",
    "prev_agent_ends_question",
    "prev_is_user",  # two user messages in a row
    "overlap_segment",  # share of the new message's content words already in the segment
    "overlap_prev_agent",
    "new_no_content_words",
    "log_prev_agent_words",
    "agent_drift",  # latest agent message vs the segment before it: did the agent move on?
    "cos_before_agent",  # new vs the segment before the latest agent message
    "prev_agent_starts_question",
    "prev_agent_has_question",
    "cos_prev_user_prev_agent",
    "new_starts_question",
    "new_starts_first_person",
    "question_after_question",  # the agent asked, and the user answers with a question of their own
)
EMBEDDING_FEATURE_PREFIX = "new_embedding_"


def feature_names(dim: int) -> list[str]:
    return [*HAND_FEATURE_NAMES, *(f"{EMBEDDING_FEATURE_PREFIX}{i}" for i in range(dim))]


def _words(text: str) -> list[str]:
    """The message's tokens (athena.text: any script, casefolded, CJK and Thai runs as bigrams)."""
    return tokens(text)


def _content(text: str) -> set[str]:
    """The message's content words: its terms (stop words of its language dropped, stemmed), of three
    letters or more unless of an unspaced script (a CJK or Thai bigram), so that "dogs" meets "dog"
    and Russian, Chinese or Thai words count too."""
    return {t for t in terms(text) if len(t) > 2 or is_unspaced(t)}


def _unit(vec: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


def extract_features(window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> np.ndarray:
    """Feature row for the user message at `new_index`: the hand features, then the new message's own
    embedding; `vectors` maps message indices to unit embeddings.

    Needs at least one earlier message in the window (the detector only scores from the second
    user message of a segment on).
    """
    e = np.asarray(vectors[new_index], dtype=np.float64)
    return np.concatenate([hand_features(window, new_index, vectors), e])


def hand_features(window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> np.ndarray:
    """The `HAND_FEATURE_NAMES` row alone. The embeddings enter it only through cosines and the length
    of a mean of unit vectors, so it has the same size whatever the embedding model's dimension
    (the model-agnostic continuity scorer reads only this)."""
    idx = message_indices(window, new_index)
    if not idx or idx[-1] != new_index:
        raise ValueError("the new turn must be a user or agent message")
    prev_idx = idx[:-1]
    if not prev_idx:
        raise ValueError("need at least one earlier message in the window")
    new_text = window[new_index].content
    e = np.asarray(vectors[new_index], dtype=np.float64)
    embs = np.stack([np.asarray(vectors[i], dtype=np.float64) for i in prev_idx])
    roles = [window[i].role for i in prev_idx]
    texts = [window[i].content for i in prev_idx]
    cos = embs @ e

    agents = [k for k, r in enumerate(roles) if r == "agent"]
    users = [k for k, r in enumerate(roles) if r == "user"]
    centroid = embs.mean(axis=0)
    user_centroid = embs[users].mean(axis=0) if users else centroid
    prev_agent_text = texts[agents[-1]] if agents else ""
    prev_agent_lower = prev_agent_text.lower().strip()
    new_lower = new_text.lower().strip()
    new_content = _content(new_text)
    segment_content: set[str] = set().union(*(_content(t) for t in texts))
    agent_content = _content(prev_agent_text)
    n_content = max(1, len(new_content))

    if agents:
        a = agents[-1]
        ea = embs[a]
        if a > 0:
            before = _unit(embs[:a].mean(axis=0))
            agent_drift, cos_before_agent = float(ea @ before), float(e @ before)
        else:
            agent_drift, cos_before_agent = 1.0, float(e @ ea)
    else:
        ea = e
        agent_drift, cos_before_agent = 1.0, 0.0
    eu = embs[users[-1]] if users else e

    hand = [
        float(cos[agents[-1]]) if agents else 0.0,
        float(cos[users[-1]]) if users else 0.0,
        float(cos[0]),
        float(e @ _unit(centroid)),
        float(cos.max()),
        float(cos[-1]),
        float(e @ _unit(user_centroid)),
        float(cos[-3:].mean()),
        float(np.linalg.norm(centroid)),
        float(np.log1p(len(prev_idx))),
        float(np.log1p(len(users))),
        float(np.log1p(len(_words(new_text)))),
        float("?" in new_text),
        float(new_lower.startswith(_ACK)),
        float(new_lower.startswith(_ANAPHOR)),
        float(new_lower.startswith(_SHIFT)),
        float(new_lower.startswith(_GREETING)),
        float(prev_agent_text.strip().endswith("?")),
        float(roles[-1] == "user"),
        len(new_content & segment_content) / n_content,
        len(new_content & agent_content) / n_content,
        float(not new_content),
        float(np.log1p(len(_words(prev_agent_text)))),
        agent_drift,
        cos_before_agent,
        float(prev_agent_lower.startswith(_QUESTION_OPENER)),
        float("?" in prev_agent_text),
        float(eu @ ea),
        float(new_lower.startswith(_QUESTION_OPENER)),
        float(new_lower.startswith(_FIRST_PERSON)),
        float(roles[-1] == "agent" and "?" in texts[-1] and "?" in new_text),
    ]
    return np.asarray(hand, dtype=np.float64)
