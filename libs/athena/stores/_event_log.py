"""The durable event log: the `cognitive_events` collection, and the open group commits.

Every event is stored with `client_event_id` set (the client's id, or the server's own), under a
unique index on (tenant_id, user_id, agent_id, client_event_id): that index is what makes a repeated
StoreEvent store nothing new.

Whether an event reached the short-term window and the queue is recorded per group commit, not per
event: before ingest inserts a batch of events it records the commit (`ingest_commits`: its id, the
event ids, when), each event carries its `commit_id`, and once the batch's Redis step succeeded the
commit record is deleted. An open commit record older than a few seconds is therefore a batch whose
Redis step may never have completed: the repair loop applies its events (idempotently) and closes
it. One small insert and one delete per batch instead of rewriting every event to mark it applied:
half the MongoDB work per stored event (docs/benchmarks.md).

Each event also carries `metadata_pairs` (athena.events.metadata_pair), what metadata filters match by
value. Events stored before that field existed get it from a one-time backfill
(`backfill_metadata_pairs`), which ingest runs in the background at start-up until a pass finds
nothing left to fill and records that in `athena_migrations`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pymongo
from pymongo import ASCENDING, AsyncMongoClient, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from athena.collection_names import COMMITS, EVENTS, MIGRATIONS
from athena.errors import DependencyUnavailable
from athena.events import METADATA_PAIRS, doc_to_event, event_to_doc, metadata_pair, metadata_pairs
from athena.stores._mongo import insert_own, mongo_unavailable
from athena_client.memory.v1 import memory_pb2

__all__ = ["EventLog", "InsertOutcome", "OpenCommit", "metadata_filter_query"]

"""One record per one-time data migration that completed (its `_id` names it)."""
_METADATA_PAIRS_DONE = "metadata_pairs_backfill"
_BACKFILL_BATCH = 500
_BACKFILL_READ_SECONDS = 600.0
"""Bound of one batch's read: the MongoDB-wire server prepares a whole result before its first batch."""
_DUPLICATE_KEY = 11000
_DELETE_BATCH = 500


@dataclass(frozen=True)
class OpenCommit:
    commit_id: str
    events: list[memory_pb2.Event]
    """Those of its events still in the log (a forgotten user's are gone)."""


@dataclass(frozen=True)
class InsertOutcome:
    event: memory_pb2.Event
    """The stored event: the new one, or the original when this was a repeat."""
    duplicate: bool
    applied: bool
    """Whether the stored event already reached the window and the queue."""
    commit_id: str = ""
    """The group commit this insert ran in (the same for every outcome of one insert)."""


