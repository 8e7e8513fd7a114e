"""Opening the chains' Milvus collection: a collection left without its index (a first start that died
between creating the collection and its index) gets the index at the next start and serves searches."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from pymilvus import DataType, MilvusClient

from athena_formation.store.vector_index import LITE_GRPC_OPTIONS, VectorIndex

DIM = 8


def _collection_without_index(path: str) -> None:
    client = MilvusClient(path, grpc_options=LITE_GRPC_OPTIONS)
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("chain_id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("tenant_id", DataType.VARCHAR, max_length=128, is_partition_key=True)
    schema.add_field("user_id", DataType.VARCHAR, max_length=128)
    schema.add_field("agent_id", DataType.VARCHAR, max_length=128)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=DIM)
    client.create_collection("chains", schema=schema)
    assert client.list_indexes("chains") == []
    client.close()


async def test_a_collection_left_without_its_index_gets_it_at_the_next_start(tmp_path: Path) -> None:
    path = str(tmp_path / "milvus.db")
    await asyncio.to_thread(_collection_without_index, path)
    index = VectorIndex(path, collection="chains", dim=DIM)
    await index.open()
    try:
        vector = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
        await index.upsert(chain_id="ch_1", tenant_id="acme", user_id="alice", agent_id="a", embedding=vector)
        hits = await index.search(vector, tenant_id="acme", user_id="alice", limit=1)
        assert [h.chain_id for h in hits] == ["ch_1"]
        assert await index._run(lambda c: c.list_indexes("chains")) != []
    finally:
        await index.close()
