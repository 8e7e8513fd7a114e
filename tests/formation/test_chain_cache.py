"""The search cache of chain documents: what a search read is served again, never a version older than a write."""

from __future__ import annotations

from typing import Any

from support.formation_data import KYOTO, KYOTO_AGAIN, SCOPE, make_segment

from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.server import Formation
from athena_formation.store.chain_cache import ChainDocCache


def test_a_read_that_began_before_a_write_of_its_chain_is_not_kept() -> None:
    cache = ChainDocCache(max_documents=10)
    stamp = cache.begin_read()
    cache.drop(["c1"])  # the chain is written while the read is in flight
    cache.end_read(stamp, [{"_id": "c1", "v": "old"}, {"_id": "c2", "v": "fresh"}])

    found, missing = cache.lookup(["c1", "c2"])
    assert missing == ["c1"] and found == {"c2": {"_id": "c2", "v": "fresh"}}

    stamp = cache.begin_read()  # a read after the write keeps what it read
    cache.end_read(stamp, [{"_id": "c1", "v": "new"}])
    assert cache.lookup(["c1"])[0]["c1"]["v"] == "new"


def test_past_its_bound_the_least_recently_used_documents_go() -> None:
    cache = ChainDocCache(max_documents=2)
    cache.end_read(cache.begin_read(), [{"_id": "a"}, {"_id": "b"}])
    cache.lookup(["a"])
    cache.end_read(cache.begin_read(), [{"_id": "c"}])

    found, missing = cache.lookup(["a", "b", "c"])
    assert missing == ["b"] and set(found) == {"a", "c"} and len(cache) == 2


async def _search(stub: Any, query: str) -> memory_pb2.SearchMemoryResponse:
    return await stub.SearchMemory(
        formation_pb2.SearchRequest(request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query=query, limit=1)),
        timeout=30,
    )


async def test_a_search_after_a_merge_answers_with_the_merged_chain_not_the_cached_one(
    formation: Formation, stub: Any
) -> None:
    assert formation.store.search_cache is not None  # Milvus Lite: formation is the one writer
    created = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(KYOTO)), timeout=60)
    first = await _search(stub, "Kyoto temples")
    assert first.hits[0].chain.event_count == 4 and created.chain_id in {
        d for d in formation.store.search_cache.lookup([created.chain_id])[0]
    }

    merged = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(KYOTO_AGAIN)), timeout=60)
    assert merged.outcome == formation_pb2.FORM_OUTCOME_MERGED

    again = await _search(stub, "Kyoto temples")
    assert again.hits[0].chain.id == created.chain_id and again.hits[0].chain.event_count == 8
    assert again.hits[0].chain.recall_count == 2  # the first recall counts, written yet or not
    await formation.recall.settle()
    assert (await formation.store.get(created.chain_id))["recall_count"] == 2


def test_a_written_warm_up_is_applied_to_the_cached_copy_and_a_read_in_flight_is_not_kept() -> None:
    cache = ChainDocCache(max_documents=10)
    cache.end_read(cache.begin_read(), [{"_id": "c1", "status": "active", "recall_count": 2}])
    stamp = cache.begin_read()

    cache.add_recalls("c1", 3, {"heat_score": 0.9})
    cache.end_read(stamp, [{"_id": "c1", "status": "active", "recall_count": 2}])  # read before the warm-up landed

    assert cache.lookup(["c1"])[0]["c1"] == {"_id": "c1", "status": "active", "recall_count": 5, "heat_score": 0.9}
