"""Merge-or-create: does a finished segment continue one of the user's recent chains?

Seed ("Merging"): candidates are the scope's chains active within SESSION_MAX_AGE_HOURS, at most
SESSION_MAX_CHAINS_PER_USER, most recent first. For each:

    MergeConfidence = clamp(continuity + 0.10 if gap < 1 h, else + 0.05 if gap < 6 h,
                                      - 0.10 if |event counts differ| > 10, to [0, 1])

where the gap runs from the candidate's last event to the segment's first. The best candidate is
merged into only if MergeConfidence >= SESSION_MERGE_MIN_CONFIDENCE (0.7) and SimilarityScore >=
SESSION_SIMILARITY_THRESHOLD (0.6).

SimilarityScore is the cosine between the segment's embedding and the candidate chain's embedding.
The continuity analyzer's score combines it with what the two share by name:

    continuity = 0.75 x similarity + 0.25 x max(entity overlap, topic-word overlap)

(overlaps are Jaccard indices over lower-cased entity texts and topic words: the terms of the topic
names, athena.text.terms, so in any language), so a returning topic that names the same things scores
higher than one that merely sounds alike.

Departure from the seed, a size limit (SESSION_MERGE_MAX_CHAIN_EVENTS): the seed's confidence and
thresholds still decide whether the segment continues a chain, but a merge that would take the chain
past the limit is not made. The segment becomes a new chain that records the one it continues
(`MergeDecision.continues`). Why: a chain is the unit SearchMemory returns and is represented by one
embedding; unbounded merging in a long conversation between the same people grew chains to 130
events whose mean embedding matched everything a little and whose hits were mostly irrelevant turns
(measured in docs/formation.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from athena.text import terms

__all__ = ["MergeCandidate", "MergeDecision", "choose_merge", "continuity_score", "merge_confidence"]


@dataclass(frozen=True)
class MergeCandidate:
    chain_id: str
    similarity: float
    entities: frozenset[str]
    topic_words: frozenset[str]
    last_event_at: datetime
    event_count: int


@dataclass(frozen=True)
class MergeDecision:
    chain_id: str | None
    """The chain to merge into; None: create a new chain."""
    confidence: float
    similarity: float
    continuity: float
    continues: str | None = None
    """The chain the segment continues when a merge into it was due but the chain is full; else None."""


def words(texts: Iterable[str]) -> frozenset[str]:
    """The topic words of topic names: their terms (stop words dropped, stemmed), any script."""
    return frozenset(w for t in texts for w in terms(t))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def continuity_score(
    *,
    similarity: float,
    entities_a: frozenset[str],
    entities_b: frozenset[str],
    topic_a: frozenset[str],
    topic_b: frozenset[str],
) -> float:
    overlap = max(_jaccard(entities_a, entities_b), _jaccard(topic_a, topic_b))
    return max(0.0, min(1.0, 0.75 * similarity + 0.25 * overlap))


def merge_confidence(*, continuity: float, gap_hours: float, event_count_difference: int) -> float:
    c = continuity
    if gap_hours < 1.0:
        c += 0.10
    elif gap_hours < 6.0:
        c += 0.05
    if abs(event_count_difference) > 10:
        c -= 0.10
    return max(0.0, min(1.0, c))


def choose_merge(
    candidates: Sequence[MergeCandidate],
    *,
    segment_entities: frozenset[str],
    segment_topic_words: frozenset[str],
    segment_first_event_at: datetime,
    segment_event_count: int,
    min_confidence: float,
    similarity_threshold: float,
    max_chain_events: int = 0,
) -> MergeDecision:
    """The seed's choice of merge target; `max_chain_events` > 0 keeps a merge from growing a chain past it."""
    best: MergeDecision | None = None
    best_events = 0
    for cand in candidates:
        cont = continuity_score(
            similarity=cand.similarity,
            entities_a=segment_entities,
            entities_b=cand.entities,
            topic_a=segment_topic_words,
            topic_b=cand.topic_words,
        )
        gap = (segment_first_event_at - cand.last_event_at).total_seconds() / 3600.0
        conf = merge_confidence(
            continuity=cont, gap_hours=max(0.0, gap), event_count_difference=segment_event_count - cand.event_count
        )
        if best is None or conf > best.confidence:
            best = MergeDecision(chain_id=cand.chain_id, confidence=conf, similarity=cand.similarity, continuity=cont)
            best_events = cand.event_count
    if best is None:
        return MergeDecision(chain_id=None, confidence=0.0, similarity=0.0, continuity=0.0)
    if best.confidence >= min_confidence and best.similarity >= similarity_threshold:
        if max_chain_events <= 0 or best_events + segment_event_count <= max_chain_events:
            return best
        return MergeDecision(
            chain_id=None,
            confidence=best.confidence,
            similarity=best.similarity,
            continuity=best.continuity,
            continues=best.chain_id,
        )
    return MergeDecision(
        chain_id=None, confidence=best.confidence, similarity=best.similarity, continuity=best.continuity
    )
