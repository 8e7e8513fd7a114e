"""SearchMemory finds what is not in a chain yet: the short-term window and the segments being formed.

Ingest and formation run in this process with authentication on, against the session's redis-server
and nx-27017 and a fresh Milvus Lite file; events go in through the public API. Cognition's cut is the
script it runs (ShortTermWindow.cut), so a test can look at each step of a hand-off.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from support.formation_data import KYOTO
from support.in_process_stack import InProcessStack, running_in_process

from athena import keys
from athena.events import scope_key
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.local import MongoWireServer, RedisServer
from athena.stm import ShortTermWindow
from athena.tombstones import erased_at_now, write_redis_tombstone
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_formation.search import search_memory
from athena_formation.search.lexicon import terms
from athena_formation.search.open_events import OpenTurn, newest_turns, open_turns
from athena_formation.search.ranking import Ranking
from athena_ingest.open_events import newest_events

WINDOW = memory_pb2.HIT_SOURCE_WINDOW
CHAIN = memory_pb2.HIT_SOURCE_CHAIN
TRAVEL = AsyncAthenaClient.scope("acme", "alice", "travel")
COOKING = AsyncAthenaClient.scope("acme", "alice", "cooking")
ALL_AGENTS = AsyncAthenaClient.scope("acme", "alice", "")

DOG = [
    ("user", "We adopted a rescue beagle last week and named him Pepperoni."),
    ("agent", "Congratulations! Beagles love long walks; Pepperoni will settle in within a few weeks."),
]
CURRY = [
    ("user", "What vegetarian curry can I cook tonight with chickpeas and coconut milk?"),
    ("agent", "A chickpea curry: fry onion, garlic and ginger, add curry powder, the chickpeas and the coconut milk."),
]

REGISTRATION = [
    ("user", "How do I renew the registration of a car online before it runs out?"),
    ("agent", "On the licensing office's website: enter the plate number, confirm the insurance and pay the fee."),
]


Stack = InProcessStack


async def _store(
    client: AsyncAthenaClient, scope: memory_pb2.Scope, turns: list[tuple[str, str]], **metadata: str
) -> list[str]:
    results = await client.store_events(scope, [EventInput(role, text, metadata=metadata) for role, text in turns])
    return [r.event_id for r in results.results]


def _window_hits(hits: list[memory_pb2.SearchHit]) -> list[memory_pb2.SearchHit]:
    return [h for h in hits if h.source == WINDOW]


async def _park(redis: Redis, scope: memory_pb2.Scope, count: int, task_id: str) -> formation_pb2.Segment:
    """Cut the window's first `count` events into a parked segment, with the script cognition runs."""
    window = ShortTermWindow(redis)
    raws = await window.read_raw(scope)
    events = [memory_pb2.Event.FromString(r) for r in raws[:count]]
    segment = formation_pb2.Segment(
        id=f"seg_{task_id}", scope=scope, events=events, reason=formation_pb2.CUT_REASON_TOPIC_BREAK
    )
    handoff = keys.stm_handoff_key(scope_key(scope), task_id)
    assert await window.cut(
        scope, head=raws[:count], handoff_key=handoff, segment=segment.SerializeToString(), decision="{}"
    )
    return segment


async def test_a_fact_stored_through_the_public_api_is_found_at_once_as_a_window_hit_with_its_event_ids(
    stack: Stack,
) -> None:
    async with stack.client() as client:
        ids = await _store(client, TRAVEL, DOG)
        stored = time.monotonic()
        hits = await client.search_memory(TRAVEL, "What is the name of my dog?")
        found_after = time.monotonic() - stored
        chains = await client.list_chains(TRAVEL)

    assert chains == []  # no chain exists: the hit comes from the short-term window
    assert found_after < 2.0
    first = hits[0]
    assert first.source == WINDOW and list(first.event_ids) == ids and list(first.chain.event_ids) == ids
    assert first.chain.summary.splitlines() == [f"User: {DOG[0][1]}", f"Agent: {DOG[1][1]}"]
    assert first.chain.id == "" and first.chain.event_count == 2 and first.chain.scope == TRAVEL
    assert first.chain.first_event_at.seconds > 0 and first.matched_terms == ["name"] and first.score > 0
    assert "not in a chain yet" in first.why


