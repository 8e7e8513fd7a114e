"""Hybrid search: the words of a query found in a chain (BM25 over its lexicon) beside the embedding's cosine."""

from __future__ import annotations

import asyncio
from datetime import UTC
from typing import Any

import numpy as np
import pytest
from support.formation_data import COOKING, KYOTO, PYTHON_BUG, SCOPE, make_segment

from athena.internal.v1 import formation_pb2
from athena.tombstones import erased_at_now
from athena_client.memory.v1 import memory_pb2
from athena_formation.search.lexicon import MAX_LEXICON_TERMS, chain_lexicon, query_terms, terms
from athena_formation.search.ranking import Ranking
from athena_formation.server import Formation
from athena_formation.store.chain_store import ChainStore
from athena_formation.store.lexical_index import LexicalIndex, LexiconRow, UserLexicon

# A long chat about a hike that mentions, once, the name of the new dog; and a focused chat about dog training.
HIKE_WITH_A_NAME = [
    ("user", "We finally did the ridge trail last weekend, it took us almost seven hours with all the breaks."),
    ("agent", "Seven hours is a long day! How was the weather up on the ridge?"),
    ("user", "Windy and cold at the top, but the view over the valley was worth every step."),
    ("agent", "That sounds amazing. Did you bring enough layers for the wind?"),
    ("user", "Barely. Oh, and the rescue puppy we adopted, Pepperoni, walked the whole way on his own."),
    ("agent", "That's impressive stamina for a young dog on a trail that long."),
]
DOG_TRAINING = [
    ("user", "How do I teach my new dog to walk on a loose leash without pulling?"),
    ("agent", "Stop every time the leash tightens and reward your dog with a treat when it comes back to your side."),
    ("user", "Should my puppy also go to obedience classes?"),
    ("agent", "Yes: puppy classes teach sit, stay and recall, and socialise your dog with other dogs early."),
]


def rows(**chains: tuple[list[str], int]) -> list[LexiconRow]:
    return [
        LexiconRow(chain_id=c, agent_id="helper", lexicon=chain_lexicon(texts), event_count=n)
        for c, (texts, n) in chains.items()
    ]


# --- terms ---------------------------------------------------------------------------------------


def test_the_forms_a_question_and_a_conversation_use_meet_in_one_term() -> None:
    assert query_terms("What did Caroline research?") == [*terms("Caroline"), "research"]
    assert terms("I've been researching adoption agencies")[0] == terms("researched")[0]
    assert len(set(terms("loves loved loving love"))) == 1
    assert len(set(terms("studies studying studied study"))) == 1
    assert terms("running") == terms("run")


def test_function_words_and_question_words_are_not_terms_but_numbers_are() -> None:
    assert terms("When did she go there with them?") == []
    assert terms("We stayed 5 nights in 2023") == ["stay", "5", "night", "2023"]


def test_a_chain_lexicon_counts_terms_and_keeps_only_the_most_frequent() -> None:
    assert chain_lexicon(["Kyoto temples", "more temples in Kyoto, Kyoto!"]) == {"kyoto": 3, "templ": 2}
    huge = chain_lexicon([" ".join(f"word{i}" for i in range(MAX_LEXICON_TERMS + 500)) + " repeated repeated"])
    assert len(huge) == MAX_LEXICON_TERMS and huge["repeat"] == 2


# --- BM25 over one user's chains -------------------------------------------------------------------


def test_a_rare_query_word_ranks_the_chain_holding_it_first_and_scores_are_scaled_to_one() -> None:
    index = UserLexicon()
    for row in rows(
        hike=(["the ridge trail took seven hours", "our puppy Pepperoni walked the trail"], 2),
        dogs=(["teach a dog loose leash walking", "puppy classes for your dog"], 2),
        food=(["a chickpea curry with spinach"], 1),
    ):
        index.put(row)

    scores = index.query(query_terms("Did Pepperoni walk the trail?"))

    assert [c for c, _ in scores.top(3)] == ["hike", "dogs"]  # "walk" is in both; "food" matches nothing
    assert 0 < scores.of("dogs") < scores.of("hike") <= 1.0
    assert scores.of("food") == 0.0 and scores.of("missing") == 0.0


