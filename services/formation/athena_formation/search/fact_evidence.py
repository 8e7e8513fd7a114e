"""A lasting fact told inside a chain, as evidence for that chain.

A fact told in passing ("My husband Tom is a firefighter.") sits in the chain of the topic around it
(a benefits enquiry of ten events): the chain's one embedding and its words are the topic's, and
"Am I married?" finds that topic's other chains first. So, for the user's own question or request
(in the first or second person, fact_kinds.the_users_own: a user's facts bear on what they ask, not
on a question about someone named), each lasting fact of the user's chains (their `profile_facts`,
kept by the lexical index: LexiconRow.facts) is also scored as a text of its own: BM25 of its words
against the user's chain statistics (open_events.lexical_scores) and, for the FACTS_EMBEDDED best by
their words, the cosine of its own embedding, ranked as a chain of one event (ranking.py). A chain
scores the better of its own score and its best fact's; the hit is still the chain, and its `why`
names the fact. When a later fact of the same chain corrects that fact ("... green now, not blue"
after "My favourite colour is blue."), the `why` names the correction too.

For a question in English, the user's newest facts that share no word with it are embedded too
(FACTS_NEWEST) and scored by their cosine alone, with the user's other personal facts (a chain's
`moment_facts`: a plan, what they are learning, forming/profile_facts.py), which are found this way
only: by their words, "Friends of mine are getting married in June." would answer "Am I married?".
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from athena.embeddings import normalize_rows
from athena_formation.forming.fact_updates import updates_fact
from athena_formation.search.fact_kinds import of_someone_else
from athena_formation.search.newest_first import SAME_SUBJECT_COSINE, specific_words
from athena_formation.search.open_events import lexical_scores
from athena_formation.search.ranking import RankedChain, Ranking
from athena_formation.store.lexical_index import Corpus, ToldFact, UserLexicon

__all__ = [
    "FACTS_EMBEDDED",
    "FACTS_NEWEST",
    "FACT_EXPANSION_WEIGHT",
    "FACT_MEANING_COSINE",
    "SOMEONE_ELSES_SHARE",
    "best_facts",
    "fact_scores",
    "lift",
]

FACTS_EMBEDDED = 5
"""Most facts embedded for one search (the best by their words), in the call that embeds the open
turns; the embedder's cache keeps each text for the next searches."""

FACT_EXPANSION_WEIGHT = 1.0
"""Weight of the question's kind-of-fact words (fact_kinds.py) in a told fact's lexical score, against
a query word's: in a chain of some topic such a word is weaker evidence than the question's own
(SEARCH_EXPANSION_WEIGHT), in a fact the user told it is what answers "Who is in my family?" ("My mom
lives with us.", where a benefits enquiry holds "family")."""

FACT_MEANING_COSINE = 0.45
"""Cosine to the user's own question in English from which a told fact has the better of its relevance
and its cosine alone (Ranking.rank's `by_meaning`, as a turn in no chain yet): "I'm training for the
Berlin marathon in September." (0.46) answers "What race am I preparing for?", with which it shares no
word, before a benefits enquiry holding "preparing" (cosine 0.13). Lower, the help-desk users' own
statements come up by a cosine that follows the question's form more than its meaning: "I'm
interested into knowing what benefits may be due for me." (0.43) went before "I'm diabetic." for
"What health issues do I have?" at 0.4; at any cosine, facts were lost (docs/formation.md)."""

SOMEONE_ELSES_SHARE = 0.5
"""Share of its lexical score a fact told of a relative of the user's keeps for a question asked of
the user alone (fact_kinds.of_someone_else, asks_of_the_user_alone): "My husband Tom is a
firefighter." answers "What is my profession?" by its kind's word as "I teach maths at a secondary
school." does, and is the husband's job."""

FACTS_NEWEST = 50
"""The user's newest facts that share no word with the query, embedded beside those and scored by
their cosine alone: "Which language am I studying?" meets "I'm learning Japanese." by meaning only.
The newest, as what a user told lately is what they ask back; bounded, as each is a text to embed
(once: the cache keeps it)."""


def best_facts(
    lexicon: UserLexicon,
    query_terms: Sequence[str],
    corpus: Corpus,
    *,
    agent_id: str | None,
    expansion: Mapping[str, str] | None = None,
    expansion_weight: float = 0.0,
    of_the_user: bool = False,
    most: int = FACTS_EMBEDDED,
    newest: int = FACTS_NEWEST,
) -> list[tuple[ToldFact, float]]:
    """The user's lasting facts the query's words meet, with their lexical scores, best first (the
    newer on a tie), at most `most`; then their later corrections (`_corrections`); then the `newest`
    others, lasting or not (ToldFact.lasting), newest first, with a lexical score of 0 (found by their
    embedding alone). `expansion`: the query's expansion terms, each with its kind
    (fact_kinds.expansion_kinds; open_events.lexical_scores' `kind_of`). `of_the_user`: the question
    asks of the user alone (fact_kinds.asks_of_the_user_alone), and a fact told of a relative keeps
    SOMEONE_ELSES_SHARE of its score."""
    if most <= 0:
        return []
    facts = lexicon.told_facts(
        agent_id=agent_id, terms=[*query_terms, *(expansion or ())] if expansion_weight > 0 else query_terms
    )
    scores = lexical_scores(
        [f.lexicon for f in facts],
        query_terms,
        corpus,
        expansion=list(expansion or ()),
        expansion_weight=expansion_weight,
        added=False,
        kind_of=expansion,
    )
    if of_the_user:
        scores *= [
            SOMEONE_ELSES_SHARE if score > 0 and of_someone_else(f.text) else 1.0 for f, score in zip(facts, scores)
        ]
    order = sorted((i for i in range(len(facts)) if scores[i] > 0 and facts[i].lasting), key=lambda i: (-scores[i], -i))
    best = [(facts[i], float(scores[i])) for i in order[:most]]
    best += _corrections(best, lexicon, query_terms, agent_id=agent_id)
    if newest > 0:
        taken = {(f.chain_id, f.position) for f, _ in best}
        others = (f for f in reversed(lexicon.told_facts(agent_id=agent_id)) if (f.chain_id, f.position) not in taken)
        best += [(f, 0.0) for f in itertools.islice(others, newest)]
    return best


