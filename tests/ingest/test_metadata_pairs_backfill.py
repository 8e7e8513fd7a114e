"""The one-time backfill of `metadata_pairs` on events stored before the field existed, against the
real MongoDB-wire server: afterwards metadata filters (formation's events_with_metadata) find them."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from athena.config import load_settings
from athena.events import METADATA_PAIRS, event_to_doc, metadata_pairs, to_timestamp
from athena.local import MongoWireServer, RedisServer, free_port
from athena.stores import EventLog
from athena_cli.stack import StackCredentials
from athena_client.memory.v1 import memory_pb2
from athena_formation.store.chain_store import ChainStore
from athena_ingest.server import build_ingest

LEGACY_METADATA = {
    "ev_legacy_1": {"ключ": "значение", 'q"k': "v\\w"},
    "ev_legacy_2": {"br[0]": "y", "a'b": "x"},
    "ev_legacy_empty": {},
}


def _legacy_doc(event_id: str, metadata: dict[str, str], *, user: str = "alice") -> dict[str, Any]:
    """An event document as ingest wrote it before `metadata_pairs` existed, chained by formation."""
    now = to_timestamp(datetime.now(UTC))
    event = memory_pb2.Event(
        id=event_id,
        scope=memory_pb2.Scope(tenant_id="acme", user_id=user, agent_id="helper"),
        role=memory_pb2.ROLE_USER,
        type=memory_pb2.EVENT_TYPE_MESSAGE,
        content="an event from before",
        metadata=metadata,
        timestamp=now,
        stored_at=now,
        client_event_id=event_id,
    )
    doc = event_to_doc(event)
    del doc[METADATA_PAIRS]
    return {**doc, "commit_id": "cm_legacy", "chain_id": f"ch_{event_id}"}


async def _seed_legacy(client: AsyncMongoClient, database: str) -> None:  # type: ignore[type-arg]
    docs = [_legacy_doc(i, md) for i, md in LEGACY_METADATA.items()]
    await client[database]["cognitive_events"].insert_many(docs)


async def _chains_with(store: ChainStore, filters: dict[str, str]) -> set[str]:
    return await store.event_log.chains_with_metadata(tenant_id="acme", user_id="alice", filters=filters)


async def test_the_backfill_makes_legacy_events_findable_by_their_metadata_and_records_itself_done(
    mongo, mongo_db_name: str
) -> None:
    await _seed_legacy(mongo, mongo_db_name)
    log, store = EventLog(mongo, mongo_db_name), ChainStore(mongo, mongo_db_name)
    await log.ensure_indexes()  # as in production: the filter's index is there
    assert await _chains_with(store, {"ключ": "значение"}) == set()  # no metadata_pairs yet: not found

    assert await log.backfill_metadata_pairs(batch=1) == 2  # batches of one: every batch boundary crossed

    assert await _chains_with(store, {"ключ": "значение"}) == {"ch_ev_legacy_1"}
    assert await _chains_with(store, {'q"k': "v\\w", "ключ": "значение"}) == {"ch_ev_legacy_1"}
    assert await _chains_with(store, {"br[0]": "y", "a'b": "x"}) == {"ch_ev_legacy_2"}
    assert (
        await _chains_with(store, {"ключ": "значение", "a'b": "x"}) == set()
    )  # the pairs of two events, none has both
    docs = {d["_id"]: d async for d in log.collection.find({})}
    assert docs["ev_legacy_1"][METADATA_PAIRS] == metadata_pairs(LEGACY_METADATA["ev_legacy_1"])
    assert METADATA_PAIRS not in docs["ev_legacy_empty"]  # nothing to match: left as it was
    assert docs["ev_legacy_1"]["metadata"] == LEGACY_METADATA["ev_legacy_1"]  # what events are read back from

    assert not await log.metadata_pairs_backfilled()  # a pass that filled events is not the last one
    assert await log.backfill_metadata_pairs() == 0  # the next finds nothing left, and says so
    assert await log.metadata_pairs_backfilled()
    assert await log.backfill_metadata_pairs() is None  # later starts skip the scan


async def test_events_stored_now_carry_metadata_pairs_and_need_no_backfill(mongo, mongo_db_name: str) -> None:
    log = EventLog(mongo, mongo_db_name)
    event = memory_pb2.Event(
        id="ev_new",
        scope=memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="helper"),
        role=memory_pb2.ROLE_USER,
        type=memory_pb2.EVENT_TYPE_MESSAGE,
        content="a new event",
        metadata={"ключ": "значение"},
        timestamp=to_timestamp(datetime.now(UTC)),
        stored_at=to_timestamp(datetime.now(UTC)),
        client_event_id="ev_new",
    )
    await log.insert([event], commit_id="cm_new")
    (doc,) = [d async for d in log.collection.find({"_id": "ev_new"})]
    assert doc[METADATA_PAIRS] == ['["ключ","значение"]']
    assert await log.backfill_metadata_pairs() == 0 and await log.metadata_pairs_backfilled()


async def test_ingest_retries_a_failed_backfill_in_the_background_until_it_is_done(
    own_mongo_server: MongoWireServer, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    credentials = StackCredentials()
    settings = load_settings(
        redis_url=redis_server.url,
        mongodb_uri=own_mongo_server.url,
        ingest_grpc_port=free_port(),
        grpc_bind_host="127.0.0.1",
        mongodb_timeout_ms=500,
        **credentials.settings_overrides(),
    )
    database = settings.mongodb_database
    seeder: AsyncMongoClient = AsyncMongoClient(own_mongo_server.url, serverSelectionTimeoutMS=5000)  # type: ignore[type-arg]
    await _seed_legacy(seeder, database)
    host, ingestor = await build_ingest(settings)
    await host.start()
    own_mongo_server.stop()
    caplog.set_level(logging.WARNING, logger="athena.ingest")
    backfill = asyncio.create_task(ingestor.backfill_metadata_pairs_forever(interval=0.2))
    try:
        for _ in range(100):
            if "metadata_pairs backfill failed" in caplog.text:
                break
            await asyncio.sleep(0.1)
        assert "metadata_pairs backfill failed" in caplog.text and not backfill.done()  # logged, still trying

        own_mongo_server.start()
        await asyncio.wait_for(backfill, timeout=60)  # filled on one pass, recorded done on the next
        assert await ingestor.event_log.metadata_pairs_backfilled()
        assert await _chains_with(ChainStore(seeder, database), {"a'b": "x"}) == {"ch_ev_legacy_2"}
    finally:
        backfill.cancel()
        await host.shutdown()
        await seeder.close()