async def test_a_turn_just_told_is_found_at_once_by_a_question_that_shares_none_of_its_words(
    stack: Stack,
) -> None:
    async with stack.client() as client:
        dog = await _store(client, TRAVEL, DOG)
        await _store(client, TRAVEL, KYOTO)  # two newer turns
        # Not in the first person, so no kind-of-fact words are added (fact_kinds.py): "beagle" is one.
        hits = await client.search_memory(TRAVEL, "Any pets in the house?")
        chains = await client.list_chains(TRAVEL)

    assert chains == []
    first = hits[0]  # found by its embedding alone: the newest turns are embedded whatever their words
    assert first.source == WINDOW and list(first.event_ids) == dog
    assert list(first.matched_terms) == [] and first.lexical_score == 0 and first.similarity > 0.3


async def test_a_users_question_about_a_kind_of_fact_finds_a_turn_just_told_in_other_words(stack: Stack) -> None:
    """The kind's words (fact_kinds.py) score the open turns as they score chains (the told fact's
    cosine alone, which could outweigh them, left out: Ranking.rank's `by_meaning`)."""
    async with stack.client() as client:
        asthma = await _store(client, TRAVEL, [("user", "My son has asthma."), ("agent", "Thanks for telling me.")])
        await _store(client, TRAVEL, KYOTO)
        question = "Does anyone in my family have a medical condition?"
        stack.formation.recall.ranking = Ranking(told_facts=False)
        expanded = await client.search_memory(TRAVEL, question)
        stack.formation.recall.ranking = Ranking(expansion_weight=0.0, told_facts=False)
        plain = await client.search_memory(TRAVEL, question)

    [told] = [h for h in expanded if list(h.event_ids) == asthma]
    [told_plain] = [h for h in plain if list(h.event_ids) == asthma]
    assert told.source == WINDOW and expanded[0] == told
    assert told_plain.lexical_score == 0 < told.lexical_score and told.score > told_plain.score


async def test_a_fact_just_told_goes_before_a_newer_turn_that_only_shares_the_questions_word(stack: Stack) -> None:
    """The user's own question is answered by what they told, not by a turn that names the thing
    (Ranking.rank's `by_meaning`): the told fact's cosine counts as a relevance of its own."""
    async with stack.client() as client:
        car = await _store(client, TRAVEL, [("user", "I drive a blue Honda Civic."), ("agent", "Noted.")])
        registration = await _store(client, TRAVEL, REGISTRATION)
        question = "What car do I have?"
        by_meaning = await client.search_memory(TRAVEL, question)
        stack.formation.recall.ranking = Ranking(told_facts=False)
        as_chains = await client.search_memory(TRAVEL, question)

    assert [list(h.event_ids) for h in by_meaning[:2]] == [car, registration]
    assert [list(h.event_ids) for h in as_chains[:2]] == [registration, car]
    fact = by_meaning[0]
    assert fact.source == WINDOW and fact.lexical_score == 0 and fact.score > by_meaning[1].score