def _corrections(
    met: Sequence[tuple[ToldFact, float]], lexicon: UserLexicon, query_terms: Sequence[str], *, agent_id: str | None
) -> list[tuple[ToldFact, float]]:
    """The later lasting facts of other chains that correct a fact the query's words met, each with
    the lexical score of the fact it corrects: "Sofia and I broke up, I'm seeing Marta now." for "Who
    is my girlfriend?", which meets "My girlfriend is called Sofia." alone, shares none of its words
    and is far from it by meaning. A correction says it changed and, where it does, repeats a
    specific word of the fact (newest_first.specific_words: not a word of the query, of change or
    that tells a kind); newest_first then puts it first. Later: in a chain put in the user's index
    after the fact's (a chain's facts are in their order, the same chain's correction is
    fact_scores' `_correction`)."""
    asks = frozenset(query_terms)
    taken = {(f.chain_id, f.position) for f, _ in met}
    found: dict[tuple[str, int], tuple[ToldFact, float]] = {}
    for fact, score in met:
        words = specific_words(fact.text) - asks
        if not words:
            continue
        holding = lexicon.told_facts(agent_id=agent_id, terms=words)
        chains = [f.chain_id for f in holding]
        after = chains.index(fact.chain_id) if fact.chain_id in chains else len(chains)
        for later in holding[after:]:
            key = (later.chain_id, later.position)
            if (
                later.chain_id != fact.chain_id
                and later.lasting
                and key not in taken
                and score > found.get(key, (later, 0.0))[1]
                and not words.isdisjoint(specific_words(later.text, changed=True))
            ):
                found[key] = (later, score)
    return list(found.values())


def fact_scores(
    facts: Sequence[tuple[ToldFact, float]],
    vectors: np.ndarray,
    query_vector: np.ndarray,
    ranking: Ranking,
    *,
    by_meaning: bool = False,
) -> dict[str, RankedChain]:
    """Per chain, its best fact ranked as a chain of one event (`vectors`: the facts' embeddings, in
    order), with the later fact of the same chain that corrects it, if any (`_correction`).
    `by_meaning`: the query is the user's own question in English, so a fact at FACT_MEANING_COSINE
    or nearer has the better of its relevance and its cosine alone."""
    cosines = [float(np.dot(vector, query_vector)) for vector in vectors]
    ranked = [
        dataclasses.replace(
            ranking.rank(
                chain_id=fact.chain_id,
                similarity=cosine,
                lexical=lexical,
                event_count=1,
                by_meaning=by_meaning and cosine >= FACT_MEANING_COSINE,
            ),
            fact=fact.text,
        )
        for (fact, lexical), cosine in zip(facts, cosines)
    ]
    best: dict[str, int] = {}
    for k, (fact, _) in enumerate(facts):
        if fact.chain_id not in best or ranked[k].score > ranked[best[fact.chain_id]].score:
            best[fact.chain_id] = k
    units = normalize_rows(vectors)
    out = {}
    for chain_id, k in best.items():
        j = _correction(k, facts, units)
        out[chain_id] = dataclasses.replace(ranked[k], correction=facts[j][0].text) if j != k else ranked[k]
    return out


def _correction(k: int, facts: Sequence[tuple[ToldFact, float]], units: np.ndarray) -> int:
    """The newest fact of fact k's chain told after it that says it changed and is on its subject
    (newest_first.SAME_SUBJECT_COSINE): "Oh and my favourite colour is green now" for "My favourite
    colour is blue." in one chain, so the hit says what holds now; else k. `units`: the facts' unit
    embeddings, in order."""
    told = facts[k][0]
    later = [
        j
        for j, (fact, _) in enumerate(facts)
        if fact.chain_id == told.chain_id
        and fact.position > told.position
        and updates_fact(fact.text)
        and float(units[j] @ units[k]) >= SAME_SUBJECT_COSINE
    ]
    return max(later, key=lambda j: facts[j][0].position, default=k)


def lift(ranked: RankedChain, facts: Mapping[str, RankedChain], *, date_weight: float = 0.0) -> RankedChain:
    """The chain's own score, or its best fact's when that is higher (with the chain's size, and the
    chain's lift of `date_weight` when it was told in a period the query names: the fact was told
    then too); either way with the fact's correction, if one was told later in the chain."""
    fact = facts.get(ranked.chain_id)
    if fact is None:
        return ranked
    if ranked.told:
        fact = dataclasses.replace(fact, score=fact.score + date_weight, told=True)
    if fact.score <= ranked.score:
        return dataclasses.replace(ranked, correction=fact.correction)
    return dataclasses.replace(fact, event_count=ranked.event_count)
