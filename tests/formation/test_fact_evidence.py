"""A lasting fact told in passing inside a chain of another topic is scored as a text of its own
(search/fact_evidence.py): the chain is found by a question about the fact as if the fact were all it
held, and the hit's `why` names the fact."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from support.formation_data import SCOPE, make_segment

from athena.embeddings import LocalEmbedder
from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.search import search_memory
from athena_formation.search.fact_evidence import (
    FACT_MEANING_COSINE,
    SOMEONE_ELSES_SHARE,
    best_facts,
    fact_scores,
    lift,
)
from athena_formation.search.fact_kinds import asks_of_the_user_alone, expansion_kinds
from athena_formation.search.lexicon import chain_lexicon, terms
from athena_formation.search.open_events import lexical_scores
from athena_formation.search.ranking import Ranking
from athena_formation.server import Formation
from athena_formation.store.lexical_index import LexicalIndex, LexiconRow, UserLexicon

HUSBAND = "My husband Tom is a firefighter."
BENEFITS_WITH_A_FACT = [
    ("user", "How do I apply for disability benefits?"),
    ("agent", "You can apply online or at your local office; have your medical records ready."),
    ("user", "Which medical records do you need from my doctor?"),
    ("agent", "Records of your diagnosis, treatments and the dates you saw each doctor."),
    ("user", f"{HUSBAND} Can he help me fill in the forms?"),
    ("agent", "Yes, anyone you trust can help you fill in the application forms."),
    ("user", "How long does a decision usually take?"),
    ("agent", "Most decisions take three to five months after the application is complete."),
    ("user", "Can I check the status of my application online?"),
    ("agent", "Yes, sign in to your online account to see where your application stands."),
]
WEDDING_GIFT = [
    ("user", "Friends of mine are getting married in June. What gift would you suggest?"),
    ("agent", "Something from their registry is safest; otherwise a framed print of the venue is a lovely idea."),
    ("user", "They don't have a registry. What about something for their new flat?"),
    ("agent", "A good cast-iron pan, a set of linen napkins or a plant they will not have to water often."),
    ("user", "How much do people usually spend?"),
    ("agent", "It depends on how close you are; many guests spend about what their own meal at the party costs."),
    ("user", "Should the card be funny or formal?"),
    ("agent", "Warm and personal works best: a line about how they met, and your wishes for the years ahead."),
    ("user", "Can I send the gift to the venue?"),
    ("agent", "Better to send it to their home after the day, so nothing gets lost in the bustle."),
    ("user", "And if I cannot attend?"),
    ("agent", "Send the gift and a card anyway, with a note saying you are sorry to miss it."),
]


def _row(chain_id: str, facts: tuple[str, ...], *, agent_id: str = "helper") -> LexiconRow:
    return LexiconRow(
        chain_id=chain_id, agent_id=agent_id, lexicon=chain_lexicon([*facts, "other words"]), event_count=4, facts=facts
    )


def test_a_chains_told_facts_go_with_it_when_it_is_rewritten_or_dropped() -> None:
    index = UserLexicon()
    index.put(_row("a", ("I live in Leeds.", "I'm vegan.")))
    index.put(_row("b", ("My son has asthma.",)))
    index.put(_row("a", ("I moved to Oslo in June.",)))  # merged: its facts are the new row's

    facts = index.told_facts()
    assert [(f.chain_id, f.text) for f in facts] == [("b", "My son has asthma."), ("a", "I moved to Oslo in June.")]
    assert facts[1].lexicon == chain_lexicon(["I moved to Oslo in June."])

    index.drop(["b"])
    assert [f.chain_id for f in index.told_facts()] == ["a"]


def test_told_facts_are_those_of_the_agents_chains_and_outlive_the_index_compacting_its_rows() -> None:
    index = UserLexicon()
    index.put(_row("travel", ("I'm afraid of flying.",), agent_id="travel"))
    for n in range(300):  # rewrites leave dead rows until they outnumber the live ones and are compacted
        index.put(_row("cooking", (f"I'm allergic to peanuts ({n}).",), agent_id="cooking"))

    assert [f.text for f in index.told_facts(agent_id="cooking")] == ["I'm allergic to peanuts (299)."]
    assert [f.text for f in index.told_facts(agent_id="travel")] == ["I'm afraid of flying."]
    assert len(index.told_facts()) == 2
    # By the terms a fact holds: those of its chain's latest row only
    assert [f.text for f in index.told_facts(terms=terms("peanuts"))] == ["I'm allergic to peanuts (299)."]
    assert [f.chain_id for f in index.told_facts(terms=terms("299 flying"))] == ["travel", "cooking"]
    assert index.told_facts(terms=terms("298")) == [] and index.told_facts(terms=[]) == []


async def _form(stub: Any, turns: list[tuple[str, str]]) -> str:
    response = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(turns)), timeout=60)
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED, response.reason
    return response.chain_id


def _married(limit: int = 2) -> formation_pb2.SearchRequest:
    return formation_pb2.SearchRequest(
        request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Am I married?", limit=limit)
    )


async def test_a_fact_told_in_passing_inside_another_topic_is_found_first_by_a_question_about_it(
    formation: Formation, stub: Any
) -> None:
    benefits = await _form(stub, BENEFITS_WITH_A_FACT)
    gift = await _form(stub, WEDDING_GIFT)

    found = await stub.SearchMemory(_married(), timeout=30)
    formation.recall.ranking = Ranking(told_facts=False)
    as_wholes = await stub.SearchMemory(_married(), timeout=30)

    assert [h.chain.id for h in as_wholes.hits] == [gift, benefits]
    assert [h.chain.id for h in found.hits] == [benefits, gift]
    first = found.hits[0]
    assert first.why.startswith(f"a fact told in it, {HUSBAND!r}") and first.score > as_wholes.hits[1].score
    assert "chain's embedding" in found.hits[1].why  # the other chain holds no fact: scored as a whole


async def test_a_chains_told_facts_are_read_back_with_its_lexicon_when_formation_starts_again(
    formation: Formation, stub: Any
) -> None:
    """Both reads of a new index: a user's first search, and the warm-up of every user at start."""
    benefits = await _form(stub, BENEFITS_WITH_A_FACT)

    searched = await LexicalIndex(formation.store, shared=False).user(SCOPE.tenant_id, SCOPE.user_id)
    warmed = LexicalIndex(formation.store, shared=False)
    assert await warmed.warm() == 1

    assert [(f.chain_id, f.text) for f in searched.told_facts()] == [(benefits, HUSBAND)]
    assert [(f.chain_id, f.text) for f in (await warmed.user(SCOPE.tenant_id, SCOPE.user_id)).told_facts()] == [
        (benefits, HUSBAND)
    ]