async def test_a_fact_just_told_weighs_the_words_of_the_kind_asked_for_as_the_questions_own(
    stack: Stack, monkeypatch: Any
) -> None:
    """ "¿Quién está en mi familia?" shares "familia" with a benefits question and no word with "Mi madre
    vive con nosotros.": a turn that tells a fact of the user's is scored as a chain's told facts are
    (fact_evidence.FACT_EXPANSION_WEIGHT), the kind's "madre" as much as the question's own word; a
    question in Spanish, so the cosine alone (`by_meaning`, English only) plays no part."""
    question = "¿Quién está en mi familia?"
    async with stack.client() as client:
        mother = await _store(client, TRAVEL, [("user", "Mi madre vive con nosotros."), ("agent", "Entendido.")])
        benefits = await _store(
            client,
            TRAVEL,
            [
                ("user", "¿Cómo solicito la pensión de jubilación?"),
                ("agent", "Por internet o en su oficina local; lleve su libro de familia y su documento de identidad."),
            ],
        )
        found = await client.search_memory(TRAVEL, question)
        monkeypatch.setattr(search_memory, "FACT_EXPANSION_WEIGHT", 0.5)  # SEARCH_EXPANSION_WEIGHT's default
        by_weight = await client.search_memory(TRAVEL, question)

    assert [list(h.event_ids) for h in by_weight[:2]] == [benefits, mother]
    assert [list(h.event_ids) for h in found[:2]] == [mother, benefits]


async def test_a_short_answer_to_the_agents_question_is_found_at_once_in_a_turn_with_that_question(
    stack: Stack,
) -> None:
    """A short answer ("Alex.") says nothing alone: its turn opens with the question it answers."""
    async with stack.client() as client:
        ids = await _store(
            client,
            TRAVEL,
            [
                *KYOTO,
                ("agent", "One more thing for the booking: what's your partner's name?"),
                ("user", "Alex."),
                ("agent", "Thanks, got it."),
                *DOG,
            ],
        )
        hits = await client.search_memory(TRAVEL, "What is my partner called?")

    answer = ids[len(KYOTO) : len(KYOTO) + 3]
    first = hits[0]
    assert first.source == WINDOW and list(first.event_ids) == answer
    assert first.chain.summary.splitlines() == [
        "Agent: One more thing for the booking: what's your partner's name?",
        "User: Alex.",
        "Agent: Thanks, got it.",
    ]
    assert "partner" in first.matched_terms
    # The turn before ends with the reply before the question.
    assert all(ids[len(KYOTO)] not in h.event_ids for h in hits[1:])


def test_an_answer_opens_its_turn_with_the_agents_question_only_when_it_asks_and_the_answer_states_no_fact() -> None:
    scope = memory_pb2.Scope(tenant_id="t", user_id="u", agent_id="a")

    def event(n: int, role: int, content: str, kind: int = memory_pb2.EVENT_TYPE_MESSAGE) -> memory_pb2.Event:
        return memory_pb2.Event(id=f"ev{n}", scope=scope, role=role, type=kind, content=content)

    user, agent = memory_pb2.ROLE_USER, memory_pb2.ROLE_AGENT
    segment = formation_pb2.Segment(
        events=[
            event(0, agent, "Welcome! What's your name?"),
            event(1, user, "Sam."),
            event(2, agent, "Hello! Where are you flying from？ "),
            event(3, user, "Lisbon."),
            event(4, agent, "Noted."),
            event(5, user, "And back on Sunday."),
            event(6, agent, "Which seat do you want?", memory_pb2.EVENT_TYPE_THOUGHT),
            event(7, user, "Window."),
            event(8, agent, "Anything else I should know?"),
            event(9, user, "I'm allergic to penicillin."),
        ]
    )
    turns = open_turns([segment], scope, {})

    # Not a message (a thought), and a lasting fact that reads alone: neither takes what precedes it.
    assert [t.event_ids for t in turns] == [
        ["ev0", "ev1"],
        ["ev2", "ev3", "ev4"],
        ["ev5", "ev6"],
        ["ev7", "ev8"],
        ["ev9"],
    ]
    assert turns[1].content == "Hello! Where are you flying from？ \nLisbon.\nNoted."
    [flying] = terms("flying")
    assert turns[1].lexicon[flying] == 1 and flying not in turns[0].lexicon


