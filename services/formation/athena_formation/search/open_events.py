"""The events of a search's scope that are in no chain yet, as search candidates beside the chains.

Ingest sends them with each search (athena.internal.v1.SearchRequest.open_segments): the short-term
windows and the parked segments, which cognition cut and formation has not accepted yet. Without
them a fact said a moment ago would not be found until its segment is formed.

They are searched per turn, a user message with what followed it up to the next user message (the
events before the first user message of a window or segment are a turn of their own): the evidence a
question asks for is usually one turn, and a turn with its reply reads as what was said. A user
message that answers the agent's question ("Priya." after "What's your name?") opens its turn with
that question: alone, its words and its embedding say nothing of what it answers. A turn is
filtered like a chain (it holds an event with every metadata pair asked for), and its words are
scored by the same BM25 as the chains' lexicons, against the user's chain statistics with the turns
added as further documents (`lexical_scores`), so the two kinds of hits are ranked on one scale
(ranking.py). The cosine needs an embedding per turn, which costs a model call, so search_memory.py
embeds only the few turns whose words score best, and the newest turns whatever their words: what the
user said last is found by a paraphrase too.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from athena.events import ROLE_NAMES, TYPE_NAMES, is_user_message, timestamp_of
from athena.internal.v1 import formation_pb2
from athena.text import ends_in_question
from athena_client.memory.v1 import memory_pb2
from athena_formation.forming.profile_facts import fact_fields
from athena_formation.search.lexicon import chain_lexicon, lexicon_length
from athena_formation.search.ranking import RankedChain, Ranking
from athena_formation.store.lexical_index import EMPTY_CORPUS, K1, B, Corpus, weighted_terms

__all__ = [
    "OPEN_EMBEDDED_TURNS",
    "OPEN_NEWEST_TURNS",
    "EventFacts",
    "EventTerms",
    "OpenTurn",
    "best_turns",
    "lexical_scores",
    "newest_turns",
    "of_scope",
    "open_turns",
    "rank_turns",
    "tells_fact",
    "turn_as_chain",
    "turn_spans",
]

OPEN_EMBEDDED_TURNS = 5
"""Most turns embedded for one search (the best by their words): a turn not yet embedded costs a
model call, and only a turn that is embedded can be a hit. Embeddings are cached by text, so a turn
costs its call once (and once more when it grows, e.g. by the agent's reply)."""

OPEN_NEWEST_TURNS = 8
"""The newest turns embedded for a search besides the OPEN_EMBEDDED_TURNS best by their words, whether
the query's words meet them or not: a fact the user just told is found by a question that words it
differently ("do I have pets?" for "we adopted a beagle"), not only once its chain is formed. Eight:
about a full window's turns (20 events). Each turn is embedded once (the cache), so a search after
every new turn pays for one or two new texts whatever this is; only a search after many new turns
pays for more, once (docs/formation.md, "Open events")."""


@dataclass(frozen=True)
class OpenTurn:
    """One turn of open events, oldest first."""

    events: tuple[memory_pb2.Event, ...]
    lexicon: Mapping[str, int] = field(compare=False)
    """Term counts over the events' contents, as a chain's lexicon counts them."""

    @property
    def event_ids(self) -> list[str]:
        return [e.id for e in self.events]

    @property
    def content(self) -> str:
        """What is embedded: the events' contents, one a line."""
        return "\n".join(e.content for e in self.events)


class EventFacts(NamedTuple):
    """What a user message tells of the user (profile_facts.fact_fields)."""

    lasting: bool
    """It states a lasting fact."""
    updates: bool
    """A lasting fact it states says it changed."""
    personal: bool
    """It states a personal fact, lasting or of the moment (a plan, what they are learning)."""


class EventTerms:
    """The term counts of open events by event id, kept for the next searches: the same window is
    sent with every search of its scope, and reading an event's words costs more than the rest of
    its part of the search. An event never changes under its id (ids are ingest's, never reused).
    Bounded by `max_events` (the least recently used go first); a user's are dropped when the user
    is erased (`forget_user`). What its user messages tell of the user (`facts_of`) is kept beside its counts."""

    def __init__(self, max_events: int = 20_000) -> None:
        self.max_events = max_events
        self._counts: OrderedDict[str, tuple[tuple[str, str], Counter[str]]] = OrderedDict()
        self._facts: dict[str, EventFacts] = {}

    def of(self, event: memory_pb2.Event) -> Counter[str]:
        kept = self._counts.get(event.id)
        if kept is not None:
            self._counts.move_to_end(event.id)
            return kept[1]
        counts = Counter(chain_lexicon([event.content]))
        if self.max_events > 0:
            self._counts[event.id] = ((event.scope.tenant_id, event.scope.user_id), counts)
            if len(self._counts) > self.max_events:
                dropped, _ = self._counts.popitem(last=False)
                self._facts.pop(dropped, None)
        return counts

    def facts_of(self, event: memory_pb2.Event) -> EventFacts:
        """What the event, if a user message, tells of the user: read once per event while its counts
        are kept."""
        kept = self._facts.get(event.id)
        if kept is None:
            fields = fact_fields([event])
            lasting = bool(fields["lasting_fact"])
            kept = EventFacts(lasting, bool(fields["updates_fact"]), lasting or bool(fields["moment_facts"]))
            if event.id in self._counts:
                self._facts[event.id] = kept
        return kept

    def forget_user(self, tenant_id: str, user_id: str) -> None:
        for event_id in [k for k, (user, _) in self._counts.items() if user == (tenant_id, user_id)]:
            del self._counts[event_id]
            self._facts.pop(event_id, None)


def open_turns(
    segments: Iterable[formation_pb2.Segment],
    scope: memory_pb2.Scope,
    filters: Mapping[str, str],
    terms: EventTerms | None = None,
) -> list[OpenTurn]:
    """The turns of the open segments that belong to `scope` (its tenant and user, and its agent when
    given) and pass the metadata `filters`. An event sent twice counts once, where it came first.
    `terms`: where the events' term counts are kept between searches (None: read each time)."""
    terms = terms or EventTerms(max_events=0)
    seen: set[str] = set()
    turns: list[OpenTurn] = []
    for segment in segments:
        current: list[memory_pb2.Event] = []
        for event in segment.events:
            if event.id in seen or not of_scope(event, scope):
                continue
            seen.add(event.id)
            if current and is_user_message(event):
                # An answer ("Priya.") takes the question it answers into its turn; a statement of a
                # lasting fact reads alone ("My mom lives with us.").
                answered = _is_question(current[-1]) and not terms.facts_of(event).lasting
                current, opening = (current[:-1], current[-1:]) if answered else (current, [])
                if current:
                    turns.append(_turn(current, terms))
                current = opening
            current.append(event)
        if current:
            turns.append(_turn(current, terms))
    return [t for t in turns if _passes(t, filters)] if filters else turns


FURTHER_KIND_WORD_SHARE = 0.5
"""In a told fact, the share of its score that a word of a kind asked for adds after the best word of
that kind (lexical_scores' `kind_of`): a second word of the kind is weaker evidence than the
question's own word ("allergies") or a word of another kind asked, and still some ("I take insulin
for my diabetes." for "What medical conditions do I have?", beside "I'm allergic to peanuts.")."""


def lexical_scores(
    texts: Sequence[Mapping[str, int]],
    query_terms: Sequence[str],
    corpus: Corpus | None,
    *,
    expansion: Sequence[str] = (),
    expansion_weight: float = 0.0,
    added: bool = True,
    kind_of: Mapping[str, str] | None = None,
) -> np.ndarray:
    """BM25 of each text (its term counts: a turn's `lexicon`) for the query terms, scaled to [0, 1]
    as lexical_index.py scales a chain's, against the user's chain `corpus` (None: the texts alone).
    `added`: the texts are further documents of the corpus (open turns); False: parts of its
    documents already (a chain's told facts, fact_evidence.py), which its statistics count.
    `expansion` terms (fact_kinds.py) count as LexicalIndex.query counts them; with `kind_of` (each
    term's kind, fact_kinds.expansion_kinds), the best term of each kind a text holds counts in full
    and each further one of that kind at FURTHER_KIND_WORD_SHARE: "Do you have any siblings? Two older
    brothers." is not twice as much of the family as "My son Leo has a peanut allergy.", which the
    question's own "allergies" meets (fact_evidence.FACT_EXPANSION_WEIGHT), while "My son has
    asthma." is of two kinds that "Does anyone in my family have a medical condition?" asks for."""
    scores = np.zeros(len(texts), dtype=np.float64)
    if not texts or not query_terms:
        return scores
    corpus = corpus or EMPTY_CORPUS
    lengths = [float(lexicon_length(t)) for t in texts]
    joins = added or not corpus.documents  # a chain's facts with no chains known: scored as the texts alone
    documents = corpus.documents + (len(texts) if joins else 0)
    average = max(1e-9, (corpus.total_length + (sum(lengths) if joins else 0.0)) / documents)
    ceiling = 0.0
    weighted = weighted_terms(query_terms, expansion, expansion_weight)
    # term -> (its place among the query's, weight x idf, whether the query asks it)
    term_weights: dict[str, tuple[int, float, bool]] = {}
    for place, (term, weight, asked) in enumerate(weighted):
        df = corpus.document_frequency.get(term, 0) + (sum(1 for t in texts if t.get(term)) if joins else 0)
        idf = math.log(1.0 + (documents - df + 0.5) / (df + 0.5))
        if asked:
            ceiling += idf * (K1 + 1.0)
        term_weights[term] = (place, weight * idf, asked)
    for i, text in enumerate(texts):
        # Each text's own terms looked up (a user's facts are many, a query's expansion long), summed
        # in the query's order: the same floats as a chain's score (LexicalIndex.query).
        found = sorted((term_weights[term], tf, term) for term, tf in text.items() if tf and term in term_weights)
        norm = K1 * (1.0 - B + B * lengths[i] / average)
        of_kind: dict[str, list[float]] = {}
        for (_, weighted_idf, asked), tf, term in found:
            score = weighted_idf * tf * (K1 + 1.0) / (tf + norm)
            if asked or kind_of is None:
                scores[i] += score
            else:
                of_kind.setdefault(kind_of.get(term, term), []).append(score)
        for kind_scores in of_kind.values():
            best = max(kind_scores)
            scores[i] += best + FURTHER_KIND_WORD_SHARE * (sum(kind_scores) - best)
    if ceiling <= 0:
        return scores
    scores /= ceiling
    return np.minimum(scores, 1.0) if any(not asked for _, _, asked in weighted) else scores


def tells_fact(turn: OpenTurn, read: EventTerms) -> bool:
    """Whether a user message of the turn states a personal fact, lasting or of the moment
    (EventTerms.facts_of)."""
    return any(read.facts_of(e).personal for e in turn.events)


def turn_as_chain(turn: OpenTurn) -> memory_pb2.Chain:
    """A turn shown as SearchHit.chain: what a caller needs to show it, nothing that only a stored chain has."""
    first, last = turn.events[0], turn.events[-1]
    chain = memory_pb2.Chain(
        scope=first.scope,
        summary="\n".join(_line(e) for e in turn.events),
        event_ids=turn.event_ids,
        event_count=len(turn.events),
    )
    if first.HasField("timestamp"):
        chain.first_event_at.CopyFrom(first.timestamp)
    if last.HasField("timestamp"):
        chain.last_event_at.CopyFrom(last.timestamp)
    return chain


def _turn(events: list[memory_pb2.Event], terms: EventTerms) -> OpenTurn:
    lexicon: Counter[str] = Counter()
    for event in events:
        lexicon.update(terms.of(event))
    return OpenTurn(events=tuple(events), lexicon=lexicon)


def _is_question(event: memory_pb2.Event) -> bool:
    """An agent message that ends in a question (what a short user answer answers)."""
    return (
        event.role == memory_pb2.ROLE_AGENT
        and event.type == memory_pb2.EVENT_TYPE_MESSAGE
        and ends_in_question(event.content)
    )


def of_scope(event: memory_pb2.Event, scope: memory_pb2.Scope) -> bool:
    """Whether the event is the scope's: its tenant and user, and its agent when the scope names one."""
    s = event.scope
    return (
        s.tenant_id == scope.tenant_id
        and s.user_id == scope.user_id
        and (not scope.agent_id or s.agent_id == scope.agent_id)
    )


def _passes(turn: OpenTurn, filters: Mapping[str, str]) -> bool:
    """Like a chain's filter: some event of the turn carries every pair (exact key and value)."""
    return any(all(k in e.metadata and e.metadata[k] == v for k, v in filters.items()) for e in turn.events)


def _line(event: memory_pb2.Event) -> str:
    role = ROLE_NAMES.get(event.role, "system").capitalize()
    kind = TYPE_NAMES.get(event.type, "message")
    return f"{role}: {event.content}" if kind == "message" else f"{role} ({kind}): {event.content}"


def turn_spans(turns: Sequence[OpenTurn]) -> np.ndarray:
    """Each turn's (first, last) event time in epoch seconds, NaN where an event has no timestamp."""
    out = np.full((len(turns), 2), np.nan)
    for i, turn in enumerate(turns):
        first, last = turn.events[0], turn.events[-1]
        if first.HasField("timestamp") and last.HasField("timestamp"):
            out[i] = (timestamp_of(first.timestamp).timestamp(), timestamp_of(last.timestamp).timestamp())
    return out


def best_turns(
    turns: Sequence[OpenTurn], lexical: np.ndarray, ranking: Ranking, *, most: int, told: np.ndarray | None = None
) -> list[int]:
    """The turns worth embedding, best first: those the query's words meet or that were told in a
    period it names (`told`, per turn), by the score their words and dates alone give them (the
    cosine counted as 0), at most `most`."""
    dated = np.zeros(len(turns), dtype=bool) if told is None else told
    scored = [
        (
            ranking.rank(
                chain_id="", similarity=0.0, lexical=float(lexical[i]), event_count=len(t.events), told=bool(dated[i])
            ).score,
            float(lexical[i]),
            i,
        )
        for i, t in enumerate(turns)
        if lexical[i] > 0 or dated[i]
    ]
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    return [i for _, _, i in scored[: max(0, most)]]


def newest_turns(turns: Sequence[OpenTurn], *, most: int, besides: Sequence[int] = ()) -> list[int]:
    """The `most` newest turns not in `besides`, newest first: by their last event's time (a turn
    without one counts as older than any with one), then by their place in `turns` (oldest first
    within a window or segment)."""
    taken = set(besides)
    last = turn_spans(turns)[:, 1]
    order = sorted(
        (i for i in range(len(turns)) if i not in taken),
        key=lambda i: (not np.isnan(last[i]), 0.0 if np.isnan(last[i]) else float(last[i]), i),
        reverse=True,
    )
    return order[: max(0, most)]


def rank_turns(
    turns: Sequence[OpenTurn],
    candidates: Sequence[int],
    lexical: np.ndarray,
    vectors: np.ndarray,
    query_vector: np.ndarray,
    ranking: Ranking,
    *,
    told: np.ndarray | None = None,
    stated: Sequence[bool] = (),
) -> list[tuple[RankedChain, OpenTurn]]:
    """The candidate turns (`vectors`: their embeddings, in the same order) scored as chains are, best
    first; each ranked under its first event's id. `told`: per turn (all of `turns`), told in a period
    the query names. `stated`: per candidate, the turn tells a personal fact of the user's (`tells_fact`)
    and the query is the user's own question in English: its cosine alone is a relevance too
    (Ranking.rank's `by_meaning`)."""
    ranked = [
        (
            ranking.rank(
                chain_id=turns[i].events[0].id,
                similarity=float(np.dot(vectors[k], query_vector)),
                lexical=float(lexical[i]),
                event_count=len(turns[i].events),
                told=bool(told[i]) if told is not None else False,
                by_meaning=k < len(stated) and stated[k],
            ),
            turns[i],
        )
        for k, i in enumerate(candidates)
    ]
    ranked.sort(key=lambda pair: -pair[0].score)
    return ranked