def test_a_rewritten_chain_matches_its_new_words_only_and_a_dropped_chain_nothing() -> None:
    index = UserLexicon()
    index.put(LexiconRow("c1", "helper", chain_lexicon(["Kyoto temples"]), 2))
    index.put(LexiconRow("c2", "helper", chain_lexicon(["pydantic validation"]), 2))

    index.put(LexiconRow("c1", "helper", chain_lexicon(["Lisbon trams"]), 4))
    index.drop(["c2"])

    assert index.query(["kyoto"]).top(5) == [] and index.query(["pydantic"]).top(5) == []
    assert [c for c, _ in index.query(query_terms("Lisbon")).top(5)] == ["c1"]
    assert index.event_count("c1") == 4 and len(index) == 1


def test_compaction_after_many_rewrites_keeps_every_score() -> None:
    index = UserLexicon()
    for round_ in range(3):
        for i in range(300):
            index.put(LexiconRow(f"c{i}", "helper", chain_lexicon([f"topic{i} shared words round{round_}"]), 3))
    index.drop([f"c{i}" for i in range(0, 300, 2)])

    assert len(index) == 150 and len(index.ids) <= 150 + max(256, 150)
    top = index.query(["topic7", "round2"]).top(3)
    assert top[0][0] == "c7" and all(
        c not in {f"c{i}" for i in range(0, 300, 2)} for c, _ in index.query(["round2"]).top(500)
    )
    assert index.query(["round0"]).top(5) == []


def test_the_agent_filter_scores_other_agents_chains_zero() -> None:
    index = UserLexicon()
    index.put(LexiconRow("mine", "helper", chain_lexicon(["Kyoto temples"]), 2))
    index.put(LexiconRow("theirs", "planner", chain_lexicon(["Kyoto temples"]), 2))

    assert [c for c, _ in index.query(["kyoto"], agent_id="helper").top(5)] == ["mine"]


def test_the_agent_filter_follows_a_chain_rewritten_under_another_agent_through_compaction() -> None:
    index = UserLexicon()
    for i in range(600):  # enough rewrites to compact the index
        index.put(
            LexiconRow(
                f"c{i % 300}", "helper" if i < 300 else "planner", chain_lexicon([f"Kyoto temples {i % 300}"]), 2
            )
        )
    index.put(LexiconRow("c0", "helper", chain_lexicon(["Kyoto temples"]), 2))

    assert {c for c, _ in index.query(["kyoto"], agent_id="helper").top(500)} == {"c0"}
    assert len(index.query(["kyoto"], agent_id="planner").top(500)) == 299
    assert index.query(["kyoto"], agent_id="nobody").top(5) == []


# --- the ranking formula ---------------------------------------------------------------------------


def test_of_two_equally_relevant_chains_the_shorter_ranks_first_and_words_outweigh_a_close_cosine() -> None:
    ranking = Ranking(lexical_weight=0.7, size_prior=0.25, size_prior_min_events=1)
    short = ranking.rank(chain_id="short", similarity=0.5, lexical=0.4, event_count=4)
    long = ranking.rank(chain_id="long", similarity=0.5, lexical=0.4, event_count=16)
    worded = ranking.rank(chain_id="worded", similarity=0.35, lexical=0.6, event_count=4)
    assert long.score < short.score < worded.score
    assert short.score == pytest.approx((0.3 * 0.5 + 0.7 * 0.4) / 4**0.25)
    by_cosine = Ranking(lexical_weight=0.0, size_prior=0.0)
    assert by_cosine.rank(chain_id="a", similarity=0.5, lexical=0.0, event_count=9).score == pytest.approx(0.5)


def test_a_told_fact_scored_by_meaning_takes_the_better_of_its_hybrid_relevance_and_its_cosine() -> None:
    ranking = Ranking(lexical_weight=0.7, size_prior=0.3, size_prior_min_events=5)
    fact = ranking.rank(chain_id="fact", similarity=0.45, lexical=0.0, event_count=2, by_meaning=True)
    worded = ranking.rank(chain_id="worded", similarity=-0.01, lexical=0.42, event_count=2, by_meaning=False)
    assert fact.score == pytest.approx(0.45 / 5**0.3) and worded.score == pytest.approx(
        (0.3 * -0.01 + 0.7 * 0.42) / 5**0.3
    )
    assert fact.score > worded.score
    as_text = ranking.rank(chain_id="fact", similarity=0.45, lexical=0.0, event_count=2)
    assert as_text.score == pytest.approx(0.3 * 0.45 / 5**0.3) and as_text.score < worded.score
    both = ranking.rank(chain_id="both", similarity=0.4, lexical=0.9, event_count=2, by_meaning=True)
    assert both.score == pytest.approx((0.3 * 0.4 + 0.7 * 0.9) / 5**0.3)  # its words already say more


