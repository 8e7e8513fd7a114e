"""GetContext's profile: what the user has told of themselves comes with any query, newest first, from
the chains and from the window at once.

Ingest and formation run in this process with authentication on, against the session's redis-server
and nx-27017 and a fresh Milvus Lite file; events go in through the public API. A conversation becomes
a chain the way cognition hands it over: cut out of the window (ShortTermWindow.cut), then FormChain.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from support.formation_data import KYOTO, KYOTO_AGAIN, SCOPE, make_segment
from support.in_process_stack import InProcessStack

from athena import keys
from athena.events import scope_key
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.stm import ShortTermWindow
from athena_client import AsyncAthenaClient, ContextPage, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_formation.search.profile_cache import ProfileCache
from athena_formation.server import Formation

TRAVEL = AsyncAthenaClient.scope("acme", "alice", "travel")
COOKING = AsyncAthenaClient.scope("acme", "alice", "cooking")
BOB = AsyncAthenaClient.scope("acme", "bob", "travel")
GLOBEX = AsyncAthenaClient.scope("globex", "alice", "travel")
LAST_WEEK = datetime.now(UTC) - timedelta(days=7)

EARLIER = [
    ("user", "Always reply in German. I live in Berlin and I'm vegetarian."),
    ("agent", "Verstanden! Ich antworte ab jetzt auf Deutsch."),
    ("user", "Can you suggest a weekend trip from Berlin by train?"),
    ("agent", "Dresden is two hours away: the old town, the Zwinger and the Elbe valley."),
]
ARTICLE = "Summarise this article for me: the city council approved a new bike lane on the main street."


async def _store(
    client: AsyncAthenaClient, scope: memory_pb2.Scope, turns: list[tuple[str, str]], *, at: datetime | None = None
) -> list[str]:
    events = [
        EventInput(role, text, timestamp=None if at is None else at + timedelta(seconds=n))
        for n, (role, text) in enumerate(turns)
    ]
    return [r.event_id for r in (await client.store_events(scope, events)).results]


async def _form_the_window(
    stack: InProcessStack, scope: memory_pb2.Scope, task_id: str, *, head: int | None = None
) -> str:
    """The scope's window (its first `head` events, or all) cut into one segment and formed, as
    cognition does; the chain's id."""
    window = ShortTermWindow(stack.redis)
    raws = (await window.read_raw(scope))[:head]
    segment = formation_pb2.Segment(
        id=f"seg_{task_id}",
        scope=scope,
        events=[memory_pb2.Event.FromString(r) for r in raws],
        reason=formation_pb2.CUT_REASON_FLUSH,
    )
    handoff = keys.stm_handoff_key(scope_key(scope), task_id)
    assert await window.cut(scope, head=raws, handoff_key=handoff, segment=segment.SerializeToString(), decision="{}")
    async with stack.formation_channel() as channel:
        formed = await formation_pb2_grpc.FormationServiceStub(channel).FormChain(
            formation_pb2.FormChainRequest(segment=segment), timeout=120
        )
    await window.drop_handoff(scope, handoff)
    assert formed.outcome == formation_pb2.FORM_OUTCOME_CREATED
    return formed.chain_id


async def _earlier_chain(stack: InProcessStack, client: AsyncAthenaClient) -> tuple[list[str], str]:
    """EARLIER told last week and formed into a chain of TRAVEL: its events' ids and the chain's id."""
    ids = await _store(client, TRAVEL, EARLIER, at=LAST_WEEK)
    return ids, await _form_the_window(stack, TRAVEL, "chk-earlier")


def _texts(page: ContextPage) -> list[str]:
    return [f.text for f in page.profile]


async def test_a_standing_instruction_from_an_earlier_conversation_comes_with_a_query_that_is_not_about_it(
    stack: InProcessStack,
) -> None:
    async with stack.client() as client:
        ids, chain_id = await _earlier_chain(stack, client)
        await _store(client, TRAVEL, [("user", ARTICLE)])
        page = await client.get_context(TRAVEL, query=ARTICLE)

    assert _texts(page) == ["Always reply in German.", "I live in Berlin and I'm vegetarian."]
    assert all(f.chain_id == chain_id and f.event_id == ids[0] for f in page.profile)
    assert abs(page.profile[0].told_at.ToDatetime(tzinfo=UTC) - LAST_WEEK) < timedelta(milliseconds=1)
    assert [e.content for e in page] == [ARTICLE]  # the window holds only the new message


async def test_a_correction_told_a_moment_ago_is_in_the_profile_at_once_before_what_it_corrects(
    stack: InProcessStack,
) -> None:
    async with stack.client() as client:
        _, chain_id = await _earlier_chain(stack, client)
        [moved] = await _store(client, TRAVEL, [("user", "I moved to Munich last month.")])
        page = await client.get_context(TRAVEL, query="Any good bakeries near me?")

    assert _texts(page)[0] == "I moved to Munich last month."
    assert page.profile[0].event_id == moved and page.profile[0].chain_id == ""  # in the window, no chain yet
    assert "I live in Berlin and I'm vegetarian." in _texts(page)[1:]
    assert {f.chain_id for f in page.profile[1:]} == {chain_id}


