"""SearchMemory, GetChain, ListChains and the archiver, against the real MongoDB-wire server and Milvus Lite."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from support.formation_data import COOKING, KYOTO, PYTHON_BUG, SCOPE, make_segment, milvus_ids

from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.lifecycle.archiver import Archiver
from athena_formation.lifecycle.heat import HeatModel
from athena_formation.search.newest_first import SAME_SUBJECT_COSINE
from athena_formation.search.ranking import Ranking
from athena_formation.server import Formation

OTHER_TENANT = memory_pb2.Scope(tenant_id="globex", user_id="alice", agent_id="helper")


async def _form(stub, turns, scope=SCOPE) -> str:
    response = await stub.FormChain(
        formation_pb2.FormChainRequest(segment=make_segment(turns, scope=scope)), timeout=60
    )
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED
    return response.chain_id


async def test_search_ranks_the_matching_chain_first_and_explains_why(stub) -> None:
    kyoto = await _form(stub, KYOTO)
    python = await _form(stub, PYTHON_BUG)

    response = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="temples to see in Kyoto", limit=5)
        ),
        timeout=30,
    )

    assert [h.chain.id for h in response.hits][:1] == [kyoto]
    assert response.hits[0].similarity > (response.hits[1].similarity if len(response.hits) > 1 else -1)
    assert "kyoto" in response.hits[0].matched_terms and "cosine similarity" in response.hits[0].why
    assert python in [h.chain.id for h in response.hits]


async def test_search_enforces_the_similarity_threshold(stub) -> None:
    await _form(stub, KYOTO)
    await _form(stub, PYTHON_BUG)

    response = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(
                scope=SCOPE, query="temples to see in Kyoto", limit=5, similarity_threshold=0.45
            )
        ),
        timeout=30,
    )

    assert len(response.hits) == 1 and all(h.similarity >= 0.45 for h in response.hits)


async def test_search_never_returns_another_tenants_or_users_chains(stub) -> None:
    await _form(stub, KYOTO, scope=OTHER_TENANT)
    await _form(stub, KYOTO, scope=memory_pb2.Scope(tenant_id="acme", user_id="bob", agent_id="helper"))
    mine = await _form(stub, PYTHON_BUG)

    response = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Kyoto temples", limit=10)
        ),
        timeout=30,
    )

    assert [h.chain.id for h in response.hits] == [mine]


async def test_a_recall_warms_the_chain_in_the_answer_and_in_the_store_just_after(formation: Formation, stub) -> None:
    chain_id = await _form(stub, KYOTO)
    before = await formation.store.get(chain_id)

    response = await stub.SearchMemory(
        formation_pb2.SearchRequest(request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Kyoto", limit=1)),
        timeout=30,
    )
    assert response.hits[0].chain.recall_count == 1  # the answer shows the warmed chain
    await formation.recall.settle()  # its write goes out just after the answer

    after = await formation.store.get(chain_id)
    assert after["recall_count"] == 1 and after["recall_strength"] > before["recall_strength"]
    assert after["last_accessed_at"] >= before["last_accessed_at"]


async def test_get_chain_reads_a_chain_of_the_scope_and_hides_others(stub) -> None:
    chain_id = await _form(stub, KYOTO)

    chain = await stub.GetChain(memory_pb2.GetChainRequest(scope=SCOPE, chain_id=chain_id), timeout=30)
    assert chain.id == chain_id and chain.status == memory_pb2.CHAIN_STATUS_ACTIVE and chain.topic

    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetChain(memory_pb2.GetChainRequest(scope=OTHER_TENANT, chain_id=chain_id), timeout=30)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_list_chains_pages_through_a_scope_and_filters_by_status(formation: Formation, stub) -> None:
    ids = {await _form(stub, KYOTO), await _form(stub, PYTHON_BUG), await _form(stub, COOKING)}
    await formation.store.set_fields(sorted(ids)[0], {"status": "archived"})

    first = await stub.ListChains(memory_pb2.ListChainsRequest(scope=SCOPE, page_size=2), timeout=30)
    second = await stub.ListChains(
        memory_pb2.ListChainsRequest(scope=SCOPE, page_size=2, page_token=first.next_page_token), timeout=30
    )
    active = await stub.ListChains(
        memory_pb2.ListChainsRequest(scope=SCOPE, status=memory_pb2.CHAIN_STATUS_ACTIVE), timeout=30
    )

    assert len(first.chains) == 2 and first.next_page_token and len(second.chains) == 1 and not second.next_page_token
    assert {c.id for c in [*first.chains, *second.chains]} == ids
    assert {c.id for c in active.chains} == ids - {sorted(ids)[0]}


async def test_the_archiver_deletes_the_embedding_then_archives_and_search_stops_finding_it(
    formation: Formation, stub
) -> None:
    cold = await _form(stub, KYOTO)
    warm = await _form(stub, PYTHON_BUG)
    long_ago = (datetime.now(UTC) - timedelta(days=120)).timestamp()
    await formation.store.set_fields(cold, {"created_at": long_ago, "last_accessed_at": long_ago})

    archived = await formation.archiver.run_once()

    assert archived == [cold]
    assert await milvus_ids(formation) == {warm}
    doc = await formation.store.get(cold)
    assert doc["status"] == "archived" and doc["lifecycle"] == "archived"
    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Kyoto temples", limit=5)
        ),
        timeout=30,
    )
    assert cold not in [h.chain.id for h in hits.hits]
    chain = await stub.GetChain(memory_pb2.GetChainRequest(scope=SCOPE, chain_id=cold), timeout=30)
    assert chain.status == memory_pb2.CHAIN_STATUS_ARCHIVED


async def test_the_warm_ups_of_concurrent_searches_all_reach_the_store(formation: Formation, stub) -> None:
    chain_id = await _form(stub, KYOTO)

    await asyncio.gather(
        *(
            stub.SearchMemory(
                formation_pb2.SearchRequest(
                    request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Kyoto temples", limit=1)
                ),
                timeout=30,
            )
            for _ in range(6)
        )
    )
    await formation.recall.settle()

    assert (await formation.store.get(chain_id))["recall_count"] == 6


async def test_search_fills_its_hits_past_chains_whose_documents_say_they_are_no_longer_searchable(
    formation: Formation, stub
) -> None:
    kyoto = await _form(stub, KYOTO)
    others = {await _form(stub, COOKING), await _form(stub, PYTHON_BUG)}
    # Archived behind the search index's back: its vector and words are still there, its document says no.
    await formation.store.set_fields(kyoto, {"status": "archived"})

    response = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Kyoto temples", limit=2)
        ),
        timeout=30,
    )

    assert {h.chain.id for h in response.hits} == others


async def test_warm_ups_of_one_chain_gathered_in_an_interval_become_one_write_of_their_count(
    formation: Formation, stub
) -> None:
    from athena_formation.search.recall_warm_ups import WarmUps

    chain_id = await _form(stub, KYOTO)
    warm_ups = WarmUps(formation.store, interval=60.0)
    warm_ups.record(chain_id, {"heat_score": 0.5, "lifecycle": "warm"})
    warm_ups.record(chain_id, {"heat_score": 0.9, "lifecycle": "hot"})
    assert warm_ups.pending == 1

    await warm_ups.settle()

    doc = await formation.store.get(chain_id)
    assert doc["recall_count"] == 2 and doc["heat_score"] == 0.9 and doc["lifecycle"] == "hot" and warm_ups.pending == 0


async def test_each_step_of_a_search_is_timed_on_the_metrics(stub) -> None:
    from prometheus_client import REGISTRY

    steps = ("words", "embedding", "scan", "rank", "documents", "answer")

    def counts() -> list[float]:
        return [REGISTRY.get_sample_value("memos_search_step_seconds_count", {"step": s}) or 0.0 for s in steps]

    await _form(stub, KYOTO)
    before = counts()

    response = await stub.SearchMemory(
        formation_pb2.SearchRequest(request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Kyoto temples")),
        timeout=30,
    )

    assert response.hits
    assert [after - b for after, b in zip(counts(), before, strict=True)] == [1.0] * len(steps)


ALLERGY = [
    ("user", "Please remember that I'm allergic to peanuts."),
    ("agent", "Got it, I'll remember that."),
]


async def test_the_archiver_keeps_a_chain_in_which_the_user_states_a_lasting_fact(formation: Formation, stub) -> None:
    """A fact told in passing scores low on the gate's metrics, so its heat starts near the threshold;
    a trip plan is a fact of a moment. Both cold: the plan is archived, the allergy stays searchable,
    unless ARCHIVE_LASTING_FACTS (an archiver that does not keep them)."""
    allergy = await _form(stub, ALLERGY)
    trip = await _form(stub, KYOTO)
    now = datetime.now(UTC)
    long_ago = (now - timedelta(days=365)).timestamp()
    for chain_id in (allergy, trip):
        await formation.store.set_fields(chain_id, {"created_at": long_ago, "last_accessed_at": long_ago})

    assert await formation.archiver.run_once() == [trip]

    kept = await stub.GetChain(memory_pb2.GetChainRequest(scope=SCOPE, chain_id=allergy), timeout=30)
    assert kept.lasting_fact and kept.status == memory_pb2.CHAIN_STATUS_ACTIVE
    heat = HeatModel().heat(
        importance=kept.importance, recall_count=0, last_accessed_at=datetime.fromtimestamp(long_ago, UTC), now=now
    )
    assert heat < 0.05  # what the heat alone would have archived
    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="What am I allergic to?", limit=3)
        ),
        timeout=30,
    )
    assert hits.hits[0].chain.id == allergy

    archiving_all = Archiver(
        store=formation.store,
        vectors=formation.vectors,
        heat=HeatModel(),
        threshold=0.05,
        min_age_hours=24,
        lexical=formation.lexical,
        keep_lasting_facts=False,
    )
    assert await archiving_all.run_once() == [allergy]


async def test_a_lasting_fact_corrected_in_a_later_conversation_is_found_before_the_fact_it_corrects(
    formation: Formation, stub
) -> None:
    """The older chain meets "Where do I live?" best in words and embedding (without the words of the
    question's kind of fact, fact_kinds.py, which find "moved" in the newer); both are returned, the
    correction first."""
    formation.recall.ranking = Ranking(expansion_weight=0.0)
    month_ago = datetime.now(UTC) - timedelta(days=30)
    berlin = await _form_at(
        stub, [("user", "I live in Berlin, near Tempelhof."), ("agent", "Got it, Berlin.")], month_ago
    )
    munich = await _form_at(
        stub, [("user", "I moved last month, I now live in Munich."), ("agent", "Noted, Munich.")], None
    )

    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Where do I live?", limit=5)
        ),
        timeout=30,
    )

    order = [h.chain.id for h in hits.hits]
    assert order[:2] == [munich, berlin]
    assert hits.hits[0].score < hits.hits[1].score  # the ranking alone put Berlin first


async def test_a_move_far_from_the_old_home_in_embedding_goes_first_for_a_question_about_home(
    formation: Formation, stub
) -> None:
    """ "I live in Leeds." and "Actually I moved to Oslo last month." are not close as chains or as
    facts, but both tell the home the question asks for (fact_kinds.asked_kinds), and the newer says
    it changed: the move comes first."""
    month_ago = datetime.now(UTC) - timedelta(days=30)
    leeds = await _form_at(stub, [("user", "I live in Leeds."), ("agent", "Noted.")], month_ago)
    oslo = await _form_at(stub, [("user", "Actually I moved to Oslo last month."), ("agent", "Noted.")], None)
    vectors = await formation.vectors.unit_vectors([leeds, oslo], tenant_id=SCOPE.tenant_id, user_id=SCOPE.user_id)

    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Where do I live?", limit=5)
        ),
        timeout=30,
    )

    assert float(vectors[leeds] @ vectors[oslo]) < SAME_SUBJECT_COSINE
    assert [h.chain.id for h in hits.hits][:2] == [oslo, leeds]
    assert hits.hits[0].score < hits.hits[1].score  # the ranking alone put Leeds first


async def test_a_correction_told_inside_another_topic_goes_before_the_fact_it_corrects(
    formation: Formation, stub
) -> None:
    """The newer chain is about booking a flight: its own embedding is far from the older fact's, its
    told fact ("Actually I prefer window seats now.", fact_evidence.py) is close to it."""
    month_ago = datetime.now(UTC) - timedelta(days=30)
    aisle = await _form_at(stub, [("user", "I prefer aisle seats."), ("agent", "Noted.")], month_ago)
    flight = [
        ("user", "Book me a flight to Lisbon for Friday morning, the cheapest fare you can find."),
        ("agent", "Done: TAP 1351 on Friday at 08:40, economy, 89 euros, booked on your card."),
        ("user", "Great. Actually I prefer window seats now."),
        ("agent", "Noted, I changed it to a window seat."),
    ]
    window = await _form_at(stub, flight, None)
    vectors = await formation.vectors.unit_vectors([aisle, window], tenant_id=SCOPE.tenant_id, user_id=SCOPE.user_id)

    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Which seat do I prefer?", limit=5)
        ),
        timeout=30,
    )

    assert float(vectors[aisle] @ vectors[window]) < SAME_SUBJECT_COSINE  # not one subject as chains
    assert [h.chain.id for h in hits.hits][:2] == [window, aisle]
    assert hits.hits[0].why.startswith("a fact told in it, 'Actually I prefer window seats now.'")


async def test_a_later_fact_on_the_same_subject_that_does_not_say_it_changed_keeps_the_rankings_order(
    formation: Formation, stub
) -> None:
    """Both allergies hold: the newer one, close in embedding but saying nothing changed, does not take
    the first place the older one won for a question it answers."""
    month_ago = datetime.now(UTC) - timedelta(days=30)
    shellfish = await _form_at(stub, [("user", "I'm allergic to shellfish."), ("agent", "Noted.")], month_ago)
    penicillin = await _form_at(stub, [("user", "I'm allergic to penicillin."), ("agent", "Noted.")], None)
    stored = {c: await formation.store.get(c) for c in (shellfish, penicillin)}
    vectors = await formation.vectors.unit_vectors(
        [shellfish, penicillin], tenant_id=SCOPE.tenant_id, user_id=SCOPE.user_id
    )

    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Can I eat shrimp?", limit=5)
        ),
        timeout=30,
    )

    assert all(doc is not None and doc["lasting_fact"] and not doc["updates_fact"] for doc in stored.values())
    assert float(vectors[shellfish] @ vectors[penicillin]) >= SAME_SUBJECT_COSINE  # one subject by embedding
    assert [h.chain.id for h in hits.hits][:2] == [shellfish, penicillin]
    assert hits.hits[0].score > hits.hits[1].score


async def test_a_question_naming_when_a_fact_was_told_finds_that_fact_before_its_later_correction(stub) -> None:
    """ "Where did I live in March 2025?" asks what was told then: newest first does not apply."""
    berlin = await _form_at(
        stub,
        [("user", "I live in Berlin, near Tempelhof."), ("agent", "Got it, Berlin.")],
        datetime(2025, 3, 12, 18, 0, tzinfo=UTC),
    )
    munich = await _form_at(stub, [("user", "I moved, I now live in Munich."), ("agent", "Noted, Munich.")], None)

    hits = await stub.SearchMemory(
        formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="Where did I live in March 2025?", limit=5)
        ),
        timeout=30,
    )

    assert [h.chain.id for h in hits.hits][:2] == [berlin, munich]
    assert hits.hits[0].chain.lasting_fact and hits.hits[1].chain.lasting_fact


async def _form_at(stub, turns, start: datetime | None) -> str:
    response = await stub.FormChain(
        formation_pb2.FormChainRequest(segment=make_segment(turns, start=start)), timeout=60
    )
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED
    return response.chain_id