async def test_a_question_about_someone_named_scores_the_chains_as_wholes(formation: Formation, stub: Any) -> None:
    """The user's facts are evidence for what the user asks ("Am I married?"), not for a question in
    the third person (LoCoMo's are all such)."""
    benefits = await _form(stub, BENEFITS_WITH_A_FACT)
    await _form(stub, WEDDING_GIFT)
    request = formation_pb2.SearchRequest(
        request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Is Tom married?", limit=2)
    )

    hits = (await stub.SearchMemory(request, timeout=30)).hits

    assert benefits in [h.chain.id for h in hits]
    assert all(h.why.startswith("cosine similarity") for h in hits)


WEDDING_WITH_A_FACT = [
    ("user", "I'm married to Tom, by the way. We want to renew our vows for our tenth anniversary."),
    ("agent", "Congratulations! A vow renewal can be as small or as grand as you like."),
    ("user", "Should married couples renewing vows invite the same guests as the wedding?"),
    ("agent", "Many married couples keep it to close family and the friends who were there the first time."),
    ("user", "Do married couples usually exchange new rings?"),
    ("agent", "Some do; others engrave the old rings with the new date."),
]


async def test_a_chain_found_by_its_words_and_holding_a_fact_is_scored_with_its_own_cosine(
    formation: Formation, stub: Any
) -> None:
    """A chain whose own score beats its fact's shows its own cosine, as when chains are scored as wholes."""
    wedding = await _form(stub, WEDDING_WITH_A_FACT)
    await _form(stub, WEDDING_GIFT)

    found = await stub.SearchMemory(_married(), timeout=30)
    formation.recall.ranking = Ranking(told_facts=False)
    as_wholes = await stub.SearchMemory(_married(), timeout=30)

    whole = {h.chain.id: h for h in as_wholes.hits}
    assert found.hits[0].chain.id == wedding
    for hit in found.hits:
        if hit.why.startswith("cosine similarity"):
            assert hit.similarity == whole[hit.chain.id].similarity and hit.score == whole[hit.chain.id].score
        else:
            assert hit.why.startswith("a fact told in it") and hit.score > whole[hit.chain.id].score