async def test_a_correction_just_told_is_found_before_the_fact_it_corrects_told_minutes_before(
    stack: Stack,
) -> None:
    """Both turns are in the window, stored in one call (one timestamp); the older meets the question
    better, the newer says it changed (newest_first.py)."""
    async with stack.client() as client:
        ids = await _store(
            client,
            TRAVEL,
            [
                ("user", "My phone number is 555-1234."),
                ("agent", "Noted."),
                *KYOTO,
                ("user", "Actually, my phone number changed, it's now 555-9876."),
                ("agent", "Updated."),
            ],
        )
        hits = await client.search_memory(TRAVEL, "What's my phone number?")

    first, second = _window_hits(hits)[:2]
    assert list(first.event_ids) == ids[-2:] and list(second.event_ids) == ids[:2]
    assert first.score < second.score  # the ranking alone put the old number first


def test_the_newest_turns_are_taken_by_their_last_events_time_newest_first_besides_those_already_taken() -> None:
    def turn(*times: int | None) -> OpenTurn:
        events = [memory_pb2.Event(id=f"ev{n}", content="x") for n in range(len(times))]
        for event, at in zip(events, times, strict=True):
            if at is not None:
                event.timestamp.FromSeconds(at)
        return OpenTurn(events=tuple(events), lexicon={})

    # A parked segment's turns come before the window's in the request, and an untimed turn is the oldest.
    turns = [turn(500, 600), turn(None), turn(100, 900), turn(700, 800), turn(None)]
    assert newest_turns(turns, most=2) == [2, 3]
    assert newest_turns(turns, most=3, besides=[2]) == [3, 0, 4]
    assert newest_turns(turns, most=10) == [2, 3, 0, 4, 1]
    assert newest_turns(turns, most=0) == []


async def test_an_empty_agent_id_finds_the_open_events_of_every_agent_of_the_user(stack: Stack) -> None:
    async with stack.client() as client:
        kyoto = await _store(client, TRAVEL, KYOTO)
        curry = await _store(client, COOKING, CURRY)
        everywhere = await client.search_memory(ALL_AGENTS, "Kyoto temples and a chickpea curry", limit=10)
        travel_only = await client.search_memory(TRAVEL, "Kyoto temples and a chickpea curry", limit=10)

    found = {e for h in _window_hits(everywhere) for e in h.event_ids}
    assert set(curry) <= found and set(kyoto[:2]) <= found
    assert {h.chain.scope.agent_id for h in everywhere} == {"travel", "cooking"}
    assert {h.chain.scope.agent_id for h in travel_only} == {"travel"}


async def test_a_parked_segment_is_found_while_it_is_parked(stack: Stack) -> None:
    async with stack.client() as client:
        ids = await _store(client, TRAVEL, KYOTO + CURRY)
        await _park(stack.redis, TRAVEL, len(KYOTO), "chk-parked")
        hits = await client.search_memory(TRAVEL, "How many days for Kyoto and Nara?", limit=10)
        page = await client.get_context(TRAVEL)

    assert [e.id for e in page] == ids[len(KYOTO) :]  # cut out of the window, yet:
    assert hits[0].source == WINDOW and list(hits[0].event_ids) == ids[2:4]
    found = [e for h in _window_hits(hits) for e in h.event_ids]
    assert len(found) == len(set(found))  # every event in one hit at most


