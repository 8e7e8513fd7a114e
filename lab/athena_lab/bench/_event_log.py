"""The ingest stage's second baseline: the event log alone, as ingest's group commit writes it.

`EventLog.insert` (the commit record, then one insert_many) and `close_commits`, one batch at a time
as ingest's first group-commit stage runs them, from the bench process straight to the stack's
MongoDB: no gRPC, no Redis, no validation. Its events/s is the most StoreEvents could reach through
that server with ingest's write pattern, so StoreEvents over it says how much of the store's own
ceiling ingest uses (on nx-27017, and on a MongoDB server given by --mongodb-uri). Its events go to
scopes of their own and their commits are closed, so nothing else of the stack ever sees them.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from pymongo import AsyncMongoClient

from athena.events import to_timestamp
from athena.stores import EventLog
from athena_client.memory.v1 import memory_pb2

__all__ = ["LOG_BATCH", "event_log_round"]

LOG_BATCH = 200
"""Events per insert: what StoreEvents' group commits hold at the bench's load (two requests of 100)."""


def _events(n: int, content: str, k: int) -> list[memory_pb2.Event]:
    ts = to_timestamp(datetime.now(UTC))
    scope = memory_pb2.Scope(tenant_id="bench-log", user_id=f"log-{k % 8}", agent_id="a")
    out = []
    for _ in range(n):
        event_id = f"ev_log_{uuid.uuid4().hex}"
        out.append(
            memory_pb2.Event(
                id=event_id,
                scope=scope,
                role=memory_pb2.ROLE_USER,
                type=memory_pb2.EVENT_TYPE_MESSAGE,
                content=content,
                timestamp=ts,
                stored_at=ts,
                client_event_id=event_id,
            )
        )
    return out


async def event_log_round(mongodb_uri: str, database: str, *, batches: int, content: str) -> float:
    """`batches` inserts of LOG_BATCH events, one at a time, each closed after it. Returns events/s
    (the events are built beforehand: only the log's round trips are timed)."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_uri)
    try:
        log = EventLog(client, database)
        await log.ensure_indexes()
        prepared = [_events(LOG_BATCH, content, k) for k in range(batches)]
        t0 = time.perf_counter()
        for events in prepared:
            commit_id = f"cm_log_{uuid.uuid4().hex}"
            await log.insert(events, commit_id=commit_id)
            await log.close_commits([commit_id])
        return batches * LOG_BATCH / (time.perf_counter() - t0)
    finally:
        await client.close()