def test_a_fact_near_the_users_own_question_by_meaning_has_its_cosine_as_relevance_from_the_floor() -> None:
    marathon, noncitizen, preparing = (
        "I'm training for the Berlin marathon in September.",
        "I'm a noncitizen adult.",
        "I am simply preparing to retire from the workforce.",
    )
    index = UserLexicon()
    for chain_id, fact in (("race", marathon), ("card", noncitizen), ("retire", preparing)):
        index.put(_row(chain_id, (fact,)))
    told = {f.text: f for f in index.told_facts()}
    query = np.array([1.0, 0.0])
    # "What race am I preparing for?": the marathon shares no word with it, the retirement its "preparing".
    cosines = (FACT_MEANING_COSINE + 0.06, FACT_MEANING_COSINE - 0.07, 0.13)
    vectors = np.stack([np.array([c, np.sqrt(1 - c * c)]) for c in cosines])
    facts = [(told[marathon], 0.0), (told[noncitizen], 0.0), (told[preparing], 0.25)]

    def order(*, by_meaning: bool) -> list[str]:
        scored = fact_scores(facts, vectors, query, Ranking(), by_meaning=by_meaning)
        return sorted(scored, key=lambda chain_id: -scored[chain_id].score)

    assert order(by_meaning=True) == ["race", "retire", "card"]  # the fact under the floor keeps its relevance
    assert order(by_meaning=False) == ["retire", "race", "card"]  # a question about someone else, or not in English


def test_a_fact_corrected_later_in_its_own_chain_is_quoted_by_its_correction() -> None:
    blue, green, shellfish = (
        "My favourite colour is blue.",
        "Oh and my favourite colour is green now, not blue.",
        "I'm allergic to shellfish.",
    )
    index = UserLexicon()
    index.put(_row("colour", (blue, shellfish, green)))
    told = {f.text: f for f in index.told_facts()}
    assert [told[t].position for t in (blue, shellfish, green)] == [0, 1, 2]
    query = np.array([1.0, 0.0, 0.0])
    near, close, far = np.array([0.9, 0.1, 0.0]), np.array([0.7, 0.5, 0.0]), np.array([0.0, 0.2, 0.9])

    quoted = fact_scores([(told[blue], 0.5), (told[green], 0.3)], np.stack([near, close]), query, Ranking())
    # One subject (cosine over 0.5), and the later one says it changed: scored by the best, with it.
    assert (quoted["colour"].fact, quoted["colour"].correction) == (blue, green)

    unrelated = fact_scores([(told[blue], 0.5), (told[green], 0.3)], np.stack([near, far]), query, Ranking())
    assert unrelated["colour"].correction == ""  # another subject
    both_hold = fact_scores([(told[blue], 0.5), (told[shellfish], 0.3)], np.stack([near, close]), query, Ranking())
    assert both_hold["colour"].correction == ""  # a later fact that says nothing changed
    own = lift(dataclasses.replace(quoted["colour"], score=9.0, fact="", correction=""), quoted)
    assert (own.score, own.fact, own.correction) == (9.0, "", green)  # the chain's own score won, still corrected


async def test_a_hit_whose_fact_was_corrected_later_in_the_chain_names_the_correction(stub: Any) -> None:
    green = "Oh and my favourite colour is green now, not blue."
    colour = await _form(
        stub,
        [
            ("user", "My favourite colour is blue."),
            ("agent", "Nice."),
            ("user", "How do I reset my router?"),
            ("agent", "Hold the reset button for ten seconds."),
            ("user", f"Thanks. {green}"),
            ("agent", "Noted."),
        ],
    )

    found = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="What is my favourite colour?", limit=3)
        ),
        timeout=30,
    )

    first = found.hits[0]
    assert first.chain.id == colour
    assert f"corrected later: {green!r}" in first.why


JAPANESE = "I'm learning Japanese."
BENEFITS_WITH_A_MOMENT = [
    *BENEFITS_WITH_A_FACT[:4],
    ("user", f"{JAPANESE} Is there a form in Japanese?"),
    *BENEFITS_WITH_A_FACT[5:],
]


