"""VectorIndex.search on Milvus Lite, answered from the searched user's vectors (float16 rows): the cosine top k, scoped, and
coherent with upserts and deletes that happen after the user was loaded."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from athena_formation.store.user_vectors import UserVectors
from athena_formation.store.vector_index import VectorIndex

DIM = 8


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


async def _index_with(tmp_path: Path, rows: dict[str, tuple[str, str, np.ndarray]]) -> VectorIndex:
    index = VectorIndex(str(tmp_path / "milvus.db"), collection="search_test", dim=DIM)
    for chain_id, (user, agent, vec) in rows.items():
        await index.upsert(chain_id=chain_id, tenant_id="acme", user_id=user, agent_id=agent, embedding=vec)
    return index


async def test_search_returns_the_users_cosine_top_k_and_nothing_of_other_users(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    rows = {f"c{i}": ("alice" if i % 2 else "bob", "helper", _unit(rng)) for i in range(40)}
    index = await _index_with(tmp_path, rows)
    try:
        query = _unit(rng)
        hits = await index.search(query, tenant_id="acme", user_id="alice", limit=5)

        alice = {c: v for c, (u, _, v) in rows.items() if u == "alice"}
        expected = sorted(alice, key=lambda c: -float(alice[c] @ query))[:5]
        assert [h.chain_id for h in hits] == expected
        # The rows are kept as float16 (user_vectors.py): cosines within 1e-3 of float32's.
        assert all(abs(h.similarity - float(alice[h.chain_id] @ query)) < 1e-3 for h in hits)
        assert await index.search(query, tenant_id="acme", user_id="carol", limit=5) == []
    finally:
        await index.close()


async def test_upserts_and_deletes_after_the_user_was_loaded_are_seen_by_the_next_search(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows = {f"c{i}": ("alice", "helper", _unit(rng)) for i in range(6)}
    index = await _index_with(tmp_path, rows)
    try:
        query = _unit(rng)
        await index.search(query, tenant_id="acme", user_id="alice", limit=3)  # loads alice

        await index.upsert(chain_id="new", tenant_id="acme", user_id="alice", agent_id="helper", embedding=query)
        assert [h.chain_id for h in await index.search(query, tenant_id="acme", user_id="alice", limit=1)] == ["new"]

        await index.delete(["new"])
        assert "new" not in {h.chain_id for h in await index.search(query, tenant_id="acme", user_id="alice", limit=10)}

        # A fresh index (a restarted formation) reads the same state back from Milvus.
        await index.close()
        reopened = VectorIndex(str(tmp_path / "milvus.db"), collection="search_test", dim=DIM)
        try:
            found = {h.chain_id for h in await reopened.search(query, tenant_id="acme", user_id="alice", limit=10)}
            assert found == set(rows)
        finally:
            await reopened.close()
    finally:
        await index.close()


async def test_an_agent_scoped_search_returns_only_that_agents_chains(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    rows = {f"c{i}": ("alice", "helper" if i < 3 else "planner", _unit(rng)) for i in range(8)}
    index = await _index_with(tmp_path, rows)
    try:
        hits = await index.search(_unit(rng), tenant_id="acme", user_id="alice", agent_id="planner", limit=10)
        assert {h.chain_id for h in hits} == {f"c{i}" for i in range(3, 8)}
    finally:
        await index.close()


def test_the_agent_filter_follows_chains_moved_to_another_agent_and_dropped() -> None:
    vectors = UserVectors(4)
    vectors.put("c1", "helper", np.array([1.0, 0.0, 0.0, 0.0]))
    vectors.put("c2", "planner", np.array([0.9, 0.1, 0.0, 0.0]))
    vectors.put("c3", "helper", np.array([0.0, 1.0, 0.0, 0.0]))
    query = np.array([1.0, 0.0, 0.0, 0.0])
    assert [c for c, _ in vectors.top(query, agent_id="helper", limit=5)] == ["c1", "c3"]

    vectors.put("c1", "planner", np.array([1.0, 0.0, 0.0, 0.0]))
    vectors.drop({"c3"})

    assert vectors.top(query, agent_id="helper", limit=5) == []
    assert [c for c, _ in vectors.top(query, agent_id="planner", limit=5)] == ["c1", "c2"]
    assert vectors.top(query, agent_id="nobody", limit=5) == []
    assert [c for c, _ in vectors.top(query, agent_id=None, limit=1)] == ["c1"]


def test_the_search_cache_drops_least_recently_searched_users_past_its_bound() -> None:
    from athena_formation.store.user_vectors import UserVectorCache

    rng = np.random.default_rng(7)
    cache = UserVectorCache(DIM, max_chains=5)
    cache.load(("t", "old"), [(f"o{i}", "a", rng.normal(size=DIM)) for i in range(3)])
    cache.load(("t", "recent"), [(f"r{i}", "a", rng.normal(size=DIM)) for i in range(2)])
    assert cache.get(("t", "old")) is not None  # now the most recently searched
    cache.load(("t", "new"), [("n0", "a", rng.normal(size=DIM))])
    assert cache.cached_chains <= 5
    assert cache.get(("t", "recent")) is None
    assert cache.get(("t", "old")) is not None and cache.get(("t", "new")) is not None
    # A dropped user's chains are forgotten with it: a later delete of them touches nothing.
    cache.drop(["r0"])
    assert cache.cached_chains == 4


async def test_a_search_that_gives_up_leaves_the_users_load_running_for_the_next_search(tmp_path: Path) -> None:
    import asyncio

    import pytest

    rng = np.random.default_rng(11)
    rows = {f"c{i}": ("alice", "helper" if i % 2 else "other", _unit(rng)) for i in range(10)}
    index = await _index_with(tmp_path, rows)
    loads = 0
    load_from_milvus = index._load_user

    async def slow_load(tenant_id: str, user_id: str):  # type: ignore[no-untyped-def]
        nonlocal loads
        loads += 1
        await asyncio.sleep(0.5)  # a user too large to load within the first caller's deadline
        return await load_from_milvus(tenant_id, user_id)

    index._load_user = slow_load  # type: ignore[method-assign]
    try:
        query = _unit(rng)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(index.search(query, tenant_id="acme", user_id="alice", limit=3), timeout=0.05)
        hits = await index.search(query, tenant_id="acme", user_id="alice", agent_id="helper", limit=3)

        assert loads == 1
        helper_rows = {c: v for c, (_, a, v) in rows.items() if a == "helper"}
        assert [h.chain_id for h in hits] == sorted(helper_rows, key=lambda c: -float(helper_rows[c] @ query))[:3]
    finally:
        await index.close()


async def test_the_milvus_lite_client_sends_no_idle_keepalive_pings(tmp_path: Path) -> None:
    # Milvus Lite's server answers pymilvus's default idle pings (every 10 s) with GOAWAY
    # "too_many_pings" after ~2 idle minutes, an error line in formation's log each time (reproduced
    # by an index left idle for 130 s; none in 200 s with these options). The options must reach the
    # channel pymilvus actually opens.
    index = await _index_with(tmp_path, {})
    try:
        await index.open()
        handler = index._connect()._get_connection()
        options = dict(handler._grpc_options)
        assert options["grpc.keepalive_permit_without_calls"] is False
        assert options["grpc.keepalive_time_ms"] >= 5 * 60 * 1000  # at least the server's minimum interval
        assert await index.search(_unit(np.random.default_rng(1)), tenant_id="acme", user_id="alice", limit=3) == []
    finally:
        await index.close()
