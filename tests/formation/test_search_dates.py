"""A query that names a date ("on 3 June", "in May 2024") lifts the chains told then (query_period.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from support.formation_data import COOKING, SCOPE, make_segment

from athena.config import Settings
from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.search.lexicon import chain_lexicon
from athena_formation.search.query_period import DayRange, Period, query_periods, told_in, told_in_each
from athena_formation.search.ranking import Ranking
from athena_formation.search.search_memory import TOLD_WHY
from athena_formation.server import Formation
from athena_formation.store.chain_store import ChainStore
from athena_formation.store.lexical_index import LexicalIndex, LexiconRow, UserLexicon

# Two chats about the same hobby, months apart: the spring one says more of the words a question uses.
SPRING_RUNS = [
    ("user", "My running is going well: long runs on Sundays, easy runs midweek, and a running club on Tuesdays."),
    ("agent", "A steady running week. Keep the long run easy and your running will keep improving."),
    ("user", "The running club does intervals, so my running pace is getting better too."),
    ("agent", "Intervals once a week are plenty for your running at this stage."),
]
SUMMER_RUNS = [
    ("user", "I ran my first half marathon today, finished in one hour fifty-eight!"),
    ("agent", "Under two hours on your first half marathon is a great result. How do your legs feel?"),
    ("user", "Sore, but the running was worth it."),
    ("agent", "Rest a few days, then start with short easy runs."),
]
MARCH_2024 = datetime(2024, 3, 12, 18, 0, tzinfo=UTC)
JUNE_2024 = datetime(2024, 6, 9, 18, 0, tzinfo=UTC)


def _epoch(day: datetime) -> float:
    return day.timestamp()


# --- reading the dates a query names ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "periods"),
    [
        ("What did I say on 3 June, 2023?", [Period(2023, 6, 3)]),
        ("what happened on June 3rd 2023", [Period(2023, 6, 3)]),
        ("the 3rd of June", [Period(None, 6, 3)]),
        ("anything from 2023-06-03?", [Period(2023, 6, 3)]),
        ("What did Maria donate in December 2023?", [Period(2023, 12, None)]),
        ("When did we go camping in June?", [Period(None, 6, None)]),
        ("How many trips in 2022?", [Period(2022, None, None)]),
        ("in September and on Mar 3rd", [Period(None, 3, 3), Period(None, 9, None)]),
        ("03.06.2023", [Period(2023, 6, 3)]),
        ("el 6/3/2023 o el 13/6/2023", [Period(2023, 6, 3), Period(2023, 3, 6), Period(2023, 6, 13)]),
        ("¿Qué te dije el 3 de junio de 2023?", [Period(2023, 6, 3)]),
        ("Qu'est-ce que j'ai dit en juin ?", [Period(None, 6, None)]),
        ("Was habe ich dir am 3. Juni 2023 erzählt?", [Period(2023, 6, 3)]),
        ("Was war im März?", [Period(None, 3, None)]),
        ("Что я говорил 3 июня 2023?", [Period(2023, 6, 3)]),
        ("Что было в июне?", [Period(None, 6, None)]),
        ("我2023年6月3日说了什么？", [Period(2023, 6, 3)]),
        ("2023년 6월에 뭐라고 했지?", [Period(2023, 6, None)]),
    ],
)
def test_a_query_names_days_months_and_years_in_its_own_language(query: str, periods: list[Period]) -> None:
    assert query_periods(query) == periods


FRIDAY = datetime(2026, 12, 4, 10, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("What did I tell you yesterday?", date(2026, 12, 3), date(2026, 12, 3)),
        ("¿Qué te dije ayer?", date(2026, 12, 3), date(2026, 12, 3)),
        ("Qu'est-ce que je t'ai dit hier ?", date(2026, 12, 3), date(2026, 12, 3)),
        ("我昨天说了什么", date(2026, 12, 3), date(2026, 12, 3)),
        ("the day before yesterday", date(2026, 12, 2), date(2026, 12, 2)),
        ("what did I say today", date(2026, 12, 4), date(2026, 12, 4)),
        ("vor 3 Tagen", date(2026, 12, 1), date(2026, 12, 1)),
        ("a few days ago", date(2026, 12, 1), date(2026, 12, 1)),
        ("last week", date(2026, 11, 23), date(2026, 11, 29)),  # Monday to Sunday
        ("на этой неделе", date(2026, 11, 30), date(2026, 12, 4)),  # this week, up to today
        ("le mois dernier", date(2026, 11, 1), date(2026, 11, 30)),
        ("작년", date(2025, 1, 1), date(2025, 12, 31)),
        ("what did I say on Monday?", date(2026, 11, 30), date(2026, 11, 30)),  # the latest Monday
        ("¿qué te dije el viernes?", date(2026, 12, 4), date(2026, 12, 4)),  # today is a Friday
        ("Что я сказал в среду?", date(2026, 12, 2), date(2026, 12, 2)),
        ("月曜日に何を言った？", date(2026, 11, 30), date(2026, 11, 30)),
        ("over the weekend", date(2026, 11, 28), date(2026, 11, 29)),
    ],
)
def test_days_named_relative_to_the_search_are_read_from_its_time(query: str, first: date, last: date) -> None:
    assert query_periods(query, now=FRIDAY) == [DayRange(first, last)]
    assert query_periods(query) == []  # without the search's time, only dates are read


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what you recommended?",
        "June said the trail was closed",
        "What inspired John to join the marching event?",
        "What did I say before June?",
        "My PIN is 2023",
        "page June 45",
        "agua de mar",  # Spanish: sea water, not March
        "Hier ist mein Plan",  # German "here", not the French "yesterday"
        "version 1.2.3",
        "среда разработки",  # Russian "environment"; Wednesday is read as "в среду"
    ],
)
def test_words_that_only_look_like_dates_name_no_period(query: str) -> None:
    assert query_periods(query, now=FRIDAY) == []


def test_a_period_covers_what_was_told_from_a_day_before_it_to_a_week_after_it() -> None:
    june_3 = [Period(2023, 6, 3)]
    day = datetime(2023, 6, 3, 12, tzinfo=UTC)

    assert told_in(june_3, _epoch(day), _epoch(day))
    assert told_in(june_3, _epoch(day - timedelta(days=1)), _epoch(day - timedelta(days=1)))  # time zones
    assert told_in(june_3, _epoch(day + timedelta(days=7)), _epoch(day + timedelta(days=7)))  # "last weekend"
    assert not told_in(june_3, _epoch(day + timedelta(days=8)), _epoch(day + timedelta(days=8)))
    assert not told_in(june_3, _epoch(day - timedelta(days=2)), _epoch(day - timedelta(days=2)))
    assert told_in(june_3, _epoch(day - timedelta(days=20)), _epoch(day + timedelta(days=20)))  # a span across it
    assert not told_in([Period(2022, 6, 3)], _epoch(day), _epoch(day))  # another year
    assert told_in([Period(None, 6, 3)], _epoch(day), _epoch(day))  # no year: any year
    assert told_in(
        [Period(None, 12, None)], _epoch(datetime(2024, 1, 5, tzinfo=UTC)), _epoch(datetime(2024, 1, 5, tzinfo=UTC))
    )
    assert not told_in([], _epoch(day), _epoch(day))


def test_times_not_known_count_as_told_or_not_as_the_caller_says() -> None:
    spans = np.array([[_epoch(JUNE_2024)] * 2, [_epoch(MARCH_2024)] * 2, [np.nan, np.nan]])
    june = query_periods("in June 2024")

    assert told_in_each(june, spans, unknown=True).tolist() == [True, False, True]
    assert told_in_each(june, spans, unknown=False).tolist() == [True, False, False]
    assert told_in_each([], spans, unknown=True).tolist() == [False, False, False]


# --- the ranking and the lexical index ----------------------------------------------------------------


def test_the_date_weight_is_added_to_the_score_and_ranking_many_at_once_agrees() -> None:
    ranking = Ranking(lexical_weight=0.7, date_weight=0.05, size_prior=0.3, size_prior_min_events=5)
    plain = ranking.rank(chain_id="a", similarity=0.5, lexical=0.4, event_count=8)
    dated = ranking.rank(chain_id="b", similarity=0.5, lexical=0.4, event_count=8, told=True)

    assert dated.score == pytest.approx((0.3 * 0.5 + 0.7 * 0.4) / 8**0.3 + 0.05) and dated.told
    assert plain.score == pytest.approx((0.3 * 0.5 + 0.7 * 0.4) / 8**0.3) and not plain.told
    many = ranking.rank_many(
        ["a", "b"], np.array([0.5, 0.5]), np.array([0.4, 0.4]), np.array([8, 8]), most=2, told=np.array([False, True])
    )
    assert many == [dated, plain]
    # Told or not, the order among chains is the one of their relevance and size: every chain told
    # in the period ("in 2023" of a conversation all in 2023) ranks as none would.
    short = ranking.rank(chain_id="s", similarity=0.5, lexical=0.3, event_count=3, told=True)
    long = ranking.rank(chain_id="l", similarity=0.5, lexical=0.4, event_count=20, told=True)
    assert (short.score > long.score) == (
        ranking.rank(chain_id="s", similarity=0.5, lexical=0.3, event_count=3).score
        > ranking.rank(chain_id="l", similarity=0.5, lexical=0.4, event_count=20).score
    )
    assert Ranking(date_weight=0.0).rank(chain_id="b", similarity=0.5, lexical=0.4, event_count=8, told=True).score == (
        Ranking(date_weight=0.0).rank(chain_id="b", similarity=0.5, lexical=0.4, event_count=8).score
    )


def test_the_lexical_index_keeps_each_chains_time_span_through_rewrites_and_compaction() -> None:
    index = UserLexicon()
    for round_ in range(3):
        for i in range(300):
            index.put(
                LexiconRow(
                    f"c{i}",
                    "helper",
                    chain_lexicon([f"topic{i}"]),
                    3,
                    first_event_at=1000.0 * i + round_,
                    last_event_at=1000.0 * i + 10 + round_,
                )
            )
    index.drop([f"c{i}" for i in range(0, 300, 2)])
    index.put(LexiconRow("old", "helper", chain_lexicon(["no times"]), 2))

    spans = index.spans(["c7", "c2", "old", "c299"])

    assert spans[0].tolist() == [7002.0, 7012.0] and spans[3].tolist() == [299002.0, 299012.0]
    assert np.isnan(spans[1]).all() and np.isnan(spans[2]).all()  # dropped; written without times


async def test_the_warm_up_and_a_users_first_read_carry_each_chains_time_span(mongo: Any, mongo_db_name: str) -> None:
    store = ChainStore(mongo, mongo_db_name)
    base = {"tenant_id": SCOPE.tenant_id, "user_id": SCOPE.user_id, "agent_id": SCOPE.agent_id, "status": "active"}
    lexicon = chain_lexicon(["running club intervals"])
    await store.insert_new(
        {**base, "_id": "dated", "lexicon": lexicon, "event_count": 4, "updated_at": 1.0}
        | {"first_event_at": _epoch(MARCH_2024), "last_event_at": _epoch(MARCH_2024) + 90}
    )
    await store.insert_new({**base, "_id": "undated", "lexicon": lexicon, "event_count": 4, "updated_at": 1.0})

    warmed = LexicalIndex(store, shared=False)
    assert await warmed.warm() == 2
    read_by_search = LexicalIndex(store, shared=False)  # no warm-up: the user's first search reads them

    for index in (warmed, read_by_search):
        spans = (await index.user(SCOPE.tenant_id, SCOPE.user_id)).spans(["dated", "undated"])
        assert spans[0].tolist() == [_epoch(MARCH_2024), _epoch(MARCH_2024) + 90] and np.isnan(spans[1]).all()


# --- SearchMemory through formation (MongoDB-wire server, Milvus Lite) -------------------------------


async def _form(stub: Any, turns: list[tuple[str, str]], start: datetime) -> str:
    response = await stub.FormChain(
        formation_pb2.FormChainRequest(segment=make_segment(turns, start=start)), timeout=60
    )
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED, response.reason
    return response.chain_id


async def _search(stub: Any, query: str) -> list[str]:
    """The hits' chain ids, best first; a hit lifted by the query's dates says so in its `why`."""
    request = memory_pb2.SearchMemoryRequest(scope=SCOPE, query=query, limit=2)
    response = await stub.SearchMemory(formation_pb2.SearchRequest(request=request), timeout=30)
    return [h.chain.id + ("@told" if h.why.endswith(TOLD_WHY) else "") for h in response.hits]


async def test_a_question_naming_a_month_finds_the_chain_told_that_month_first(formation: Formation, stub: Any) -> None:
    spring = await _form(stub, SPRING_RUNS, MARCH_2024)
    summer = await _form(stub, SUMMER_RUNS, JUNE_2024)

    # The first search reads the user's chains (and their times) from MongoDB.
    assert await _search(stub, "How was my running in June 2024?") == [f"{summer}@told", spring]
    assert await _search(stub, "How was my running in March?") == [f"{spring}@told", summer]
    assert await _search(stub, "How was my running?") == [spring, summer]  # no date: the words decide
    assert await _search(stub, "How was my running in 2024?") == [f"{spring}@told", f"{summer}@told"]
    formation.recall.ranking = Ranking.from_settings(Settings(search_date_weight=0.0))
    assert await _search(stub, "How was my running in June 2024?") == [spring, summer]


async def test_a_chain_formed_after_the_first_search_is_found_by_its_date_too(formation: Formation, stub: Any) -> None:
    spring = await _form(stub, SPRING_RUNS, MARCH_2024)
    assert await _search(stub, "running on 12 March 2024") == [f"{spring}@told"]

    summer = await _form(stub, SUMMER_RUNS, JUNE_2024)  # joins the loaded index with its span

    assert await _search(stub, "What about my running on June 9, 2024?") == [f"{summer}@told", spring]


async def test_events_in_no_chain_yet_are_found_by_the_date_they_were_told(formation: Formation, stub: Any) -> None:
    spring = await _form(stub, SPRING_RUNS, MARCH_2024)
    window = make_segment(SUMMER_RUNS, start=JUNE_2024)
    # The turns tell the user's own runs, whose cosine alone would lift them too (Ranking.rank's
    # `by_meaning`): left out, so that the date is all that differs.
    formation.recall.ranking = Ranking.from_settings(Settings(search_told_facts=False))

    request = memory_pb2.SearchMemoryRequest(scope=SCOPE, query="How was my running in June 2024?", limit=2)
    response = await stub.SearchMemory(formation_pb2.SearchRequest(request=request, open_segments=[window]), timeout=30)

    assert response.hits[0].source == memory_pb2.HIT_SOURCE_WINDOW and response.hits[0].why.endswith(TOLD_WHY)
    assert set(response.hits[0].event_ids) <= {e.id for e in window.events}
    formation.recall.ranking = Ranking.from_settings(Settings(search_date_weight=0.0, search_told_facts=False))
    undated = await stub.SearchMemory(formation_pb2.SearchRequest(request=request, open_segments=[window]), timeout=30)
    assert undated.hits[0].chain.id == spring  # the words alone prefer the spring chat


async def test_what_was_told_yesterday_is_found_first_by_a_question_about_yesterday(
    formation: Formation, stub: Any
) -> None:
    now = datetime.now(UTC)
    spring = await _form(stub, SPRING_RUNS, now - timedelta(days=40))
    summer = await _form(stub, SUMMER_RUNS, now - timedelta(days=1))

    assert await _search(stub, "What did I tell you yesterday about my running?") == [f"{summer}@told", spring]
    assert await _search(stub, "What did I tell you about my running?") == [spring, summer]


class _NarrowRanking(Ranking):
    """The shipped ranking with 2 candidates per side instead of 50: in a memory of thousands of
    chains, a chain neither the embedding nor the words rank near the top is not a candidate either."""

    def candidates(self, limit: int) -> int:
        return 2


async def test_a_chain_told_yesterday_is_a_candidate_whatever_its_words(formation: Formation, stub: Any) -> None:
    # Three chains of the same words a week apart: with the seed's three-day merge window they stay
    # three (the default year would merge them, which is not what this test is about).
    formation.former.settings = formation.former.settings.model_copy(update={"session_max_age_hours": 72.0})
    now = datetime.now(UTC)
    running = [await _form(stub, SPRING_RUNS, MARCH_2024 + timedelta(days=d)) for d in (0, 7, 14)]
    cooking = await _form(stub, COOKING, now - timedelta(days=1))
    request = memory_pb2.SearchMemoryRequest(
        scope=SCOPE, query="What did I tell you yesterday about my running?", limit=5
    )

    formation.recall.ranking = _NarrowRanking()
    hits = (await stub.SearchMemory(formation_pb2.SearchRequest(request=request), timeout=30)).hits
    formation.recall.ranking = _NarrowRanking(date_weight=0.0)
    undated = (await stub.SearchMemory(formation_pb2.SearchRequest(request=request), timeout=30)).hits

    assert cooking in [h.chain.id for h in hits] and cooking not in [h.chain.id for h in undated]
    assert next(h for h in hits if h.chain.id == cooking).why.endswith(TOLD_WHY)
    assert {h.chain.id for h in undated} <= set(running)
