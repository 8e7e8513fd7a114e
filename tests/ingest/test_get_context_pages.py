"""GetContext pages (issue 19): an answer stays under gRPC's 4 MiB default message limit however large
the window, and the pages together return the selection exactly once, in order. Against the running
in-process ingest (real Redis and MongoDB-wire server), through the default client channel."""

from __future__ import annotations

import base64
import json
from typing import Any

import grpc
import pytest
from support.hostile import refused_fields

from athena import keys
from athena.events import scope_key
from athena_client import AsyncAthenaClient, ContextPage, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_ingest import context_page
from athena_ingest.context_page import TRANSPORT_LIMIT_BYTES, fit_chains
from athena_ingest.ingestor import Ingestor

SCOPE = AsyncAthenaClient.scope("acme", "alice", "helper")
WINDOW = keys.stm_window_key(scope_key(SCOPE))
BIG_WINDOW = 200
"""Events of the largest content size: together well past the transport limit."""
BATCH = 50
"""Events per StoreEvents call (a request is under the same 4 MiB limit)."""


async def _store(client: AsyncAthenaClient, contents: list[str]) -> list[str]:
    """Stores the contents in order, in batches; returns the stored event ids in that order."""
    ids: list[str] = []
    for at in range(0, len(contents), BATCH):
        response = await client.store_events(SCOPE, [EventInput("user", c) for c in contents[at : at + BATCH]])
        ids += [r.event_id for r in response.results]
    return ids


async def _fill_past_the_transport_limit(client: AsyncAthenaClient, ingest: Ingestor) -> list[str]:
    size = ingest.limits.max_content_bytes
    ids = await _store(client, [f"{i:04d} ".ljust(size, "x") for i in range(BIG_WINDOW)])
    assert BIG_WINDOW * size > TRANSPORT_LIMIT_BYTES
    return ids


async def _pages(client: AsyncAthenaClient, *, limit: int = 0) -> list[ContextPage]:
    return [page async for page in client.context_pages(SCOPE, limit=limit)]


def _oldest_first(pages: list[ContextPage]) -> list[str]:
    """The pages' event ids as one list: pages come newest first, their events oldest first."""
    return [e.id for page in reversed(pages) for e in page]


def _answer_bytes(page: ContextPage) -> int:
    return memory_pb2.GetContextResponse(events=page, next_page_token=page.next_page_token).ByteSize()


async def test_a_window_past_the_transport_limit_comes_in_pages_holding_it_exactly_once_in_order(
    client: AsyncAthenaClient, ingest: Ingestor
) -> None:
    ids = await _fill_past_the_transport_limit(client, ingest)

    pages = await _pages(client)

    assert len(pages) > 1
    assert all(page.next_page_token for page in pages[:-1]) and pages[-1].next_page_token == ""
    assert all(0 < _answer_bytes(page) < TRANSPORT_LIMIT_BYTES for page in pages)
    assert pages[0][-1].id == ids[-1]  # the first page is the newest events
    assert _oldest_first(pages) == ids
    assert [e.id for e in await client.get_full_context(SCOPE)] == ids


async def test_a_limit_smaller_than_the_window_pages_only_through_the_limit(
    client: AsyncAthenaClient, ingest: Ingestor
) -> None:
    ids = await _fill_past_the_transport_limit(client, ingest)

    pages = await _pages(client, limit=150)

    assert len(pages) > 1 and pages[-1].next_page_token == ""
    assert _oldest_first(pages) == ids[-150:]


async def test_a_small_window_is_one_page_without_a_token(client: AsyncAthenaClient) -> None:
    await _store(client, ["one", "two", "three"])

    page = await client.get_context(SCOPE)

    assert [e.content for e in page] == ["one", "two", "three"]
    assert page.next_page_token == ""
    assert [e.content for e in await client.get_context(SCOPE, limit=2)] == ["two", "three"]


def _token(body: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode()


@pytest.mark.parametrize(
    "token",
    [
        "not a token!",
        "e30=!",  # "{}" in base64, then a character outside the alphabet
        "A" * 513,
        base64.urlsafe_b64encode(b"\xff\xfe\x00").decode(),  # not JSON
        _token([1, 2]),
        _token({"o": 3}),  # a ListChains token
        _token({"e": "ev_1"}),  # no index
        _token({"e": "", "i": 0}),
        _token({"e": "e" * 129, "i": 0}),
        _token({"e": "ev_1", "i": -1}),
        _token({"e": "ev_1", "i": 2**31}),
        _token({"e": "ev_1", "i": True}),
        _token({"e": "ev_1", "i": 1.5}),
        _token({"e": "ev_1", "i": 3, "r": 0}),
        _token({"e": "ev_1", "i": 3, "r": 2001}),  # more than a window holds
        _token({"e": "ev_1", "i": 3, "x": 1}),
    ],
)
async def test_a_malformed_page_token_is_invalid_argument_naming_page_token(
    client: AsyncAthenaClient, token: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await client.get_context(SCOPE, page_token=token)
    assert refused_fields(err.value) == ["page_token"]


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page budget of a few small events, so that small windows page too."""
    monkeypatch.setattr(context_page, "RESPONSE_BUDGET_BYTES", 1200)


@pytest.mark.usefixtures("small_pages")
async def test_a_page_whose_anchor_left_the_window_is_empty_without_a_token(
    client: AsyncAthenaClient, redis: Any
) -> None:
    await _store(client, [f"message {i}" for i in range(20)])
    first = await client.get_context(SCOPE)
    assert first.next_page_token and 0 < len(first) < 20

    await redis.ltrim(WINDOW, 20 - len(first) + 1, -1)  # a cut into a chain took the anchor (first[0])

    rest = await client.get_context(SCOPE, page_token=first.next_page_token)
    assert list(rest) == [] and rest.next_page_token == ""


@pytest.mark.usefixtures("small_pages")
async def test_events_cut_or_stored_between_pages_leave_the_rest_of_the_selection_exactly_once(
    client: AsyncAthenaClient, redis: Any
) -> None:
    ids = await _store(client, [f"message {i}" for i in range(30)])
    pages = [await client.get_context(SCOPE)]
    assert 0 < len(pages[0]) < 13  # a page holds under 13: the 15+ left after it and the cut span 2+ pages

    await _store(client, [f"later {i}" for i in range(5)])  # after the selection: not part of it
    await redis.ltrim(WINDOW, 3, -1)  # a cut into a chain took the three oldest
    while pages[-1].next_page_token:
        pages.append(await client.get_context(SCOPE, page_token=pages[-1].next_page_token))

    assert len(pages) > 2
    assert _oldest_first(pages) == ids[3:]


def test_relevant_chains_are_kept_best_first_within_their_budget() -> None:
    hit = memory_pb2.SearchHit(chain=memory_pb2.Chain(id="c", summary="s" * 300_000))

    kept = fit_chains([hit, hit, hit, hit, memory_pb2.SearchHit(chain=memory_pb2.Chain(id="small"))])

    assert len(kept) == 3  # the fourth passes the budget, and nothing after it is kept either