async def test_once_formed_the_events_come_back_as_a_chain_hit_and_never_also_as_a_window_hit(stack: Stack) -> None:
    window = ShortTermWindow(stack.redis)
    async with stack.client() as client:
        ids = await _store(client, TRAVEL, KYOTO + CURRY)
        segment = await _park(stack.redis, TRAVEL, len(KYOTO), "chk-formed")
        async with stack.formation_channel() as channel:
            formed = await formation_pb2_grpc.FormationServiceStub(channel).FormChain(
                formation_pb2.FormChainRequest(segment=segment), timeout=120
            )
        assert formed.outcome == formation_pb2.FORM_OUTCOME_CREATED
        # formed, and its hand-off still parked (cognition deletes it once FormChain answered): no double hit
        while_parked = await client.search_memory(TRAVEL, "Kyoto temples and the day trip to Nara", limit=10)
        await window.drop_handoff(TRAVEL, keys.stm_handoff_key(scope_key(TRAVEL), "chk-formed"))
        after = await client.search_memory(
            TRAVEL, "Kyoto temples and the day trip to Nara, and the chickpea curry", limit=10
        )

    for hits in (while_parked, after):
        chain_hits = [h for h in hits if h.source == CHAIN]
        assert [h.chain.id for h in chain_hits] == [formed.chain_id]
        assert list(chain_hits[0].event_ids) == ids[: len(KYOTO)] == list(chain_hits[0].chain.event_ids)
        assert not {e for h in _window_hits(hits) for e in h.event_ids} & set(ids[: len(KYOTO)])
    assert [list(h.event_ids) for h in _window_hits(after)] == [ids[len(KYOTO) :]]  # the curry, still in the window
    assert await stack.redis.exists(keys.stm_parked_key(scope_key(TRAVEL))) == 0


async def test_metadata_filters_apply_to_window_hits_by_exact_key_and_value(stack: Stack) -> None:
    async with stack.client() as client:
        apollo = await _store(client, TRAVEL, KYOTO[:2], project="apollo")
        zeus = await _store(client, TRAVEL, KYOTO[2:], project="zeus")
        query = "Kyoto temples and Nara"
        only_apollo = await client.search_memory(TRAVEL, query, limit=10, metadata_filters={"project": "apollo"})
        case_differs = await client.search_memory(TRAVEL, query, limit=10, metadata_filters={"project": "Apollo"})
        other_key = await client.search_memory(TRAVEL, query, limit=10, metadata_filters={"team": "apollo"})
        both = await client.search_memory(TRAVEL, query, limit=10)

    assert [list(h.event_ids) for h in only_apollo] == [apollo]
    assert case_differs == [] and other_key == []
    assert sorted(list(h.event_ids) for h in both) == sorted([apollo, zeus])


async def test_another_users_or_tenants_window_never_appears(stack: Stack) -> None:
    async with stack.client("globex") as globex, stack.client("acme") as acme:
        await _store(
            globex, AsyncAthenaClient.scope("globex", "alice", "travel"), DOG
        )  # same user and agent ids, other tenant
        await _store(acme, AsyncAthenaClient.scope("acme", "bob", "travel"), DOG)  # same tenant, other user
        curry = await _store(acme, TRAVEL, CURRY)
        mine = await acme.search_memory(TRAVEL, "my beagle Pepperoni", limit=10)
        all_mine = await acme.search_memory(ALL_AGENTS, "my beagle Pepperoni", limit=10)
        bobs = await acme.search_memory(AsyncAthenaClient.scope("acme", "bob", ""), "my beagle Pepperoni", limit=10)

    # Alice's own newest turn only (embedded as the newest, whatever its words), never the others' beagle.
    assert [list(h.event_ids) for h in mine] == [curry] and [list(h.event_ids) for h in all_mine] == [curry]
    assert [h.chain.scope for h in bobs] == [AsyncAthenaClient.scope("acme", "bob", "travel")]


async def test_events_the_users_tombstone_erases_are_not_found_even_before_the_erasure_removed_them(
    stack: Stack,
) -> None:
    async with stack.client() as client:
        await _store(client, TRAVEL, DOG)
        await write_redis_tombstone(stack.redis, "acme", "alice", erased_at_now())
        await asyncio.sleep(0.01)  # stored in the tombstone's millisecond, an event would be erased too
        later = await _store(client, TRAVEL, [("user", "Pepperoni learned to sit today.")])
        hits = await client.search_memory(TRAVEL, "Pepperoni", limit=10)

    assert [list(h.event_ids) for h in hits] == [later]


