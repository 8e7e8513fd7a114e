"""How SearchMemory orders chains: the embedding's cosine, the query's words, the dates it names and
the chain's size.

    relevance = (1 - SEARCH_LEXICAL_WEIGHT) x cosine + SEARCH_LEXICAL_WEIGHT x lexical
    score     = max(relevance, 0) / max(event_count, SEARCH_SIZE_PRIOR_MIN_EVENTS) ^ SEARCH_SIZE_PRIOR
                + SEARCH_DATE_WEIGHT x told

`cosine` is between the query's embedding and the chain's one embedding (Milvus); `lexical` is the
chain's BM25 for the query's terms scaled to [0, 1] (lexical_index.py). Both find things the other
misses: the embedding matches paraphrases ("trip" for "vacation"), the words match the specific names,
numbers and rare terms a question repeats from the conversation, which one averaged embedding of a
whole chain dilutes. `told` is 1 when the query names a date (a day, a month, a year) and the chain was
told then (query_period.py), else 0: "what did I say on 3 June?" asks for what was said that day,
even when its words are the commonest ("what news did I share"). The lift is added to the score, after
the size prior: the chains told then keep their order among themselves (added to the relevance, it
would lift short chains more, as the size prior divides it), and a period that holds every chain
("in 2023" of a conversation all in 2023) changes nothing. The size prior divides by a power of the
chain's event count: a chain twice as long holds about twice the words a query can meet by chance,
and when two chains are as relevant the shorter one costs the agent less of its context. Below
SEARCH_SIZE_PRIOR_MIN_EVENTS the size prior's lift stops: a chain of two or three events (a sign-off,
a greeting) otherwise outranks whole topics for many queries, as a short BM25 document does, and
takes their places among the hits. Measured on LoCoMo (docs/formation.md, "Measured retrieval"),
with the defaults 0.7 (words), 0.3 (size), 5 (events) and 0.1 (dates).

A turn in no chain yet that tells a fact of the user's, asked for by the user's own question in
English, has the better of that relevance and its cosine alone (`by_meaning`, open_events.rank_turns):
the question's words mostly meet other turns, and its own may share none with them. A chain's told
fact has it too from a cosine of fact_evidence.FACT_MEANING_COSINE (docs/formation.md, "Open events",
says what the rule gave with and without that floor).

Candidates: the best `candidates` chains by cosine and the best `candidates` by lexical score, so a
chain found by either side alone can win; each is then scored on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from athena.config import Settings

__all__ = ["RankedChain", "Ranking"]


@dataclass(frozen=True)
class RankedChain:
    chain_id: str
    similarity: float
    """Cosine between the query and the chain's embedding."""
    lexical: float
    """BM25 of the query's terms in the chain, scaled to [0, 1]."""
    event_count: int
    score: float
    """What the hits are ordered by."""
    told: bool = False
    """The chain was told in a period the query names (query_period.py)."""
    fact: str = ""
    """The lasting fact told in the chain this score is that of, when a fact's beat the chain's own
    (fact_evidence.py): `similarity` and `lexical` are then the fact's."""
    correction: str = ""
    """A fact told later in the same chain that corrects `fact` (fact_evidence._correction)."""


