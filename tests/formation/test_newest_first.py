"""Newest first among hits about one subject (search/newest_first.py): only the order of chains (and
turns of the window) that both state a lasting fact and whose embeddings are close changes, each
group in its own places."""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from athena_client.memory.v1 import memory_pb2
from athena_formation.search.newest_first import SCORED_FACT, newest_first, open_turn_fact
from athena_formation.search.open_events import EventTerms, OpenTurn


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def _doc(chain_id: str, last_event_at: float, *, lasting: bool = True, updates: bool = True) -> dict[str, Any]:
    return {"_id": chain_id, "last_event_at": last_event_at, "lasting_fact": lasting, "updates_fact": updates}


HOME = _unit(1, 0, 0)
HOME_AGAIN = _unit(0.9, 0.3, 0)
JOB = _unit(0, 0, 1)


def test_the_newer_chain_on_a_subject_takes_the_first_place_the_subject_won() -> None:
    hits = [_doc("home-old", 100), _doc("job", 300), _doc("home-new", 500)]
    vectors = {"home-old": HOME, "job": JOB, "home-new": HOME_AGAIN}

    ordered = newest_first(hits, lambda d: d, vectors)

    assert [d["_id"] for d in ordered] == ["home-new", "job", "home-old"]


def test_chains_on_other_subjects_or_without_a_lasting_fact_keep_their_places() -> None:
    hits = [_doc("home-old", 100), _doc("home-new", 500, lasting=False), _doc("job", 900)]
    vectors = {"home-old": HOME, "home-new": HOME_AGAIN, "job": JOB}

    assert newest_first(hits, lambda d: d, vectors) == hits


def test_two_facts_of_the_kind_the_question_asks_for_are_one_subject_however_far_apart() -> None:
    leeds = {**_doc("home-old", 100), "profile_facts": [{"text": "I live in Leeds."}]}
    oslo = {**_doc("home-new", 500), "profile_facts": [{"text": "Actually I moved to Oslo last month."}]}
    vectors = {"home-old": HOME, "home-new": JOB}  # orthogonal: not one subject by their embeddings

    assert [d["_id"] for d in newest_first([leeds, oslo], lambda d: d, vectors, asked=frozenset({"home"}))] == [
        "home-new",
        "home-old",
    ]
    assert newest_first([leeds, oslo], lambda d: d, vectors, asked=frozenset({"work"})) == [leeds, oslo]
    assert newest_first([leeds, oslo], lambda d: d, vectors) == [leeds, oslo]


def test_two_facts_of_how_the_user_gets_to_work_are_one_subject_for_a_question_asking_for_it() -> None:
    cycle = {**_doc("cycle", 100), "profile_facts": [{"text": "I cycle to work every day."}]}
    bus = {**_doc("bus", 500), "profile_facts": [{"text": "I sold my bike, I take the bus to work now."}]}
    vectors = {"cycle": HOME, "bus": JOB}

    ordered = newest_first([cycle, bus], lambda d: d, vectors, asked=frozenset({"commute"}))

    assert [d["_id"] for d in ordered] == ["bus", "cycle"]
    assert newest_first([cycle, bus], lambda d: d, vectors, asked=frozenset({"work"})) == [cycle, bus]


def test_where_someone_else_lives_is_no_home_of_the_users() -> None:
    leeds = {**_doc("home", 100), "profile_facts": [{"text": "I live in Leeds."}]}
    mom = {**_doc("mom", 300, updates=False), "profile_facts": [{"text": "My mom lives with us."}]}
    oslo = {**_doc("moved", 500), "profile_facts": [{"text": "Actually I moved to Oslo last month."}]}
    vectors = {"home": HOME, "mom": JOB, "moved": _unit(0, 1, 0)}  # apart: one subject only by the kind

    ordered = newest_first([leeds, oslo, mom], lambda d: d, vectors, asked=frozenset({"home"}))

    # Oslo takes Leeds's place and Leeds Oslo's; the mother's fact, told between them, is not
    # drawn into the user's homes to push Leeds down
    assert [d["_id"] for d in ordered] == ["moved", "home", "mom"]


def test_where_the_users_parents_live_is_no_home_of_the_users() -> None:
    parents = {**_doc("parents", 100, updates=False), "profile_facts": [{"text": "My parents live in Nairobi."}]}
    leeds = {**_doc("leeds", 500), "profile_facts": [{"text": "Actually, we moved to Leeds last year."}]}
    vectors = {"parents": HOME, "leeds": JOB}  # apart: one subject only by the kind

    ordered = newest_first([parents, leeds], lambda d: d, vectors, asked=frozenset({"home"}))

    # "Where do my parents live?" asks for the home; the user's own move does not go before it
    assert ordered == [parents, leeds]