async def test_a_passing_fact_that_is_no_lasting_one_is_kept_apart_from_the_profile_and_found_by_meaning(
    formation: Formation, stub: Any
) -> None:
    """A fact of the user's present ("I'm learning Japanese.") is kept as one of the chain's
    `moment_facts`, not its `profile_facts`; a question sharing no word with it ("Which language am I
    studying?") finds it by its own embedding, among the user's newest facts."""
    benefits = await _form(stub, BENEFITS_WITH_A_MOMENT)
    gift = await _form(stub, WEDDING_GIFT)
    doc = await formation.store.get(benefits)
    assert doc is not None
    assert [f["text"] for f in doc["moment_facts"]] == [JAPANESE] and doc["profile_facts"] == []
    request = formation_pb2.SearchRequest(
        request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Which language am I studying?", limit=2)
    )

    found = (await stub.SearchMemory(request, timeout=30)).hits
    formation.recall.ranking = Ranking(told_facts=False)
    as_wholes = (await stub.SearchMemory(request, timeout=30)).hits

    assert [h.chain.id for h in found] == [benefits, gift]
    assert found[0].why.startswith(f"a fact told in it, {JAPANESE!r}") and found[0].lexical_score == 0
    assert found[0].score > {h.chain.id: h.score for h in as_wholes}[benefits]


def test_the_newest_facts_the_query_shares_no_word_with_come_after_those_it_does() -> None:
    index = UserLexicon()
    for n in range(6):
        index.put(_row(f"c{n}", (f"I'm training for race {n}.",)))
    index.put(_row("dog", ("We have a golden retriever called Max.",)))
    corpus = index.query(terms("retriever")).corpus

    chosen = best_facts(index, terms("retriever"), corpus, agent_id=None, newest=3)

    assert [(f.chain_id, lexical > 0) for f, lexical in chosen] == [
        ("dog", True),
        ("c5", False),
        ("c4", False),
        ("c3", False),
    ]
    assert [f.chain_id for f, _ in best_facts(index, terms("retriever"), corpus, agent_id=None, newest=0)] == ["dog"]


def test_a_relatives_fact_goes_after_the_users_own_for_a_question_asked_of_the_user_alone() -> None:
    """ "My husband Tom is a firefighter." and "I teach maths at a secondary school." each hold one word
    of work for "What is my profession?"; the husband's, told later, went first. A question about the
    husband asks of someone else, and his fact keeps its whole score."""
    index = UserLexicon()
    index.put(_row("teacher", ("I teach maths at a secondary school.",)))
    index.put(_row("husband", ("My husband Tom is a firefighter.",)))

    def chosen(question: str, *, of_the_user: bool) -> dict[str, float]:
        query = terms(question)
        expansion = expansion_kinds(question, query)
        corpus = index.query(query, expansion=list(expansion), expansion_weight=1.0).corpus
        found = best_facts(
            index,
            query,
            corpus,
            agent_id=None,
            expansion=expansion,
            expansion_weight=1.0,
            of_the_user=of_the_user,
            newest=0,
        )
        return {f.chain_id: lexical for f, lexical in found}

    question = "What is my profession?"
    assert asks_of_the_user_alone(question, terms(question))
    assert not asks_of_the_user_alone("What does my husband do?", terms("What does my husband do?"))
    whole, own = chosen(question, of_the_user=False), chosen(question, of_the_user=True)
    assert list(whole) == ["husband", "teacher"] and list(own) == ["teacher", "husband"]
    assert own["husband"] == SOMEONE_ELSES_SHARE * whole["husband"] and own["teacher"] == whole["teacher"]


def test_a_fact_holding_many_words_of_the_kind_asked_for_is_scored_by_one_after_a_fact_meeting_the_question() -> None:
    """ "Two older brothers, one younger sister." holds two words of the family, "My son Leo has a
    peanut allergy." one and the question's own "allergies", which help-desk chains hold too: only a
    fact's best word of each kind counts in full (open_events.FURTHER_KIND_WORD_SHARE), and the fact
    the question meets goes first (summed, the brother and the sister won)."""
    siblings = "Two older brothers, one younger sister."
    allergy = "My son Leo has a peanut allergy."
    index = UserLexicon()
    index.put(_row("siblings", (siblings,)))
    index.put(_row("allergy", (allergy,)))
    for n in range(3):
        words = chain_lexicon(["Which creams are safe with an allergy?", "other words"])
        index.put(LexiconRow(chain_id=f"creams{n}", agent_id="helper", lexicon=words, event_count=4))
    for n in range(4):
        index.put(_row(f"other{n}", (f"I moved to town {n} last year.",)))
    question = "Does anyone in my family have allergies?"
    query = terms(question)
    kind_of = expansion_kinds(question, query)
    assert set(terms("brothers sister son")) <= set(kind_of)
    corpus = index.query(query, expansion=list(kind_of), expansion_weight=1.0).corpus

    chosen = best_facts(index, query, corpus, agent_id=None, expansion=kind_of, expansion_weight=1.0, newest=0)

    assert [f.text for f, _ in chosen] == [allergy, siblings]


