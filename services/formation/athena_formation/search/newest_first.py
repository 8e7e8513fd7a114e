"""Newest first among a user's lasting facts on one subject, when the newer says it changed.

A user who corrects a fact in a later conversation ("I moved, I now live in Munich") leaves two
chains about it; the older one often ranks first ("Where do I live?" meets "I live in Berlin" in its
words and its embedding), and an agent reading the first hit repeats what is no longer true. Among
the hits of one search, two chains that both state a lasting fact of the user (`lasting_fact`),
whose embeddings are closer than SAME_SUBJECT_COSINE and the newer of which says its fact changed
(`updates_fact`: "now", "moved", "no longer", forming/fact_updates.py) are one subject: they keep
the places they won in the ranking, and the newest (by its last event) takes the first of them. Two
facts of the home a question asks for are one subject whatever their cosine (ONE_AT_A_TIME), and so
are two facts the newer of which, where it says it changed, repeats a word of the older one that the
question does not hold and that tells no kind of fact ("I left Google, I now work at Spotify." after
"I work at Google as a designer.", cosine 0.49 to 0.53 as the texts are embedded in one batch or
another; "I quit the gym and I swim at the Westside pool now." after "I go to the gym at Fitness
First.").
Without such a word both facts mostly hold ("I'm allergic to shellfish", later "I'm allergic to
penicillin") and keep the ranking's order. Which hits are returned does not change, only their
order. A query that names a time ("What did I say in March?") is left in the ranking's order: it
asks what was told then, not what holds now (search_memory.py).

A turn of events in no chain yet is such a fact too (`open_turn_fact`): a correction told a minute
ago goes before the fact it corrects, whether that is in a chain or in the window as well. A chain's
subject is its best told fact's embedding where the search embedded one (fact_evidence.py: "Actually
I prefer window seats now." inside a chain about booking a flight), else the chain's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np

from athena.events import timestamp_of
from athena.text import stem, terms, tokens
from athena_formation.forming.fact_updates import CHANGE_WORDS, updates_fact
from athena_formation.search.fact_kinds import TOLD_TERMS, told_kinds
from athena_formation.search.open_events import EventTerms, OpenTurn
from athena_formation.text.messages import split_sentences

__all__ = ["ONE_AT_A_TIME", "SAME_SUBJECT_COSINE", "SCORED_FACT", "newest_first", "open_turn_fact", "specific_words"]

SAME_SUBJECT_COSINE = 0.5
"""Cosine between two chains' embeddings above which they tell of one subject. Written pairs of a fact
and its later correction (home, employer, diet, name, car, phone number) measured 0.44 to 0.79 as
text, facts on different subjects of one user 0.13 at the median (docs/formation.md)."""

ONE_AT_A_TIME = frozenset({"home", "commute"})
"""Kinds of fact (fact_kinds.FACT_KINDS) a user has one of at a time, whose facts are one subject for a
question asking for the kind, however far apart their embeddings: where they live, how they get to
work ("I cycle to work every day." and "I sold my bike, I take the bus to work now."). Work, diet and
the others were measured too and left out: a user has several facts of them at once ("I work
nights", "I'm a nurse"), and the newest that says it changed pushed older ones that still hold down
(docs/formation.md)."""

_TIME_SPANS = frozenset(terms("year years month months week weeks day days hour hours ago last next"))
"""Terms of a span of time, which a fact of any subject may hold ("we moved to Leeds last year", "I've
been a nurse for twelve years"): not specific to one subject."""

SCORED_FACT = "scored_fact"
"""Key of a hit's document, as `doc_of` gives it, holding the told fact that scored the chain (its
RankedChain.fact), when one did."""

Hit = TypeVar("Hit")


def newest_first(
    hits: Sequence[Hit],
    doc_of: Callable[[Hit], Mapping[str, Any] | None],
    vectors: Mapping[str, np.ndarray],
    *,
    asked: frozenset[str] = frozenset(),
    question: Sequence[str] = (),
) -> list[Hit]:
    """`hits` (best first) with each group of one subject reordered newest first in its own places.

    `doc_of` gives a hit's chain document, or an open turn's as `open_turn_fact` makes it (None for a
    hit that is neither); `vectors` the unit embeddings of their subjects by `_id`. `asked`: the kinds
    of fact the question asks for (fact_kinds.asked_kinds); two facts that both tell one of them that
    a user has one of at a time (ONE_AT_A_TIME) are on one subject however far apart their
    embeddings ("I live in Leeds." and "Actually I moved to Oslo last month." for "Where do I live?").
    `question`: its terms; a word of them two facts share does not make them one subject."""
    facts: dict[int, Mapping[str, Any]] = {
        k: doc
        for k, hit in enumerate(hits)
        if (doc := doc_of(hit)) is not None and doc.get("lasting_fact") and doc["_id"] in vectors
    }
    asked &= ONE_AT_A_TIME
    asks = frozenset(question)
    kinds = {k: _kinds_of(doc) & asked if asked else frozenset() for k, doc in facts.items()}

    def replaces(j: int, k: int) -> bool:
        """The newer of two facts says it changed, and they are on one subject."""
        newer = max((j, k), key=lambda i: _told_at(facts[i]))
        # Chains formed before the field was kept are taken to say so, as every fact was then.
        if not facts[newer].get("updates_fact", True):
            return False
        if float(vectors[facts[j]["_id"]] @ vectors[facts[k]["_id"]]) >= SAME_SUBJECT_COSINE or kinds[j] & kinds[k]:
            return True
        older = k if newer == j else j
        return bool(_words_of(facts[newer], changed=True) & _words_of(facts[older]) - asks)

    # A fact joins every earlier group with a fact it replaces or that replaces it; they become one.
    groups: list[list[int]] = []
    for k in facts:
        near = [g for g in groups if any(replaces(j, k) for j in g)]
        groups = [g for g in groups if g not in near] + [sorted([*(j for g in near for j in g), k])]
    out = list(hits)
    for places in groups:
        newest = sorted(places, key=lambda k: _told_at(facts[k]), reverse=True)
        for place, k in zip(places, newest):
            out[place] = hits[k]
    return out


def _kinds_of(doc: Mapping[str, Any]) -> frozenset[str]:
    """The kinds of personal fact the lasting facts of a chain (or of a turn) tell of the user."""
    return frozenset(kind for fact in doc.get("profile_facts", ()) for kind in told_kinds(fact.get("text", "")))


def _words_of(doc: Mapping[str, Any], *, changed: bool = False) -> frozenset[str]:
    """The specific terms (_specific_terms) of a chain's lasting fact (or of the messages of a turn): of
    the fact that scored the chain (SCORED_FACT), else of its one fact; a chain of several facts, none
    of which scored it, tells none (one of them may be on another subject than the question). With
    `changed`: of every sentence of its facts that says it changed."""
    facts = [f.get("text", "") for f in doc.get("profile_facts", ())]
    if changed:
        texts = facts
    elif doc.get(SCORED_FACT):
        texts = [doc[SCORED_FACT]]
    else:
        texts = facts if len(facts) == 1 else []
    return frozenset(word for text in texts for word in specific_words(text, changed=changed))


def specific_words(text: str, *, changed: bool = False) -> frozenset[str]:
    """The specific terms of a fact's sentences (_specific_terms): of every sentence, or with `changed`
    of those that say the fact changed ("Sofia and I broke up, I'm seeing Marta now.": sofia, broke,
    seeing, marta)."""
    return frozenset(word for said, changes in _sentences(text) if changes or not changed for word in said)


@lru_cache(maxsize=8192)
def _sentences(text: str) -> tuple[tuple[frozenset[str], bool], ...]:
    """Per sentence of a fact: its specific terms and whether it says its fact changed. Kept per text,
    as the same chains' facts come back search after search."""
    return tuple((_specific_terms(sentence), updates_fact(sentence)) for sentence in split_sentences(text))


def _specific_terms(sentence: str) -> frozenset[str]:
    """The sentence's terms but its words of change (fact_updates.CHANGE_WORDS), its spans of time
    (_TIME_SPANS) and the words that tell a kind of fact ("work", "nurse", "live": fact_kinds.TOLD_TERMS):
    two facts of one kind are not one subject for that alone, a user has several at once ("I work
    nights", "I'm a nurse"; ONE_AT_A_TIME)."""
    told = TOLD_TERMS | _TIME_SPANS
    return frozenset(terms(sentence)) - told - {stem(word) for word in tokens(sentence) if word in CHANGE_WORDS}


def _told_at(doc: Mapping[str, Any]) -> tuple[float, float, int]:
    """When the fact was told: its last event's time, then (events of one time: stored in one call)
    the chain formed later, then the later turn of the window."""
    return float(doc.get("last_event_at", 0.0)), float(doc.get("created_at", 0.0)), int(doc.get("window_position", 0))


def open_turn_fact(turn: OpenTurn, *, position: int, read: EventTerms | None = None) -> dict[str, Any]:
    """A turn of open events as the fields of a chain document `newest_first` reads: whether its user
    messages state a lasting fact, whether one says it changed, and when its last event was told;
    `_id` is its first event's id, as its hit is ranked under (open_events.rank_turns). `position`,
    its place in the window, orders turns of one time (events stored in one call), after every chain
    of that time. `read`: where the events' flags are kept between searches (None: read each time)."""
    last, reader = turn.events[-1], read or EventTerms(max_events=0)
    flags = [reader.facts_of(e) for e in turn.events]
    return {
        "_id": turn.events[0].id,
        "lasting_fact": any(f.lasting for f in flags),
        "profile_facts": [{"text": e.content} for e, f in zip(turn.events, flags) if f.lasting],
        "updates_fact": any(f.updates for f in flags),
        "last_event_at": timestamp_of(last.timestamp).timestamp() if last.HasField("timestamp") else 0.0,
        "created_at": math.inf,
        "window_position": position,
    }