def test_a_correction_that_repeats_a_word_of_the_older_fact_goes_first_however_far_apart() -> None:
    google = {**_doc("google", 100, updates=False), "profile_facts": [{"text": "I work at Google as a designer."}]}
    other = {**_doc("benefits", 300, updates=False), "profile_facts": [{"text": "I'm preparing for retirement."}]}
    spotify = {**_doc("spotify", 500), "profile_facts": [{"text": "I left Google, I now work at Spotify."}]}
    vectors = {"google": HOME, "benefits": _unit(0, 1, 0), "spotify": JOB}  # apart: one subject only by "Google"

    ordered = newest_first([google, other, spotify], lambda d: d, vectors, question=["work"])

    assert [d["_id"] for d in ordered] == ["spotify", "benefits", "google"]


def test_a_span_of_time_two_facts_both_name_makes_them_no_one_subject() -> None:
    nurse = {**_doc("nurse", 100, updates=False), "profile_facts": [{"text": "I've been a nurse for twelve years."}]}
    leeds = {**_doc("leeds", 500), "profile_facts": [{"text": "Actually, we moved to Leeds last year."}]}
    vectors = {"nurse": HOME, "leeds": JOB}  # apart: one subject only by a shared word

    assert newest_first([nurse, leeds], lambda d: d, vectors, question=["profession"]) == [nurse, leeds]


def test_a_word_the_question_holds_of_change_or_of_a_kind_of_fact_makes_no_two_facts_one_subject() -> None:
    gym = {**_doc("gym", 100, updates=False), "profile_facts": [{"text": "I go to the gym at Fitness First."}]}
    pool = {**_doc("pool", 500), "profile_facts": [{"text": "I quit the gym, I swim at the pool now."}]}
    google = {**_doc("google", 100, updates=False), "profile_facts": [{"text": "I work at Google now."}]}
    nights = {**_doc("nights", 500), "profile_facts": [{"text": "I now work nights."}]}
    vectors = {"gym": HOME, "pool": JOB, "google": HOME, "nights": JOB}

    assert [d["_id"] for d in newest_first([gym, pool], lambda d: d, vectors, question=["exercis"])] == ["pool", "gym"]
    assert newest_first([gym, pool], lambda d: d, vectors, question=["gym"]) == [gym, pool]
    # "now" only says that something changed, "work" tells the kind of both: a user works nights at Google
    assert newest_first([google, nights], lambda d: d, vectors, question=["job"]) == [google, nights]


def test_a_chain_of_several_facts_is_compared_by_the_fact_that_scored_it_or_by_none() -> None:
    # The chain of the morning coffee also holds the dog Rex, whom a later fact says is gone.
    coffee = {
        **_doc("coffee", 100, updates=False),
        "profile_facts": [{"text": "Tomo un café cada mañana."}, {"text": "J'ai un chien qui s'appelle Rex."}],
    }
    cat = {
        **_doc("cat", 500),
        "profile_facts": [{"text": "Nous n'avons plus Rex, maintenant nous avons une chatte."}],
    }
    vectors = {"coffee": HOME, "cat": JOB}
    by_dog = {**coffee, SCORED_FACT: "J'ai un chien qui s'appelle Rex."}
    by_coffee = {**coffee, SCORED_FACT: "Tomo un café cada mañana."}

    assert [d["_id"] for d in newest_first([by_dog, cat], lambda d: d, vectors)] == ["cat", "coffee"]
    assert newest_first([by_coffee, cat], lambda d: d, vectors) == [by_coffee, cat]
    assert newest_first([coffee, cat], lambda d: d, vectors) == [coffee, cat]


def test_hits_that_are_not_chains_are_left_where_they_are() -> None:
    hits: list[dict[str, Any] | str] = [_doc("home-old", 100), "open turn", _doc("home-new", 500)]
    vectors = {"home-old": HOME, "home-new": HOME_AGAIN}

    ordered = newest_first(hits, lambda h: h if isinstance(h, dict) else None, vectors)

    assert ordered == [hits[2], "open turn", hits[0]]


def test_a_newer_fact_on_the_subject_that_does_not_say_it_changed_keeps_its_place() -> None:
    # "I'm allergic to shellfish", later "I'm allergic to penicillin": both hold.
    hits = [_doc("shellfish", 100, updates=False), _doc("job", 300), _doc("penicillin", 500, updates=False)]
    vectors = {"shellfish": HOME, "job": JOB, "penicillin": HOME_AGAIN}

    assert newest_first(hits, lambda d: d, vectors) == hits