def test_chains_shorter_than_the_size_floor_get_no_more_lift_than_a_chain_at_the_floor() -> None:
    ranking = Ranking(lexical_weight=0.7, size_prior=0.3, size_prior_min_events=5)
    sign_off = ranking.rank(chain_id="bye", similarity=0.5, lexical=0.4, event_count=2)
    at_floor = ranking.rank(chain_id="five", similarity=0.5, lexical=0.4, event_count=5)
    longer = ranking.rank(chain_id="twelve", similarity=0.5, lexical=0.4, event_count=12)
    assert sign_off.score == at_floor.score > longer.score
    assert sign_off.score == pytest.approx((0.3 * 0.5 + 0.7 * 0.4) / 5**0.3)
    unfloored = Ranking(lexical_weight=0.7, size_prior=0.3, size_prior_min_events=1)
    assert unfloored.rank(chain_id="bye", similarity=0.5, lexical=0.4, event_count=2).score > at_floor.score
    floored_many = ranking.rank_many(
        ["bye", "five"], np.array([0.5, 0.5]), np.array([0.4, 0.4]), np.array([2, 5]), most=2
    )
    assert [r.score for r in floored_many] == [sign_off.score, at_floor.score]  # one formula either way


def test_ranking_many_candidates_at_once_scores_exactly_as_one_by_one_and_keeps_the_best() -> None:
    rng = np.random.default_rng(3)
    ranking = Ranking(lexical_weight=0.7, size_prior=0.3, size_prior_min_events=1)
    n = 300
    ids = [f"c{i}" for i in range(n)]
    sims = rng.uniform(-0.2, 0.9, n)
    lex = np.where(rng.uniform(size=n) < 0.5, 0.0, rng.uniform(size=n))
    counts = rng.integers(1, 40, n)
    sims[[3, 7]], lex[[3, 7]], counts[[3, 7]] = 0.95, 0.9, 1  # tied at the top: the earlier candidate stays first

    best = ranking.rank_many(ids, sims, lex, counts, most=25)

    one_by_one = sorted(
        (
            ranking.rank(chain_id=c, similarity=float(s), lexical=float(lx), event_count=int(k))
            for c, s, lx, k in zip(ids, sims, lex, counts)
        ),
        key=lambda r: -r.score,
    )
    assert best == one_by_one[:25]  # same chains, same order, bit-identical scores
    assert ranking.rank_many(ids, sims, lex, counts, most=0) == []
    assert [r.chain_id for r in best[:2]] == ["c3", "c7"]


# --- SearchMemory through formation (MongoDB-wire server, Milvus Lite) -------------------------------


async def _form(stub: Any, turns: list[tuple[str, str]]) -> str:
    response = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(turns)), timeout=60)
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED, response.reason
    return response.chain_id


async def test_a_name_said_once_in_a_long_chat_finds_that_chat_where_the_embedding_alone_prefers_another(
    formation: Formation, stub: Any
) -> None:
    hike = await _form(stub, HIKE_WITH_A_NAME)
    dogs = await _form(stub, DOG_TRAINING)
    request = formation_pb2.SearchRequest(
        request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="How is my dog Pepperoni doing?", limit=2)
    )

    response = await stub.SearchMemory(request, timeout=30)
    formation.recall.ranking = Ranking(lexical_weight=0.0, size_prior=0.0)  # the embedding alone
    by_embedding = await stub.SearchMemory(request, timeout=30)

    assert by_embedding.hits[0].chain.id == dogs
    assert [h.chain.id for h in response.hits] == [hike, dogs]
    first = response.hits[0]
    assert "pepperoni" in first.matched_terms and first.lexical_score > response.hits[1].lexical_score
    assert first.score >= response.hits[1].score and "lexical score" in first.why


