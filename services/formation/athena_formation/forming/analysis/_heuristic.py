"""The heuristic analysis: key phrases for topics, patterns for entities, an extractive summary.

Topics (see _keywords for the phrase scoring):
  - main topic: the best key phrase. Its confidence is 0.3 + 0.7 * coverage, where coverage is the
    share of the dialogue messages with a content word that mention one of its words.
  - subtopics: the next phrases, each with confidence = its score / the main topic's score (relative
    score); those below min_confidence are dropped and at most max_topics are kept.
  - a segment with no key phrase at all (only greetings, acknowledgements, stopwords) gets the main
    topic SMALL_TALK with confidence 0.0.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from athena.embeddings import Embedder
from athena_formation.forming.analysis._entities import extract_entities
from athena_formation.forming.analysis._keywords import key_phrases, word_scores
from athena_formation.forming.analysis._summary import (
    answered_pairs,
    candidate_sentences,
    embedding_centrality,
    fallback_summary,
    keyword_centrality,
    render,
    select,
)
from athena_formation.forming.analysis._types import Analysis, Topic
from athena_formation.text.messages import Message, content_words, stem

__all__ = ["SMALL_TALK", "heuristic_analysis", "heuristic_summary", "heuristic_topics"]

_log = logging.getLogger("athena.formation.analysis")

SMALL_TALK = "small talk"


def _coverage(messages: Sequence[Message], stems: set[str]) -> float:
    relevant = [m for m in messages if m.is_dialogue and content_words(m.text)] or [
        m for m in messages if content_words(m.text)
    ]
    if not relevant:
        return 0.0
    hits = sum(1 for m in relevant if stems & {stem(w) for w in content_words(m.text)})
    return hits / len(relevant)


def heuristic_topics(
    messages: Sequence[Message], *, max_topics: int, min_confidence: float
) -> tuple[Topic, tuple[Topic, ...]]:
    phrases = key_phrases(messages, limit=max(0, max_topics) + 1)
    if not phrases:
        return Topic(SMALL_TALK, 0.0), ()
    main = phrases[0]
    confidence = 0.3 + 0.7 * _coverage(messages, set(main.stems))
    subtopics = []
    for phrase in phrases[1:]:
        relative = phrase.score / main.score if main.score > 0 else 0.0
        if relative >= min_confidence:
            subtopics.append(Topic(phrase.text, round(min(1.0, relative), 3)))
    return Topic(main.text, round(min(1.0, confidence), 3)), tuple(subtopics[: max(0, max_topics)])


async def heuristic_summary(messages: Sequence[Message], *, embedder: Embedder | None = None) -> str:
    sentences = candidate_sentences(messages)
    if not sentences:
        return fallback_summary(messages)
    vectors: np.ndarray | None = None
    if embedder is not None:
        try:
            vectors = np.asarray(await embedder.embed([s.text for s in sentences]), dtype=np.float32)
            if vectors.shape[0] != len(sentences):
                vectors = None
        except Exception:  # an embedding outage must not cost the chain its summary
            _log.warning("summary: embedder failed, using keyword centrality", exc_info=True)
            vectors = None
    if vectors is not None:
        centrality = embedding_centrality(vectors)
    else:
        centrality = keyword_centrality(sentences, word_scores(messages))
    return render(select(sentences, centrality, vectors, answered=answered_pairs(messages, sentences)))


async def heuristic_analysis(
    messages: Sequence[Message], *, max_topics: int, min_confidence: float, embedder: Embedder | None = None
) -> Analysis:
    main, subtopics = heuristic_topics(messages, max_topics=max_topics, min_confidence=min_confidence)
    return Analysis(
        main_topic=main,
        subtopics=subtopics,
        entities=extract_entities(messages),
        summary=await heuristic_summary(messages, embedder=embedder),
        path="heuristic",
    )