class EventLog:
    def __init__(self, client: AsyncMongoClient[dict[str, Any]], database: str) -> None:
        self.collection = client[database][EVENTS]
        self.commits = client[database][COMMITS]
        self.migrations = client[database][MIGRATIONS]
        self._indexes_ready = False

    async def ensure_indexes(self) -> None:
        """Create the indexes once per process; the unique one is what makes event ids idempotent."""
        if self._indexes_ready:
            return
        with mongo_unavailable():
            await self.collection.create_index(
                [
                    ("tenant_id", ASCENDING),
                    ("user_id", ASCENDING),
                    ("agent_id", ASCENDING),
                    ("client_event_id", ASCENDING),
                ],
                unique=True,
                name="ix_uniq_scope_client_event_id",
            )
            await self.collection.create_index(
                [("tenant_id", ASCENDING), ("user_id", ASCENDING), ("agent_id", ASCENDING), ("timestamp", ASCENDING)],
                name="ix_scope_timestamp",
            )
            await self.commits.create_index([("created_at", ASCENDING)], name="ix_created_at")
            # Metadata filters (formation's events_with_metadata): multikey on MongoDB, so a filter reads
            # only the user's events holding the first pair instead of all the user's events.
            await self.collection.create_index(
                [("tenant_id", ASCENDING), ("user_id", ASCENDING), (METADATA_PAIRS, ASCENDING)],
                name="ix_user_metadata_pairs",
            )
        self._indexes_ready = True

    async def insert(self, events: Sequence[memory_pb2.Event], *, commit_id: str) -> list[InsertOutcome]:
        """Record the commit, then insert its events (of any scopes); a repeated (scope,
        client_event_id) keeps the original. Results in input order."""
        if not events:
            return []
        await self.ensure_indexes()
        docs = [{**event_to_doc(e), "commit_id": commit_id} for e in events]
        duplicates: set[int] = set()
        with mongo_unavailable():
            await insert_own(
                self.commits, {"_id": commit_id, "event_ids": [e.id for e in events], "created_at": time.time()}
            )
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
            still_open = await self._open_ids({d["commit_id"] for d in originals.values() if d.get("commit_id")})
        out = []
        for i, event in enumerate(events):
            if i not in duplicates:
                out.append(InsertOutcome(event, False, False, commit_id))
                continue
            doc = originals.get(
                (event.scope.tenant_id, event.scope.user_id, event.scope.agent_id, event.client_event_id)
            )
            if doc is None:
                # The original was deleted (its user erased) between the insert and this read: nothing of
                # this event is stored. A retry stores it afresh under a new stored_at, after the
                # tombstone, so it is kept as the start of a new memory.
                raise DependencyUnavailable("mongodb", "a repeated event's original disappeared while it was read")
            if doc["_id"] == event.id:
                # This very insert, landed by an attempt whose reply was lost and re-sent by the driver's
                # retryable write (reported as a duplicate where the server cannot tell, as nx-27017).
                out.append(InsertOutcome(event, False, False, commit_id))
                continue
            out.append(InsertOutcome(doc_to_event(doc), True, doc.get("commit_id") not in still_open, commit_id))
        return out

    async def _open_ids(self, commit_ids: set[str]) -> set[str]:
        if not commit_ids:
            return set()
        return {d["_id"] async for d in self.commits.find({"_id": {"$in": sorted(commit_ids)}}, {"_id": 1})}

    async def _originals(self, events: Sequence[memory_pb2.Event]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
        """The stored originals of repeated events, by (tenant, user, agent, client_event_id); one query per scope."""
        by_scope: dict[tuple[str, str, str], list[str]] = {}
        for e in events:
            by_scope.setdefault((e.scope.tenant_id, e.scope.user_id, e.scope.agent_id), []).append(e.client_event_id)
        found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        for (tenant, user, agent), ids in by_scope.items():
            cursor = self.collection.find(
                {"tenant_id": tenant, "user_id": user, "agent_id": agent, "client_event_id": {"$in": ids}}
            )
            async for d in cursor:
                found[(tenant, user, agent, d["client_event_id"])] = d
        return found

    async def close_commits(self, commit_ids: Iterable[str]) -> None:
        """These commits' Redis steps succeeded."""
        ids = list(commit_ids)
        if not ids:
            return
        with mongo_unavailable():
            await self.commits.delete_many({"_id": {"$in": ids}})

    async def delete(self, event_ids: Iterable[str]) -> int:
        ids = list(event_ids)
        deleted = 0
        with mongo_unavailable():
            for i in range(0, len(ids), _DELETE_BATCH):
                deleted += int(
                    (await self.collection.delete_many({"_id": {"$in": ids[i : i + _DELETE_BATCH]}})).deleted_count
                )
        return deleted

    async def user_event_ids(self, tenant_id: str, user_id: str, *, stored: Callable[[datetime], bool]) -> list[str]:
        """Ids of the user's events (all agents) whose `stored_at` satisfies `stored`. The test runs
        here, not in the query: the MongoDB-wire server compares dates to the whole second only."""
        with mongo_unavailable():
            cursor = self.collection.find({"tenant_id": tenant_id, "user_id": user_id}, {"stored_at": 1})
            return [d["_id"] async for d in cursor if stored(d["stored_at"])]

    async def open_commits(self, *, older_than: float, limit: int = 50) -> list[OpenCommit]:
        """Commits recorded before `older_than` (epoch seconds) and still open, oldest first, with their events."""
        with mongo_unavailable():
            records = [
                d
                async for d in self.commits.find({"created_at": {"$lt": older_than}})
                .sort("created_at", ASCENDING)
                .limit(limit)
            ]
            out = []
            for record in records:
                ids = list(record.get("event_ids", []))
                docs = {d["_id"]: d async for d in self.collection.find({"_id": {"$in": ids}})} if ids else {}
                out.append(OpenCommit(record["_id"], [doc_to_event(docs[i]) for i in ids if i in docs]))
            return out

    async def metadata_pairs_backfilled(self) -> bool:
        """Whether a backfill pass found every event with metadata already carrying `metadata_pairs`."""
        with mongo_unavailable():
            return await self.migrations.find_one({"_id": _METADATA_PAIRS_DONE}) is not None

    async def backfill_metadata_pairs(self, *, batch: int = _BACKFILL_BATCH) -> int | None:
        """One pass giving every event without `metadata_pairs` (stored before the field existed) the
        field, from its `metadata`, `batch` events per write. Idempotent: the field is a function of
        the metadata, so concurrent passes (several ingest replicas) write the same value.

        Returns how many events it filled, or None when an earlier pass recorded the backfill done.
        A pass that finds nothing to fill records it done, so later starts skip the scan; a pass that
        filled events does not, so a later pass also catches events written meanwhile by a replica
        still running the previous version (a rolling upgrade). Events without metadata are left as
        they are: no filter can match them.
        """
        if await self.metadata_pairs_backfilled():
            return None
        filled = 0
        cursor = self.collection.find({METADATA_PAIRS: {"$exists": False}}, {"metadata": 1}, batch_size=batch)
        try:
            while True:
                with mongo_unavailable(), pymongo.timeout(_BACKFILL_READ_SECONDS):
                    docs = await cursor.to_list(batch)
                if not docs:
                    break
                filled += await self._fill_metadata_pairs(docs)
        finally:
            with mongo_unavailable():
                await cursor.close()
        if filled == 0:
            with mongo_unavailable():
                await self.migrations.update_one(
                    {"_id": _METADATA_PAIRS_DONE}, {"$setOnInsert": {"done_at": time.time()}}, upsert=True
                )
        return filled

    async def _fill_metadata_pairs(self, docs: Sequence[dict[str, Any]]) -> int:
        """Set `metadata_pairs` on those of `docs` (each `_id` and `metadata`) that hold metadata."""
        ops = [
            UpdateOne({"_id": d["_id"]}, {"$set": {METADATA_PAIRS: metadata_pairs(d["metadata"])}})
            for d in docs
            if isinstance(d.get("metadata"), dict) and d["metadata"]
        ]
        if ops:
            with mongo_unavailable():
                await self.collection.bulk_write(ops, ordered=False)
        return len(ops)

    async def get(self, event_id: str) -> memory_pb2.Event | None:
        with mongo_unavailable():
            doc = await self.collection.find_one({"_id": event_id})
        return doc_to_event(doc) if doc else None

    async def count(self, query: dict[str, Any]) -> int:
        with mongo_unavailable():
            return int(await self.collection.count_documents(query))

    # --- what formation reads and marks ---------------------------------------------------------
    async def docs(self, event_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The stored documents of these events, in the order given (those no longer stored skipped)."""
        with mongo_unavailable():
            found = {d["_id"]: d async for d in self.collection.find({"_id": {"$in": list(event_ids)}})}
        return [found[i] for i in event_ids if i in found]

    async def mark(self, event_ids: Sequence[str], fields: Mapping[str, Any]) -> None:
        """Set fields on these events (formation: which chain or rejected segment took them)."""
        with mongo_unavailable():
            await self.collection.update_many({"_id": {"$in": list(event_ids)}}, {"$set": dict(fields)})

    async def unlink_chain(self, chain_id: str, event_ids: Sequence[str]) -> int:
        """These events no longer name the chain (it was deleted): `formation: chain_deleted`, so
        they are neither searched as the chain's nor formed again. Returns how many were changed."""
        with mongo_unavailable():
            result = await self.collection.update_many(
                {"_id": {"$in": list(event_ids)}, "chain_id": chain_id},
                {"$set": {"formation": "chain_deleted"}, "$unset": {"chain_id": ""}},
            )
        return int(result.modified_count)

    async def user_events(self, tenant_id: str, user_id: str, *, batch: int = 500) -> AsyncIterator[memory_pb2.Event]:
        """Every event of the user (all agents), oldest first by timestamp, read `batch` at a time."""
        cursor = self.collection.find({"tenant_id": tenant_id, "user_id": user_id}, batch_size=batch).sort(
            [("timestamp", ASCENDING), ("_id", ASCENDING)]
        )
        try:
            while True:
                with mongo_unavailable():
                    docs = await cursor.to_list(batch)
                if not docs:
                    return
                for doc in docs:
                    yield doc_to_event(doc)
        finally:
            with mongo_unavailable():
                await cursor.close()

    async def stored_times(
        self, *, event_ids: Sequence[str] = (), user: tuple[str, str] | None = None
    ) -> dict[str, datetime]:
        """`stored_at` of events by id: of these ids, or of every event of a (tenant, user)."""
        if not user and not event_ids:
            return {}
        query: dict[str, Any] = (
            {"tenant_id": user[0], "user_id": user[1]} if user else {"_id": {"$in": list(event_ids)}}
        )
        with mongo_unavailable():
            return {d["_id"]: d["stored_at"] async for d in self.collection.find(query, {"stored_at": 1})}

    async def chains_with_metadata(self, *, tenant_id: str, user_id: str, filters: Mapping[str, str]) -> set[str]:
        """Chain ids of the user's events carrying every metadata pair in `filters`."""
        query = metadata_filter_query(tenant_id=tenant_id, user_id=user_id, filters=filters)
        with mongo_unavailable():
            return {d["chain_id"] async for d in self.collection.find(query, {"chain_id": 1})}


def metadata_filter_query(*, tenant_id: str, user_id: str, filters: Mapping[str, str]) -> dict[str, Any]:
    """The `cognitive_events` query of the user's chained events carrying every pair of `filters`.

    Every field name in it is a constant: the caller's keys and values reach it only inside
    `metadata_pair` strings, compared by value with the event's `metadata_pairs`. A `metadata.<key>`
    path would hand the key to the server's query language, and nx-27017 pastes paths into SQL
    unescaped (a quote in a key was an SQL error, a crafted key an oracle on other tenants' events).
    `$all`, not an equality per pair: nx-27017 compares a plain equality on an indexed array field with
    the whole array; `$all` it turns into one `EXISTS (... json_each ... = ?)` per pair, the string bound.
    """
    query: dict[str, Any] = {"tenant_id": tenant_id, "user_id": user_id, "chain_id": {"$exists": True}}
    if filters:
        query[METADATA_PAIRS] = {"$all": [metadata_pair(k, v) for k, v in filters.items()]}
    return query