def test_the_words_of_two_kinds_asked_for_both_count_and_two_of_one_kind_once() -> None:
    """ "My son has asthma." is of two kinds "Does anyone in my family have a medical condition?" asks
    for (children, health), "Two older brothers, one younger sister." of one (siblings), twice: the
    second word of a kind adds less than a word of another kind."""
    asthma, siblings = chain_lexicon(["My son has asthma."]), chain_lexicon(["Two older brothers, one younger sister."])
    kind_of = {
        t: kind
        for kind, words in (("children", "son"), ("siblings", "brothers sister"), ("health", "asthma"))
        for t in terms(words)
    }

    def scored(kinds: dict[str, str] | None) -> list[float]:
        return list(
            lexical_scores(
                [asthma, siblings],
                terms("medical condition"),
                None,
                expansion=list(kind_of),
                expansion_weight=1.0,
                kind_of=kinds,
            )
        )

    by_kind, summed = scored(kind_of), scored(None)
    assert by_kind[0] == summed[0] > 0
    assert by_kind[1] < summed[1]
    assert by_kind[0] > by_kind[1]


def test_a_later_correction_of_a_fact_the_question_meets_is_chosen_with_that_facts_score() -> None:
    """ "Sofia and I broke up, I'm seeing Marta now." shares no word with "Who is my girlfriend?" and
    is far from it by meaning; it corrects "My girlfriend is called Sofia.", which the question meets,
    so it is scored with that fact's words. A later fact naming Sofia that says nothing changed, and a
    change told before the fact, are not its corrections."""
    index = UserLexicon()
    index.put(_row("before", ("I'm seeing Sofia now.",)))
    index.put(_row("girlfriend", ("My girlfriend is called Sofia.",)))
    index.put(_row("hiking", ("Sofia and I love hiking.",)))
    index.put(_row("broke-up", ("Sofia and I broke up, I'm seeing Marta now.",)))
    index.put(_row("moved", ("I moved to Leeds last month.",)))
    question = "Who is my girlfriend?"
    query = terms(question)
    expansion = expansion_kinds(question, query)
    corpus = index.query(query, expansion=list(expansion), expansion_weight=1.0).corpus

    chosen = best_facts(index, query, corpus, agent_id=None, expansion=expansion, expansion_weight=1.0, newest=0)

    assert [f.chain_id for f, _ in chosen] == ["girlfriend", "broke-up"]
    assert chosen[0][1] > 0 and chosen[1][1] == chosen[0][1]


def test_a_chains_other_personal_facts_are_not_met_by_their_words_only_among_the_newest() -> None:
    """ "Friends of mine are getting married in June." is no answer to "Am I married?": a chain's
    `moment_facts` are scored by their embedding alone, never by the words they share with a query."""
    friends = "Friends of mine are getting married in June."
    index = UserLexicon()
    index.put(_row("benefits", (HUSBAND,)))
    index.put(
        LexiconRow(
            chain_id="gift", agent_id="helper", lexicon=chain_lexicon([friends]), event_count=4, moments=(friends,)
        )
    )
    query = terms("Am I married?")
    expansion = expansion_kinds("Am I married?", query)
    corpus = index.query(query, expansion=list(expansion), expansion_weight=0.5).corpus

    def chosen(newest: int) -> list[tuple[str, bool, bool]]:
        found = best_facts(
            index, query, corpus, agent_id=None, expansion=expansion, expansion_weight=0.5, newest=newest
        )
        return [(f.chain_id, f.lasting, lexical > 0) for f, lexical in found]

    assert index.told_facts(terms=terms("married")) == []
    assert chosen(newest=0) == [("benefits", True, True)]  # the husband, by the partner kind's words
    assert chosen(newest=5) == [("benefits", True, True), ("gift", False, False)]


