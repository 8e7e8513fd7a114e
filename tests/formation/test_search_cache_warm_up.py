"""VectorIndex.warm on Milvus Lite: every user's vectors read once at start, so that no user's first
search reads from Milvus, and nothing written while it reads is lost or undone."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from athena_formation.store.vector_index import VectorIndex

DIM = 8


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


async def _written(path: Path, rows: dict[str, tuple[str, np.ndarray]]) -> None:
    """The rows upserted by one formation (chain id -> user, vector), which then stops."""
    writer = VectorIndex(str(path), collection="warm_test", dim=DIM)
    try:
        for chain_id, (user, vec) in rows.items():
            await writer.upsert(chain_id=chain_id, tenant_id="acme", user_id=user, agent_id="helper", embedding=vec)
        await writer.flush()
    finally:
        await writer.close()


def _top(rows: dict[str, tuple[str, np.ndarray]], user: str, query: np.ndarray, k: int) -> list[str]:
    mine = {c: v for c, (u, v) in rows.items() if u == user}
    return sorted(mine, key=lambda c: -float(mine[c] @ query))[:k]


def _refuse_milvus_reads(index: VectorIndex) -> None:
    async def read_from_milvus(tenant_id: str, user_id: str):  # type: ignore[no-untyped-def]
        raise AssertionError(f"{tenant_id}/{user_id} was read from Milvus on its first search")

    index._load_user = read_from_milvus  # type: ignore[method-assign]


async def test_after_the_warm_up_no_users_first_search_reads_from_milvus(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows = {f"c{i}": (f"user{i % 4}", _unit(rng)) for i in range(40)}
    await _written(tmp_path / "milvus.db", rows)
    index = VectorIndex(str(tmp_path / "milvus.db"), collection="warm_test", dim=DIM)  # a formation that just started
    try:
        assert await index.warm(page_rows=7) == 40
        _refuse_milvus_reads(index)
        for user in ("user0", "user1", "user2", "user3"):
            query = _unit(rng)
            hits = await index.search(query, tenant_id="acme", user_id=user, limit=5)
            assert [h.chain_id for h in hits] == _top(rows, user, query, 5)
    finally:
        await index.close()


async def test_writes_made_while_it_reads_are_neither_lost_nor_undone(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    rows = {f"c{i:02d}": (("alice", "bob", "carol")[i % 3], _unit(rng)) for i in range(60)}
    await _written(tmp_path / "milvus.db", rows)
    index = VectorIndex(str(tmp_path / "milvus.db"), collection="warm_test", dim=DIM)
    query = _unit(rng)
    wrote: list[int] = []

    async def write_midway(read: int) -> None:
        # After the first pages (chain ids are read in order): a new best chain for alice, whose id sorts
        # before every page still to come, and bob's c01, already read, erased.
        if read == 6:
            await index.upsert(chain_id="a-new", tenant_id="acme", user_id="alice", agent_id="helper", embedding=query)
            await index.delete(["c01"])
            wrote.append(read)

    try:
        await index.warm(page_rows=2, on_page=write_midway)
        assert wrote == [6]

        alice = await index.search(query, tenant_id="acme", user_id="alice", limit=3)
        assert alice[0].chain_id == "a-new"
        bob = await index.search(query, tenant_id="acme", user_id="bob", limit=30)
        assert "c01" not in {h.chain_id for h in bob} and len(bob) == 19
        _refuse_milvus_reads(index)  # carol, untouched, was installed by the warm-up
        carol = await index.search(query, tenant_id="acme", user_id="carol", limit=3)
        assert [h.chain_id for h in carol] == _top(rows, "carol", query, 3)
    finally:
        await index.close()


async def test_past_the_cache_bound_it_installs_nothing_and_users_still_load_on_their_first_search(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(13)
    rows = {f"c{i}": (f"user{i % 3}", _unit(rng)) for i in range(30)}
    await _written(tmp_path / "milvus.db", rows)
    index = VectorIndex(str(tmp_path / "milvus.db"), collection="warm_test", dim=DIM, cache_max_chains=20)
    try:
        assert await index.warm() == 0
        query = _unit(rng)
        hits = await index.search(query, tenant_id="acme", user_id="user1", limit=4)
        assert [h.chain_id for h in hits] == _top(rows, "user1", query, 4)
    finally:
        await index.close()