async def test_a_sentence_told_again_comes_once_at_its_newest(stack: InProcessStack) -> None:
    async with stack.client() as client:
        await _earlier_chain(stack, client)
        [again] = await _store(client, TRAVEL, [("user", "always reply in  German.")])
        page = await client.get_context(TRAVEL, query=ARTICLE)

    assert _texts(page) == ["always reply in German.", "I live in Berlin and I'm vegetarian."]  # spaces as split
    assert page.profile[0].event_id == again


async def test_a_correction_stored_in_the_same_call_as_the_fact_comes_first_when_each_is_in_its_own_chain(
    stack: InProcessStack,
) -> None:
    turns = [
        ("user", "I prefer aisle seats."),
        ("agent", "Noted: aisle seats."),
        ("user", "Actually I prefer window seats now."),
        ("agent", "Got it: window seats from now on."),
    ]
    # Chain ids are hashes of segment ids, in no time order: these names put the older chain's id
    # first for one user and last for the other, so neither order of ids can pass for newest first.
    async with stack.client() as client:
        for user, (first, second) in {"carol": ("seg-a", "seg-b"), "dave": ("seg-z", "seg-a")}.items():
            scope = client.scope("acme", user, "travel")
            await _store(client, scope, turns)  # one call: all four events have one timestamp
            older = await _form_the_window(stack, scope, f"{user}-{first}", head=2)
            newer = await _form_the_window(stack, scope, f"{user}-{second}")
            page = await client.get_context(scope, query="Book me a flight to Rome.")

            assert _texts(page) == ["Actually I prefer window seats now.", "I prefer aisle seats."], user
            assert [f.chain_id for f in page.profile] == [newer, older]
            assert page.profile[0].told_at == page.profile[1].told_at


async def test_the_profile_holds_the_scopes_facts_only(stack: InProcessStack) -> None:
    async with stack.client() as client:
        await _store(client, TRAVEL, [("user", "I'm allergic to peanuts.")])
        await _store(client, COOKING, [("user", "I'm lactose intolerant.")])
        await _store(client, BOB, [("user", "I'm a nurse and I work nights.")])
        travel = await client.get_context(TRAVEL, query="What should I pack?")
        cooking = await client.get_context(COOKING, query="What should I cook?")
        bob = await client.get_context(BOB, query="What should I pack?")
    async with stack.client("globex") as globex:
        other_tenant = await globex.get_context(GLOBEX, query="What should I pack?")

    assert _texts(travel) == ["I'm allergic to peanuts."]
    assert _texts(cooking) == ["I'm lactose intolerant."]
    assert _texts(bob) == ["I'm a nurse and I work nights."]
    assert _texts(other_tenant) == []


async def test_profile_limit_keeps_the_newest_facts(stack: InProcessStack) -> None:
    facts = ["I'm vegan.", "I have two cats.", "I work as a pharmacist.", "I'm afraid of flying."]
    async with stack.client() as client:
        await _store(client, TRAVEL, [("user", f) for f in facts])
        two = await client.get_context(TRAVEL, query="Plan my weekend.", profile_limit=2)
        default = await client.get_context(TRAVEL, query="Plan my weekend.")

    assert _texts(two) == facts[:1:-1]
    assert _texts(default) == facts[::-1]


async def test_small_talk_questions_and_the_agents_words_are_not_in_the_profile(stack: InProcessStack) -> None:
    async with stack.client() as client:
        await _store(
            client,
            TRAVEL,
            [
                ("user", "Thanks, that was really helpful!"),
                ("user", "Do you think it will rain tomorrow?"),
                ("agent", "I'm a large language model and I always answer in English."),
            ],
        )
        page = await client.get_context(TRAVEL, query="Plan my weekend.")

    assert page.profile == []


async def test_without_a_query_or_on_a_later_page_there_is_no_profile(stack: InProcessStack) -> None:
    async with stack.client() as client:
        await _store(client, TRAVEL, [("user", "I'm vegan."), ("agent", "Noted.")])
        plain = await client.get_context(TRAVEL)
        first = await client.get_context(TRAVEL, query="Plan my weekend.", limit=1)

    assert plain.profile == [] and len(plain) == 2
    assert _texts(first) == ["I'm vegan."] and first.next_page_token == ""


async def test_a_chain_formed_before_chains_kept_their_facts_gives_them_from_its_events(
    stack: InProcessStack,
) -> None:
    async with stack.client() as client:
        _, chain_id = await _earlier_chain(stack, client)
        stored = await stack.formation.store.chains.find_one({"_id": chain_id})
        assert stored is not None and [f["text"] for f in stored["profile_facts"]] == [
            "Always reply in German.",
            "I live in Berlin and I'm vegetarian.",
        ]
        await stack.formation.store.chains.update_one({"_id": chain_id}, {"$unset": {"profile_facts": ""}})
        page = await client.get_context(TRAVEL, query=ARTICLE)

    assert _texts(page) == ["Always reply in German.", "I live in Berlin and I'm vegetarian."]
    assert {f.chain_id for f in page.profile} == {chain_id}


