"""SearchMemory reads its likely hits' documents while the query is embedded and the vectors scanned.

The words weigh most in the ranking and are scored before the query's embedding is ready, so the
chains the words alone rank best are read from MongoDB at once; a hit found by the embedding alone
is read after, as before. Shown here by order, not by time: the query's embedding cannot return
until a document read has begun.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from support.formation_data import COOKING, KYOTO, PYTHON_BUG, SCOPE, make_segment

from athena.embeddings import Embedder
from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.server import Formation


class _EmbedsAfterARead:
    """The formation's own embedder, whose query embeddings return only once a document read began
    (or after 5 s, and then say so)."""

    def __init__(self, inner: Embedder, read_began: asyncio.Event) -> None:
        self.inner = inner
        self.read_began = read_began
        self.waited_in_vain = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = await self.inner.embed(texts)
        try:
            await asyncio.wait_for(self.read_began.wait(), timeout=5)
        except TimeoutError:
            self.waited_in_vain += 1
        return rows


def _record_reads(formation: Formation, read_began: asyncio.Event) -> list[list[str]]:
    """Every `get_for_search` the search makes (the real one runs), in order."""
    reads: list[list[str]] = []
    real = formation.store.get_for_search

    async def recorded(chain_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        reads.append(list(chain_ids))
        read_began.set()
        return await real(chain_ids)

    formation.store.get_for_search = recorded  # type: ignore[method-assign]
    return reads


async def _form(stub: Any, turns: list[tuple[str, str]]) -> str:
    response = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(turns)), timeout=60)
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED, response.reason
    return response.chain_id


async def _search(stub: Any, query: str, limit: int) -> memory_pb2.SearchMemoryResponse:
    request = memory_pb2.SearchMemoryRequest(scope=SCOPE, query=query, limit=limit)
    return await stub.SearchMemory(formation_pb2.SearchRequest(request=request), timeout=30)


async def test_the_hits_found_by_their_words_are_read_before_the_query_is_embedded_and_only_once(
    formation: Formation, stub: Any
) -> None:
    kyoto = await _form(stub, KYOTO)
    await _form(stub, COOKING)
    read_began = asyncio.Event()
    embedder = _EmbedsAfterARead(formation.recall.embedder, read_began)
    formation.recall.embedder = embedder
    reads = _record_reads(formation, read_began)

    response = await _search(stub, "Which temples did I plan to visit in Kyoto?", limit=1)

    assert [h.chain.id for h in response.hits] == [kyoto]
    assert embedder.waited_in_vain == 0  # the read began while the query was being embedded
    assert reads == [[kyoto]]  # and the hit was not read a second time


async def test_a_hit_the_words_did_not_find_is_read_after_the_scan_and_the_answer_is_unchanged(
    formation: Formation, stub: Any
) -> None:
    kyoto = await _form(stub, KYOTO)
    cooking = await _form(stub, COOKING)
    plain = await _search(stub, "Kyoto temples", limit=2)
    read_began = asyncio.Event()
    formation.recall.embedder = _EmbedsAfterARead(formation.recall.embedder, read_began)
    formation.store.search_cache = None  # every document read goes to MongoDB and is recorded
    reads = _record_reads(formation, read_began)

    response = await _search(stub, "Kyoto temples", limit=2)

    assert [h.chain.id for h in response.hits] == [h.chain.id for h in plain.hits] == [kyoto, cooking]
    assert [h.score for h in response.hits] == [h.score for h in plain.hits]
    assert reads == [[kyoto], [cooking]]  # the likely hit first, the embedding's own hit after


async def test_a_hit_the_search_cache_holds_is_answered_without_waiting_for_the_prefetch(
    formation: Formation, stub: Any
) -> None:
    assert formation.store.search_cache is not None  # Milvus Lite: formation keeps the documents it read
    kyoto = await _form(stub, KYOTO)
    python = await _form(stub, PYTHON_BUG)
    assert [h.chain.id for h in (await _search(stub, "Kyoto temples", limit=1)).hits] == [kyoto]  # now cached
    answered = asyncio.Event()
    held_back: list[list[str]] = []
    waited_for: list[list[str]] = []
    real = formation.store.get_for_search

    async def read_after_the_answer(chain_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        held_back.append(list(chain_ids))
        try:
            await asyncio.wait_for(answered.wait(), timeout=5)
        except TimeoutError:  # the search did not answer while this read was held back: it waited for it
            waited_for.append(list(chain_ids))
        return await real(chain_ids)

    formation.store.get_for_search = read_after_the_answer  # type: ignore[method-assign]

    response = await _search(stub, "Kyoto temples, or the webhook payload?", limit=1)
    answered.set()

    assert [h.chain.id for h in response.hits] == [kyoto]
    assert held_back == [[python]]  # the words' other likely hit was being read
    assert waited_for == []  # and the answer did not wait for it