async def test_forget_user_leaves_no_open_event_and_none_of_its_words_in_formation(stack: Stack) -> None:
    async with stack.client() as client, stack.client("globex") as globex:
        mine = await _store(client, TRAVEL, DOG)
        theirs = await _store(globex, AsyncAthenaClient.scope("globex", "alice", "travel"), DOG)
        assert await client.search_memory(TRAVEL, "Pepperoni") and await globex.search_memory(
            AsyncAthenaClient.scope("globex", "alice", "travel"), "Pepperoni"
        )
        cached = stack.formation.recall.open_terms._counts
        assert set(mine) | set(theirs) <= set(cached)  # the words of the open events, kept between searches
        await client.forget_user("acme", "alice")
        hits = await client.search_memory(ALL_AGENTS, "Pepperoni", limit=10)

    assert hits == [] and not set(mine) & set(cached) and set(theirs) <= set(cached)


async def test_get_context_leaves_out_window_hits_its_page_holds_and_returns_the_parked_ones(stack: Stack) -> None:
    async with stack.client() as client:
        ids = await _store(client, TRAVEL, KYOTO + DOG)
        await _park(stack.redis, TRAVEL, len(KYOTO), "chk-context")
        request = memory_pb2.GetContextRequest(
            scope=TRAVEL, query="Kyoto and Nara, and my beagle Pepperoni", chain_limit=10
        )
        context = await client._stub.GetContext(request, timeout=30, metadata=client.options.metadata)

    assert [e.id for e in context.events] == ids[len(KYOTO) :]
    relevant = [list(h.event_ids) for h in context.relevant_chains]
    assert relevant and all(h.source == WINDOW for h in context.relevant_chains)
    assert ids[len(KYOTO) :] not in relevant  # the dog turn is on the page
    assert ids[2:4] in relevant  # a parked turn is not


def test_only_the_newest_open_events_are_sent_within_the_bounds_and_none_a_tombstone_erases() -> None:
    def event(n: int) -> memory_pb2.Event:
        e = memory_pb2.Event(id=f"ev_{n}", content="x" * 100)
        e.stored_at.FromMilliseconds(1_000_000 + n)
        return e

    parked = formation_pb2.Segment(id="seg_a", events=[event(n) for n in range(5)])
    window = formation_pb2.Segment(events=[event(n) for n in range(5, 10)])
    kept = newest_events([window, parked], erased_at=None, max_events=7, max_bytes=10**6)
    assert [[e.id for e in s.events] for s in kept] == [[f"ev_{n}" for n in range(5, 10)], ["ev_3", "ev_4"]]
    assert kept[1].id == "seg_a"
    by_bytes = newest_events([window, parked], erased_at=None, max_events=100, max_bytes=3 * event(9).ByteSize())
    assert [[e.id for e in s.events] for s in by_bytes] == [["ev_7", "ev_8", "ev_9"]]
    erased = newest_events([window, parked], erased_at=(1_000_000 + 6) / 1000, max_events=100, max_bytes=10**6)
    assert [[e.id for e in s.events] for s in erased] == [["ev_7", "ev_8", "ev_9"]]


async def test_without_redis_the_chains_are_still_found(
    own_redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, tmp_path: Path
) -> None:
    redis = Redis.from_url(own_redis_server.url)
    try:
        async with (
            running_in_process(own_redis_server, mongo_server, mongo_db_name, redis, tmp_path) as stack,
            stack.client() as client,
        ):
            ids = await _store(client, TRAVEL, KYOTO)
            segment = formation_pb2.Segment(
                id="seg_no_redis", scope=TRAVEL, events=await ShortTermWindow(redis).read(TRAVEL)
            )
            async with stack.formation_channel() as channel:
                formed = await formation_pb2_grpc.FormationServiceStub(channel).FormChain(
                    formation_pb2.FormChainRequest(segment=segment), timeout=120
                )
            own_redis_server.stop()
            hits = await client.search_memory(TRAVEL, "Kyoto temples", limit=5)
    finally:
        await redis.aclose()

    assert [(h.source, h.chain.id, list(h.event_ids)) for h in hits] == [(CHAIN, formed.chain_id, ids)]