async def test_a_chains_facts_are_in_the_search_embedders_cache_once_it_is_indexed(
    formation: Formation, stub: Any
) -> None:
    """A short fact told inside a longer message ("I'm vegan.") was embedded on its own by nothing when
    the chain was formed (the summary weighs sentences of three words or more); a search embeds it
    among the user's newest facts, so indexing the chain puts it in the cache the search's embedder
    reads (the same model by default)."""
    vegan = "I'm vegan."
    await _form(
        stub,
        [
            *BENEFITS_WITH_A_FACT[:4],
            ("user", f"{vegan} Will the hospital stay cover my meals?"),
            *BENEFITS_WITH_A_FACT[5:],
        ],
    )
    embedder = formation.recall.embedder
    assert isinstance(embedder, LocalEmbedder)
    encoded = embedder.encoded_texts

    await embedder.embed([vegan])
    assert embedder.encoded_texts == encoded  # from the cache
    await embedder.embed(["A sentence no chain holds."])
    assert embedder.encoded_texts == encoded + 1


def test_a_fact_that_beats_its_chain_keeps_the_chains_lift_for_being_told_in_the_period_asked() -> None:
    ranking = Ranking()
    told = ranking.rank(chain_id="c", similarity=0.1, lexical=0.0, event_count=10, told=True)
    fact = ranking.rank(chain_id="c", similarity=0.6, lexical=0.0, event_count=1)
    assert fact.score > told.score - ranking.date_weight  # the fact beats the chain's own relevance

    lifted = lift(told, {"c": fact}, date_weight=ranking.date_weight)
    assert lifted.told and lifted.score == fact.score + ranking.date_weight and lifted.event_count == 10
    untold = ranking.rank(chain_id="c", similarity=0.1, lexical=0.0, event_count=10)
    assert lift(untold, {"c": fact}, date_weight=ranking.date_weight).score == fact.score  # no period, no lift


MOM = "My mom lives with us."
MOVING_WITH_A_FACT = [
    ("user", "We're moving to a bigger flat next month. How early should I book a removal van?"),
    ("agent", "Four to six weeks ahead is usual; earlier for a weekend at the end of the month."),
    ("user", f"{MOM} Is there anything special to plan for her room?"),
    ("agent", "Label her boxes apart and unpack her room first, so she has a familiar space on day one."),
    ("user", "Should I tell the post office about the new address?"),
    ("agent", "Yes, set up mail forwarding a week or two before the move."),
]
FAMILY_BENEFITS = [
    ("user", "Can my family get survivor benefits if I die?"),
    ("agent", "Some family members can: a widow or widower, children, and dependent parents."),
    ("user", "How do I check what I've earned so far?"),
    ("agent", "Sign in to your online account and open your earnings record."),
    ("user", "What if a year of earnings is missing?"),
    ("agent", "Send us your W-2 or tax return for that year and we will correct the record."),
    ("user", "How long does a correction take?"),
    ("agent", "Usually a few weeks; you will get a letter once it is done."),
    ("user", "Can I do it by mail instead?"),
    ("agent", "Yes, mail copies to your local office with a note of what is missing."),
]


async def test_a_question_asking_for_a_kind_of_fact_counts_that_kinds_words_in_a_fact_as_its_own(
    formation: Formation, stub: Any, monkeypatch: Any
) -> None:
    """ "Who is in my family?" meets a benefits enquiry that says "family", and "My mom lives with us."
    shares none of its words: in the user's told fact, a word of the kind asked for ("mom")
    weighs as the question's own (fact_evidence.FACT_EXPANSION_WEIGHT), in a chain of some topic at
    SEARCH_EXPANSION_WEIGHT."""
    moving = await _form(stub, MOVING_WITH_A_FACT)
    benefits = await _form(stub, FAMILY_BENEFITS)
    request = formation_pb2.SearchRequest(
        request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Who is in my family?", limit=2)
    )

    found = (await stub.SearchMemory(request, timeout=30)).hits
    monkeypatch.setattr(search_memory, "FACT_EXPANSION_WEIGHT", formation.recall.ranking.expansion_weight)
    as_other_words = (await stub.SearchMemory(request, timeout=30)).hits

    assert [h.chain.id for h in as_other_words] == [benefits, moving]
    assert [h.chain.id for h in found] == [moving, benefits]
    assert found[0].why.startswith(f"a fact told in it, {MOM!r}")