def test_only_the_newer_fact_saying_it_changed_decides() -> None:
    # The older fact's own word of change ("I now live in Berlin") does not put it before a newer one.
    said_before = [_doc("home-old", 100, updates=True), _doc("home-new", 500, updates=False)]
    said_after = [_doc("home-old", 100, updates=False), _doc("home-new", 500, updates=True)]
    vectors = {"home-old": HOME, "home-new": HOME_AGAIN}

    assert newest_first(said_before, lambda d: d, vectors) == said_before
    assert [d["_id"] for d in newest_first(said_after, lambda d: d, vectors)] == ["home-new", "home-old"]


def test_a_chain_formed_before_updates_were_recorded_orders_as_it_did() -> None:
    old_style = [{"_id": "home-old", "last_event_at": 100, "lasting_fact": True}]
    old_style.append({"_id": "home-new", "last_event_at": 500, "lasting_fact": True})
    vectors = {"home-old": HOME, "home-new": HOME_AGAIN}

    assert [d["_id"] for d in newest_first(old_style, lambda d: d, vectors)] == ["home-new", "home-old"]


def _turn(first_id: str, *texts: str, seconds: int = 1_796_000_000) -> OpenTurn:
    roles = [memory_pb2.ROLE_USER, memory_pb2.ROLE_AGENT]
    events = tuple(
        memory_pb2.Event(
            id=f"{first_id}-{k}" if k else first_id,
            role=roles[k % 2],
            type=memory_pb2.EVENT_TYPE_MESSAGE,
            content=text,
            timestamp=Timestamp(seconds=seconds),
        )
        for k, text in enumerate(texts)
    )
    return OpenTurn(events=events, lexicon={})


def test_a_turn_in_the_window_states_its_users_lasting_fact_and_whether_it_says_it_changed() -> None:
    old = open_turn_fact(_turn("ev-old", "I prefer aisle seats.", "Noted."), position=0)
    new = open_turn_fact(_turn("ev-new", "Actually I prefer window seats now.", "Noted."), position=3)
    chat = open_turn_fact(_turn("ev-chat", "Book me a flight to Lisbon.", "Actually, done now."), position=1)

    assert (old["_id"], old["lasting_fact"], old["updates_fact"]) == ("ev-old", True, False)
    assert (new["lasting_fact"], new["updates_fact"]) == (True, True)
    assert not chat["lasting_fact"]  # the agent's "actually ... now" is no fact of the user's


def test_turns_told_in_one_call_share_a_time_and_the_later_in_the_window_is_the_newer() -> None:
    # Stored in one StoreEvents call, the events carry one timestamp: the window's order decides.
    old = open_turn_fact(_turn("ev-old", "My phone number is 555-1234.", "Noted."), position=0)
    new = open_turn_fact(_turn("ev-new", "Actually, my phone number changed, it's now 555-9876.", "Ok."), position=2)
    vectors = {"ev-old": HOME, "ev-new": HOME_AGAIN}

    assert newest_first([old, new], lambda d: d, vectors) == [new, old]
    assert newest_first([new, old], lambda d: d, vectors) == [new, old]


def test_a_correction_in_the_window_goes_before_the_chain_it_corrects_formed_at_the_same_time() -> None:
    chain = {**_doc("home-old", 1_796_000_000), "created_at": 1_796_000_000.5, "updates_fact": False}
    turn = open_turn_fact(_turn("ev-new", "Correction: I moved, I live in Munich now.", "Ok."), position=0)

    assert newest_first([chain, turn], lambda d: d, {"home-old": HOME, "ev-new": HOME_AGAIN}) == [turn, chain]


def test_an_open_events_fact_flags_are_kept_with_its_term_counts_and_forgotten_with_its_user() -> None:
    turn = _turn("ev-new", "Actually I prefer window seats now.", "Noted.")
    read = EventTerms(max_events=2)
    for event in turn.events:
        read.of(event)

    kept = open_turn_fact(turn, position=0, read=read)
    assert kept == open_turn_fact(turn, position=0)  # the same flags as read afresh
    assert set(read._facts) == {"ev-new", "ev-new-1"}

    read.of(memory_pb2.Event(id="ev-later", content="Hello."))  # past max_events: the oldest goes
    assert set(read._facts) == {"ev-new-1"}

    read.forget_user("", "")  # the events of this test carry no scope
    assert read._facts == {}
