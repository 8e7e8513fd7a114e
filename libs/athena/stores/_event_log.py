"""The durable event log: the `cognitive_events` collection.

Every event is stored with `client_event_id` set (the client's id, or the server's own), under a
unique index on (tenant_id, user_id, agent_id, client_event_id): that index is what makes a repeated
StoreEvent store nothing new. `window_state` records whether the event reached the short-term window
and the queue ("pending" until the Redis step succeeded, then "applied"); see docs/architecture.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Iterable, Sequence

from pymongo import ASCENDING, AsyncMongoClient
from pymongo.errors import BulkWriteError, DuplicateKeyError

from athena.events import doc_to_event, event_to_doc
from athena.memory.v1 import memory_pb2
from athena.stores._mongo import mongo_unavailable

__all__ = ["EventLog", "InsertOutcome", "WindowState"]

EVENTS = "cognitive_events"
_DUPLICATE_KEY = 11000


class WindowState(str, Enum):
    PENDING = "pending"
    APPLIED = "applied"


@dataclass(frozen=True)
class InsertOutcome:
    event: memory_pb2.Event
    """The stored event: the new one, or the original when this was a repeat."""
    duplicate: bool
    applied: bool
    """Whether the stored event already reached the window and the queue."""


class EventLog:
    def __init__(self, client: AsyncMongoClient[dict[str, Any]], database: str) -> None:
        self.collection = client[database][EVENTS]
        self._indexes_ready = False

    async def ensure_indexes(self) -> None:
        """Create the indexes once per process; the unique one is what makes event ids idempotent."""
        if self._indexes_ready:
            return
        with mongo_unavailable():
            await self.collection.create_index(
                [("tenant_id", ASCENDING), ("user_id", ASCENDING), ("agent_id", ASCENDING), ("client_event_id", ASCENDING)],
                unique=True,
                name="ix_uniq_scope_client_event_id",
            )
            await self.collection.create_index(
                [("tenant_id", ASCENDING), ("user_id", ASCENDING), ("agent_id", ASCENDING), ("timestamp", ASCENDING)],
                name="ix_scope_timestamp",
            )
            await self.collection.create_index([("window_state", ASCENDING), ("stored_at", ASCENDING)], name="ix_window_state_stored_at")
        self._indexes_ready = True

    async def insert(self, events: Sequence[memory_pb2.Event]) -> list[InsertOutcome]:
        """Insert events (of any scopes); a repeated (scope, client_event_id) keeps the original. Results in input order."""
        if not events:
            return []
        await self.ensure_indexes()
        docs = [{**event_to_doc(e), "window_state": WindowState.PENDING.value} for e in events]
        duplicates: set[int] = set()
        with mongo_unavailable():
            try:
                if len(docs) == 1:
                    await self.collection.insert_one(docs[0])
                else:
                    await self.collection.insert_many(docs, ordered=False)
            except DuplicateKeyError:
                duplicates.add(0)
            except BulkWriteError as exc:
                for err in exc.details.get("writeErrors", []):
                    if err.get("code") != _DUPLICATE_KEY:
                        raise
                    duplicates.add(int(err["index"]))
            originals = await self._originals([events[i] for i in sorted(duplicates)])
        out = []
        for i, event in enumerate(events):
            if i in duplicates:
                doc = originals[(event.scope.tenant_id, event.scope.user_id, event.scope.agent_id, event.client_event_id)]
                out.append(InsertOutcome(doc_to_event(doc), True, doc.get("window_state") == WindowState.APPLIED.value))
            else:
                out.append(InsertOutcome(event, False, False))
        return out

    async def _originals(self, events: Sequence[memory_pb2.Event]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
        """The stored originals of repeated events, by (tenant, user, agent, client_event_id); one query per scope."""
        by_scope: dict[tuple[str, str, str], list[str]] = {}
        for e in events:
            by_scope.setdefault((e.scope.tenant_id, e.scope.user_id, e.scope.agent_id), []).append(e.client_event_id)
        found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        for (tenant, user, agent), ids in by_scope.items():
            cursor = self.collection.find({"tenant_id": tenant, "user_id": user, "agent_id": agent, "client_event_id": {"$in": ids}})
            async for d in cursor:
                found[(tenant, user, agent, d["client_event_id"])] = d
        return found

    async def mark_applied(self, event_ids: Iterable[str]) -> None:
        ids = list(event_ids)
        if not ids:
            return
        with mongo_unavailable():
            await self.collection.update_many({"_id": {"$in": ids}}, {"$set": {"window_state": WindowState.APPLIED.value}})

    async def delete(self, event_ids: Iterable[str]) -> int:
        ids = list(event_ids)
        if not ids:
            return 0
        with mongo_unavailable():
            return int((await self.collection.delete_many({"_id": {"$in": ids}})).deleted_count)

    async def pending(self, *, older_than: datetime, limit: int = 500) -> list[memory_pb2.Event]:
        """Events whose Redis step never completed (their client gave up before a retry converged)."""
        with mongo_unavailable():
            cursor = (
                self.collection.find({"window_state": WindowState.PENDING.value, "stored_at": {"$lt": older_than}})
                .sort("stored_at", ASCENDING)
                .limit(limit)
            )
            return [doc_to_event(d) async for d in cursor]

    async def get(self, event_id: str) -> memory_pb2.Event | None:
        with mongo_unavailable():
            doc = await self.collection.find_one({"_id": event_id})
        return doc_to_event(doc) if doc else None

    async def count(self, query: dict[str, Any]) -> int:
        with mongo_unavailable():
            return int(await self.collection.count_documents(query))