async def test_hits_holding_different_words_of_the_query_each_show_their_own_words(
    formation: Formation, stub: Any
) -> None:
    hike = await _form(stub, HIKE_WITH_A_NAME)
    dogs = await _form(stub, DOG_TRAINING)
    request = memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Pepperoni on the ridge, or a loose leash?", limit=2)

    hits = {
        h.chain.id: list(h.matched_terms)
        for h in (await stub.SearchMemory(formation_pb2.SearchRequest(request=request), timeout=30)).hits
    }

    assert hits[hike] == ["pepperoni", "ridge"] and hits[dogs] == ["loose", "leash"]


async def test_chains_carry_their_lexicon_and_a_merge_adds_the_new_segments_words(
    formation: Formation, stub: Any
) -> None:
    from support.formation_data import KYOTO_AGAIN

    kyoto = await _form(stub, KYOTO)
    doc = await formation.store.get(kyoto)
    assert doc["lexicon"]["kyoto"] >= 3 and doc["lexicon_terms"] == sum(doc["lexicon"].values())
    assert "saiho" not in doc["lexicon"]

    merged = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(KYOTO_AGAIN)), timeout=60)
    assert merged.outcome == formation_pb2.FORM_OUTCOME_MERGED and merged.chain_id == kyoto

    doc = await formation.store.get(kyoto)
    assert "saiho" in doc["lexicon"] and "nara" in doc["lexicon"]
    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Saiho-ji moss temple booking", limit=1)
        ),
        timeout=30,
    )
    assert hits.hits[0].chain.id == kyoto and "saiho-ji" in hits.hits[0].matched_terms


async def test_the_first_search_reads_a_users_chains_and_later_chains_join_without_a_reread(
    formation: Formation, stub: Any
) -> None:
    await _form(stub, PYTHON_BUG)
    await stub.SearchMemory(
        formation_pb2.SearchRequest(request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="pydantic", limit=1)),
        timeout=30,
    )
    lexicon = await formation.lexical.user(SCOPE.tenant_id, SCOPE.user_id)
    assert len(lexicon) == 1

    cooking = await _form(stub, COOKING)

    assert len(await formation.lexical.user(SCOPE.tenant_id, SCOPE.user_id)) == 2
    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="chickpeas", limit=1)),
        timeout=30,
    )
    assert hits.hits[0].chain.id == cooking and hits.hits[0].lexical_score > 0