async def test_a_merge_adds_the_segments_facts_to_the_chains_and_a_retried_merge_adds_none(
    formation: Formation, stub: formation_pb2_grpc.FormationServiceStub
) -> None:
    kyoto = [("user", "I'm vegetarian, by the way."), *KYOTO]
    earlier = make_segment(kyoto, start=datetime.now(UTC) - timedelta(hours=2))
    again = make_segment([("user", "I use a wheelchair, so step-free temples please."), *KYOTO_AGAIN])
    first = await stub.FormChain(formation_pb2.FormChainRequest(segment=earlier), timeout=60)

    merged = await stub.FormChain(formation_pb2.FormChainRequest(segment=again), timeout=60)
    retried = await stub.FormChain(formation_pb2.FormChainRequest(segment=again), timeout=60)
    profile = await stub.GetProfile(formation_pb2.ProfileRequest(scope=SCOPE, limit=10), timeout=60)

    assert merged.outcome == retried.outcome == formation_pb2.FORM_OUTCOME_MERGED
    assert merged.chain_id == retried.chain_id == first.chain_id
    chain = await formation.store.get(first.chain_id)
    assert chain is not None and [f["text"] for f in chain["profile_facts"]] == [
        "I'm vegetarian, by the way.",
        "I use a wheelchair, so step-free temples please.",
    ]
    assert [f.text for f in profile.facts] == [
        "I use a wheelchair, so step-free temples please.",
        "I'm vegetarian, by the way.",
    ]
    assert {f.chain_id for f in profile.facts} == {first.chain_id}


async def test_a_forgotten_user_has_an_empty_profile_and_a_deleted_chain_takes_its_facts_with_it(
    stack: InProcessStack,
) -> None:
    async with stack.client() as client:
        _, chain_id = await _earlier_chain(stack, client)
        await _store(client, TRAVEL, [("user", "I'm allergic to peanuts.")])
        await client.delete_chain(TRAVEL, chain_id)
        after_delete = await client.get_context(TRAVEL, query=ARTICLE)
        await client.forget_user("acme", "alice")
        after_forget = await client.get_context(TRAVEL, query=ARTICLE)

    assert _texts(after_delete) == ["I'm allergic to peanuts."]
    assert after_forget.profile == []


async def test_a_profile_read_again_after_the_users_chains_change_holds_the_change(stack: InProcessStack) -> None:
    """The chains' part of a profile is kept between calls (profile_cache.py) until formation writes one
    of the user's chains: forming and deleting each show at the next call."""
    async with stack.client() as client:
        _, chain_id = await _earlier_chain(stack, client)
        first = await client.get_context(TRAVEL, query=ARTICLE)
        again = await client.get_context(TRAVEL, query=ARTICLE)
        await _store(client, TRAVEL, [("user", "I'm allergic to peanuts."), ("agent", "Noted.")])
        newer = await _form_the_window(stack, TRAVEL, "chk-newer")
        after_forming = await client.get_context(TRAVEL, query=ARTICLE)
        await client.delete_chain(TRAVEL, chain_id)
        after_delete = await client.get_context(TRAVEL, query=ARTICLE)

    assert _texts(first) == _texts(again) == ["Always reply in German.", "I live in Berlin and I'm vegetarian."]
    assert _texts(after_forming) == ["I'm allergic to peanuts.", *_texts(first)]
    assert after_forming.profile[0].chain_id == newer
    assert _texts(after_delete) == ["I'm allergic to peanuts."]


def test_a_kept_profile_goes_with_a_write_of_the_users_chains_and_a_read_a_write_overtook_is_not_kept() -> None:
    cache = ProfileCache(ttl_seconds=None)
    fact = ({"text": "I'm vegan.", "event_id": "ev1", "told_at": 1.0}, "ch1")
    cache.put(("acme", "alice"), ("", 20), [fact], since=cache.since())
    cache.put(("acme", "bob"), ("", 20), [fact], since=cache.since())

    overtaken = cache.since()
    cache.changed(("acme", "alice"))
    cache.put(("acme", "alice"), ("travel", 20), [fact], since=overtaken)

    assert cache.get(("acme", "alice"), ("", 20)) is None
    assert cache.get(("acme", "alice"), ("travel", 20)) is None
    assert cache.get(("acme", "bob"), ("", 20)) == [fact] and cache.get(("acme", "bob"), ("", 5)) is None
    expired = ProfileCache(ttl_seconds=0.0)
    expired.put(("acme", "bob"), ("", 20), [fact], since=expired.since())
    assert expired.get(("acme", "bob"), ("", 20)) is None
