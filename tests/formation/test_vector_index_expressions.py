"""Strings reaching a Milvus expression (the scope filter, and the primary keys pymilvus quotes into
`chain_id in [...]` itself) are ids of the scope-id rule, or refused before Milvus sees them: on
Milvus Lite, which has no bound expression parameters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from athena_formation.store.vector_index import VectorIndex

DIM = 8
HOSTILE_IDS = [
    'acme" or tenant_id != "',
    "' or 1==1 or '",
    "c0','c1",  # one id that would have read as two
    "alice\n",  # a trailing newline passed a `$`-anchored check
    "a b",
    "ключ",
    "",
    "x" * 129,
]


@pytest.fixture
async def index(tmp_path: Path):  # type: ignore[no-untyped-def]
    index = VectorIndex(str(tmp_path / "milvus.db"), collection="expr_test", dim=DIM)
    rng = np.random.default_rng(7)
    for i, user in enumerate(["alice", "alice", "bob"]):
        await index.upsert(
            chain_id=f"c{i}",
            tenant_id="acme",
            user_id=user,
            agent_id="helper",
            embedding=rng.standard_normal(DIM).astype(np.float32),
        )
    yield index
    await index.close()


async def test_hostile_scope_ids_never_reach_a_milvus_filter(index: VectorIndex) -> None:
    query = np.ones(DIM, dtype=np.float32)
    for bad in HOSTILE_IDS:
        with pytest.raises(ValueError):
            await index.ids_of_user(tenant_id=bad, user_id="alice")
        with pytest.raises(ValueError):
            await index.ids_of_user(tenant_id="acme", user_id=bad)
        if bad:  # an empty agent id means every agent of the user
            with pytest.raises(ValueError):
                await index.search(query, tenant_id="acme", user_id="alice", agent_id=bad)
    assert await index.ids_of_user(tenant_id="acme", user_id="alice") == {"c0", "c1"}
    assert {
        h.chain_id for h in await index.search(query, tenant_id="acme", user_id="alice", agent_id="helper", limit=10)
    } == {"c0", "c1"}


async def test_hostile_chain_ids_never_reach_pymilvus_primary_key_expressions(index: VectorIndex) -> None:
    for bad in HOSTILE_IDS:
        for call in (index.existing, index.vectors, index.delete):
            with pytest.raises(ValueError):
                await call(["c0", bad])
    assert await index.existing(["c0", "c1", "c2", "c9"]) == {"c0", "c1", "c2"}  # nothing was deleted
    assert set(await index.vectors(["c2"])) == {"c2"}