async def test_the_archiver_and_erasure_take_chains_out_of_the_lexical_index(formation: Formation, stub: Any) -> None:
    from datetime import datetime, timedelta

    kyoto = await _form(stub, KYOTO)
    await _form(stub, COOKING)
    await stub.SearchMemory(
        formation_pb2.SearchRequest(request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Kyoto", limit=1)),
        timeout=30,
    )
    long_ago = (datetime.now(UTC) - timedelta(days=120)).timestamp()
    await formation.store.set_fields(kyoto, {"created_at": long_ago, "last_accessed_at": long_ago})

    assert await formation.archiver.run_once() == [kyoto]
    lexicon = await formation.lexical.user(SCOPE.tenant_id, SCOPE.user_id)
    assert lexicon.query(["kyoto"]).top(5) == [] and len(lexicon) == 1

    # ForgetUser: ingest writes the tombstone, then asks formation for its part.
    await formation.eraser.tombstones.begin(SCOPE.tenant_id, SCOPE.user_id, erased_at_now())
    await formation.eraser.forget(SCOPE.tenant_id, SCOPE.user_id)
    lexicon = await formation.lexical.user(SCOPE.tenant_id, SCOPE.user_id)
    assert len(lexicon) == 0 and lexicon.query(query_terms("chickpea curry Kyoto")).top(5) == []


class _GatedChainStore(ChainStore):
    """The real ChainStore, whose reads of lexicons wait for a gate: a write can land during a read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = asyncio.Event()

    async def lexicon_rows(self, **kwargs: Any) -> list[LexiconRow]:
        found = await super().lexicon_rows(**kwargs)
        await self.gate.wait()
        return found


def _chain_doc(chain_id: str, text: str, *, updated_at: float) -> dict[str, Any]:
    lexicon = chain_lexicon([text])
    return {
        "_id": chain_id,
        "tenant_id": SCOPE.tenant_id,
        "user_id": SCOPE.user_id,
        "agent_id": SCOPE.agent_id,
        "status": "active",
        "lexicon": lexicon,
        "event_count": 2,
        "updated_at": updated_at,
    }


async def test_a_chain_written_while_the_users_index_is_being_read_is_not_lost(mongo: Any, mongo_db_name: str) -> None:
    import time

    store = _GatedChainStore(mongo, mongo_db_name)
    await store.insert_new(_chain_doc("old", "Kyoto temples", updated_at=time.time()))
    index = LexicalIndex(store, shared=False)

    reading = asyncio.create_task(index.user(SCOPE.tenant_id, SCOPE.user_id))
    await asyncio.sleep(0.2)  # the read has its rows and waits at the gate
    await store.insert_new(_chain_doc("new", "Lisbon trams", updated_at=time.time()))
    index.put(SCOPE.tenant_id, SCOPE.user_id, LexiconRow("new", SCOPE.agent_id, chain_lexicon(["Lisbon trams"]), 2))
    store.gate.set()
    lexicon = await reading

    assert [c for c, _ in lexicon.query(query_terms("Lisbon")).top(5)] == ["new"]
    assert [c for c, _ in lexicon.query(query_terms("Kyoto")).top(5)] == ["old"]


async def test_with_a_shared_store_a_replica_sees_chains_another_replica_wrote_and_archived(
    mongo: Any, mongo_db_name: str
) -> None:
    import time

    store = ChainStore(mongo, mongo_db_name)
    await store.ensure_indexes()
    await store.insert_new(_chain_doc("kyoto", "Kyoto temples", updated_at=time.time()))
    replica = LexicalIndex(store, shared=True, refresh_seconds=0.05)
    assert len(await replica.user(SCOPE.tenant_id, SCOPE.user_id)) == 1

    # Another replica writes a chain and archives the first one.
    await store.insert_new(_chain_doc("lisbon", "Lisbon trams", updated_at=time.time()))
    await store.set_fields("kyoto", {"status": "archived", "updated_at": time.time()})
    await asyncio.sleep(0.1)

    lexicon = await replica.user(SCOPE.tenant_id, SCOPE.user_id)
    assert [c for c, _ in lexicon.query(query_terms("Lisbon trams")).top(5)] == ["lisbon"]
    assert lexicon.query(query_terms("Kyoto")).top(5) == [] and len(lexicon) == 1


async def test_past_its_bound_the_index_drops_the_least_recently_searched_user_and_reads_it_again(
    mongo: Any, mongo_db_name: str
) -> None:
    import time

    store = ChainStore(mongo, mongo_db_name)
    for user in ("alice", "bob"):
        for i in range(2):
            doc = {**_chain_doc(f"{user}{i}", f"notes of {user}", updated_at=time.time()), "user_id": user}
            await store.insert_new(doc)
    index = LexicalIndex(store, shared=False, max_chains=3)

    await index.user("acme", "alice")
    await index.user("acme", "bob")

    assert set(index._users) == {("acme", "bob")} and index.cached_chains == 2
    assert [c for c, _ in (await index.user("acme", "alice")).query(query_terms("alice")).top(5)] in (
        ["alice0", "alice1"],
        ["alice1", "alice0"],
    )


# --- the warm-up at start ----------------------------------------------------------------------------


class _RefusingReads(ChainStore):
    """The real ChainStore, counting a user's own lexicon reads; its whole-collection read can wait at a gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user_reads: list[str] = []
        self.gate: asyncio.Event | None = None

    async def lexicon_rows(self, **kwargs: Any) -> list[LexiconRow]:
        self.user_reads.append(kwargs["user_id"])
        return await super().lexicon_rows(**kwargs)

    async def all_lexicon_rows(self, **kwargs: Any):  # type: ignore[no-untyped-def, override]
        rows = [pair async for pair in super().all_lexicon_rows(**kwargs)]
        if self.gate is not None:
            await self.gate.wait()  # every row read: a write can land before any is installed
        for pair in rows:
            yield pair


async def _chains_of(store: ChainStore, **users: list[str]) -> None:
    import time

    for user, texts in users.items():
        for i, text in enumerate(texts):
            await store.insert_new({**_chain_doc(f"{user}{i}", text, updated_at=time.time()), "user_id": user})


async def test_after_the_lexicon_warm_up_no_users_first_search_reads_mongodb(mongo: Any, mongo_db_name: str) -> None:
    store = _RefusingReads(mongo, mongo_db_name)
    await _chains_of(store, alice=["Kyoto temples", "chickpea curry"], bob=["Lisbon trams"], carol=["webhook KeyError"])
    await store.set_fields("alice1", {"status": "archived"})
    index = LexicalIndex(store, shared=False)

    assert await index.warm(yield_every=1) == 3  # the archived chain is not a search's

    alice = await index.user("acme", "alice")
    assert [c for c, _ in alice.query(query_terms("Kyoto")).top(5)] == ["alice0"] and alice.query(
        query_terms("curry")
    ).top(5) == []
    assert [c for c, _ in (await index.user("acme", "bob")).query(query_terms("Lisbon trams")).top(5)] == ["bob0"]
    assert [c for c, _ in (await index.user("acme", "carol")).query(query_terms("webhook")).top(5)] == ["carol0"]
    assert store.user_reads == []


async def test_writes_made_while_the_lexicons_warm_up_are_neither_lost_nor_undone(
    mongo: Any, mongo_db_name: str
) -> None:
    import time

    store = _RefusingReads(mongo, mongo_db_name)
    await _chains_of(
        store, alice=["Kyoto temples"], bob=["Lisbon trams"], carol=["webhook KeyError"], dave=["pydantic validation"]
    )
    store.gate = asyncio.Event()
    index = LexicalIndex(store, shared=False)
    warming = asyncio.create_task(index.warm())
    await asyncio.sleep(0.3)  # every row read, none installed yet

    # alice gets a new chain, bob is erased, carol searches (and reads her own chains) meanwhile.
    await store.insert_new({**_chain_doc("alice-new", "Nara deer park", updated_at=time.time()), "user_id": "alice"})
    index.put("acme", "alice", LexiconRow("alice-new", SCOPE.agent_id, chain_lexicon(["Nara deer park"]), 2))
    await store.chains.delete_many({"user_id": "bob"})
    index.forget_user("acme", "bob")
    carol = await index.user("acme", "carol")
    store.gate.set()
    assert await warming == 1  # dave only

    assert [c for c, _ in (await index.user("acme", "alice")).query(query_terms("Nara deer")).top(5)] == ["alice-new"]
    assert len(await index.user("acme", "bob")) == 0
    assert await index.user("acme", "carol") is carol  # her own read stands
    assert [c for c, _ in (await index.user("acme", "dave")).query(query_terms("pydantic")).top(5)] == ["dave0"]
    assert sorted(store.user_reads) == ["alice", "bob", "carol"]  # dave came from the warm-up


async def test_the_lexicon_warm_up_is_skipped_past_its_bound_and_with_a_shared_store(
    mongo: Any, mongo_db_name: str
) -> None:
    store = _RefusingReads(mongo, mongo_db_name)
    await _chains_of(store, alice=["Kyoto temples", "chickpea curry"], bob=["Lisbon trams"])

    assert await LexicalIndex(store, shared=False, max_chains=2).warm() == 0
    assert await LexicalIndex(store, shared=True).warm() == 0  # other replicas write: searches read and refresh

    bounded = LexicalIndex(store, shared=False, max_chains=2)
    assert await bounded.warm() == 0 and bounded.cached_chains == 0
    assert len(await bounded.user("acme", "alice")) == 2 and store.user_reads == ["alice"]


async def test_formation_warms_both_search_caches_at_start_and_its_gauge_says_when_done(
    formation: Formation, stub: Any
) -> None:
    from athena.metrics import SEARCH_CACHE_WARMING
    from athena_formation.server import _warm_search_cache

    kyoto = await _form(stub, KYOTO)  # written before this formation "starts": in neither cache
    user = (SCOPE.tenant_id, SCOPE.user_id)
    assert user not in formation.lexical._users and not formation.vectors._users.has(user)  # type: ignore[union-attr]
    SEARCH_CACHE_WARMING.set(1)  # as serve() sets it before serving

    await _warm_search_cache(formation.vectors, formation.lexical)

    assert SEARCH_CACHE_WARMING._value.get() == 0
    assert formation.lexical._users[user].row_of(kyoto) is not None
    assert formation.vectors._users.has(user)  # type: ignore[union-attr]