@dataclass(frozen=True)
class Ranking:
    lexical_weight: float = 0.7
    """Weight of the lexical score in the relevance (the cosine gets 1 - it); 0 ranks by the embedding alone."""
    date_weight: float = 0.1
    """Added to the score of a chain told in a period the query names; 0 ignores the dates queries name."""
    size_prior: float = 0.3
    """Exponent of the event count the relevance is divided by; 0 ignores the chain's size."""
    size_prior_min_events: int = 5
    """Chains shorter than this are counted as this long by the size prior (1: every size is lifted)."""
    expansion_weight: float = 0.5
    """Weight of a question's kind-of-fact words (fact_kinds.py) against a query word's; 0: none."""
    told_facts: bool = True
    """Score each lasting fact told in a chain as a text of its own, the chain taking the better score
    (fact_evidence.py); False: chains are scored as wholes."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Ranking:
        """The ranking SEARCH_LEXICAL_WEIGHT, SEARCH_DATE_WEIGHT, SEARCH_SIZE_PRIOR,
        SEARCH_SIZE_PRIOR_MIN_EVENTS, SEARCH_EXPANSION_WEIGHT and SEARCH_TOLD_FACTS configure."""
        return cls(
            lexical_weight=settings.search_lexical_weight,
            date_weight=settings.search_date_weight,
            size_prior=settings.search_size_prior,
            size_prior_min_events=settings.search_size_prior_min_events,
            expansion_weight=settings.search_expansion_weight,
            told_facts=settings.search_told_facts,
        )

    def candidates(self, limit: int) -> int:
        """How many chains to take from each side for `limit` hits."""
        return max(50, 5 * limit)

    def rank(
        self,
        *,
        chain_id: str,
        similarity: float,
        lexical: float,
        event_count: int,
        told: bool = False,
        by_meaning: bool = False,
    ) -> RankedChain:
        """`by_meaning`: the text tells a fact of the user's and the query is the user's own question,
        so its cosine alone is a relevance too (the better one counts): a question and the fact that
        answers it seldom share a word ("What car do I have?", "I drive a blue Honda Civic."), and a
        text that does share one ("How do I renew a car's registration?") is no answer to it."""
        lift = self.date_weight if told else 0.0
        relevance = self._relevance(similarity, lexical)
        if by_meaning:
            relevance = max(relevance, similarity)
        score = max(relevance, 0.0) / self._size_divisor(event_count) + lift
        return RankedChain(
            chain_id=chain_id, similarity=similarity, lexical=lexical, event_count=event_count, score=score, told=told
        )

    def rank_many(
        self,
        chain_ids: Sequence[str],
        similarity: np.ndarray,
        lexical: np.ndarray,
        event_count: np.ndarray,
        *,
        most: int,
        told: np.ndarray | None = None,
    ) -> list[RankedChain]:
        """`rank` of every candidate at once, the best `most` returned, best first (ties in input order).

        The same floats as `rank` (the arithmetic is IEEE double either way, and each size divisor is
        Python's own `**` per distinct count), so a candidate ranked here and again by `rank` scores
        the same: a search ranks a hundred candidates per call and keeps twenty. `told`: per candidate,
        told in a period the query names (None: none is)."""
        sims = np.asarray(similarity, dtype=np.float64)
        lex = np.asarray(lexical, dtype=np.float64)
        counts = np.asarray(event_count, dtype=np.int64)
        dated = np.zeros(len(sims), dtype=bool) if told is None else np.asarray(told, dtype=bool)
        divisors = {int(c): self._size_divisor(int(c)) for c in np.unique(counts)}
        lifts = np.where(dated, self.date_weight, 0.0)
        scores = (
            np.maximum(self._relevance(sims, lex), 0.0)
            / np.fromiter((divisors[int(c)] for c in counts), np.float64, len(counts))
            + lifts
        )
        order = np.argsort(-scores, kind="stable")[: max(0, most)]
        return [
            RankedChain(
                chain_id=chain_ids[i],
                similarity=float(sims[i]),
                lexical=float(lex[i]),
                event_count=int(counts[i]),
                score=float(scores[i]),
                told=bool(dated[i]),
            )
            for i in order
        ]

    def _relevance(self, similarity: Any, lexical: Any) -> Any:
        """The relevance of the module docstring, for floats or arrays alike (the same IEEE arithmetic)."""
        return (1.0 - self.lexical_weight) * similarity + self.lexical_weight * lexical

    def _size_divisor(self, event_count: int) -> float:
        return max(1, self.size_prior_min_events, event_count) ** self.size_prior
