"""MongoDB side of formation: `cognitive_chains`, the formation records, and the events' back-references.

`formation_outcomes` holds one record per segment (its id is the segment id): first the plan
(create / merge into X / reject, with the analysis and quality scores), then `state: done`. That
record is what makes FormChain idempotent and resumable: a retried call returns the recorded outcome,
and a call that died half-way carries out the same plan again. Rejections stay there with their
scores and reason, so an operator can see why a segment was not remembered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pymongo
from pymongo import ASCENDING, DESCENDING, AsyncMongoClient, ReturnDocument, UpdateOne
from pymongo.errors import DuplicateKeyError

from athena.collection_names import CHAINS, OUTCOMES
from athena.stores import EventLog, mongo_unavailable
from athena_formation.store.chain_cache import ChainDocCache
from athena_formation.store.lexical_index import LexiconRow, row_from_doc

__all__ = ["SEARCH_SKIPS", "ChainStore", "agent_query", "cutoff", "epoch", "from_epoch"]

_FULL_READ_SECONDS = 600.0
_SPAN = {"first_event_at": 1, "last_event_at": 1}
"""The chain's time span, read with its lexicon (the dates a search names, query_period.py)."""
_LEXICON_EXTRAS = {**_SPAN, "profile_facts": 1, "moment_facts": 1}
"""Read with a chain's lexicon besides it: its span and its told facts' sentences (search/fact_evidence.py)."""
SEARCH_SKIPS = ("lexicon",)
"""Fields of a chain document a search does not read (the lexical index holds the lexicon)."""


class ChainStore:
    def __init__(
        self, client: AsyncMongoClient[dict[str, Any]], database: str, *, search_cache: ChainDocCache | None = None
    ) -> None:
        self.search_cache = search_cache
        """Documents as searches read them (chain_cache.py); every chain write here drops its chain from it."""
        db = client[database]
        self.chains = db[CHAINS]
        self.outcomes = db[OUTCOMES]
        self.event_log = EventLog(client, database)
        """The event log (athena.stores), through which formation reads and marks events."""
        self._indexes_ready = False

    async def ensure_indexes(self) -> None:
        if self._indexes_ready:
            return
        with mongo_unavailable():
            await self.chains.create_index(
                [
                    ("tenant_id", ASCENDING),
                    ("user_id", ASCENDING),
                    ("agent_id", ASCENDING),
                    ("status", ASCENDING),
                    ("last_event_at", DESCENDING),
                ],
                name="ix_scope_status_recent",
            )
            await self.chains.create_index(
                [("status", ASCENDING), ("last_accessed_at", ASCENDING)], name="ix_status_access"
            )
            await self.chains.create_index(
                [("tenant_id", ASCENDING), ("user_id", ASCENDING), ("updated_at", ASCENDING)], name="ix_user_updated"
            )
            await self.chains.create_index(
                [
                    ("tenant_id", ASCENDING),
                    ("user_id", ASCENDING),
                    ("lasting_fact", ASCENDING),
                    ("last_event_at", DESCENDING),
                ],
                name="ix_user_facts_recent",
            )
            await self.outcomes.create_index(
                [("tenant_id", ASCENDING), ("user_id", ASCENDING), ("outcome", ASCENDING)], name="ix_scope_outcome"
            )
        self._indexes_ready = True

    # --- formation records -----------------------------------------------------------------------
    async def outcome(self, segment_id: str) -> dict[str, Any] | None:
        with mongo_unavailable():
            return await self.outcomes.find_one({"_id": segment_id})

    async def record_plan(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Insert the plan; if another call recorded one first, return that one instead."""
        await self.ensure_indexes()
        with mongo_unavailable():
            try:
                await self.outcomes.insert_one(dict(record))
                return dict(record)
            except DuplicateKeyError:
                existing = await self.outcomes.find_one({"_id": record["_id"]})
                assert existing is not None
                return existing

    async def finish(self, segment_id: str, updates: Mapping[str, Any]) -> None:
        with mongo_unavailable():
            await self.outcomes.update_one({"_id": segment_id}, {"$set": {"state": "done", **updates}})

    # --- chains ----------------------------------------------------------------------------------
    async def get(self, chain_id: str) -> dict[str, Any] | None:
        with mongo_unavailable():
            return await self.chains.find_one({"_id": chain_id})

    async def get_many(self, chain_ids: Sequence[str], *, without: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
        """The chains with these ids, by id; `without` names fields not to read."""
        if not chain_ids:
            return {}
        projection = {f: 0 for f in without} or None
        with mongo_unavailable():
            return {d["_id"]: d async for d in self.chains.find({"_id": {"$in": list(chain_ids)}}, projection)}

    def cached_for_search(self, chain_ids: Sequence[str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """(the chains the search cache holds, the ids a search would read from MongoDB)."""
        if self.search_cache is None:
            return {}, list(chain_ids)
        return self.search_cache.lookup(chain_ids)

    async def get_for_search(self, chain_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The chains a search answers with (no lexicon), from the search cache where it has them."""
        cache = self.search_cache
        if cache is None:
            return await self.get_many(chain_ids, without=SEARCH_SKIPS)
        found, missing = cache.lookup(chain_ids)
        if missing:
            stamp = cache.begin_read()
            read: dict[str, dict[str, Any]] = {}
            try:
                read = await self.get_many(missing, without=SEARCH_SKIPS)
            finally:
                cache.end_read(stamp, read.values())
            found.update(read)
        return found

    @contextmanager
    def _writing(self, chain_ids: Sequence[str]) -> Iterator[None]:
        """Around a write of these chains: they leave the search cache once it is done (or failed,
        since it may have landed), so no read from before it is kept (chain_cache.py)."""
        try:
            yield
        finally:
            self.forget_cached(chain_ids)

    def forget_cached(self, chain_ids: Sequence[str]) -> None:
        """These chains were written (here, or deleted by erasure): searches read them again."""
        if self.search_cache is not None:
            self.search_cache.drop(chain_ids)

    async def insert_new(self, doc: Mapping[str, Any]) -> None:
        """Insert a new chain; a retry that finds it already there leaves it as it is."""
        with self._writing([doc["_id"]]), mongo_unavailable():
            await self.chains.update_one({"_id": doc["_id"]}, {"$setOnInsert": dict(doc)}, upsert=True)

    async def apply_merge(
        self, chain: Mapping[str, Any], segment_id: str, updates: Mapping[str, Any], event_ids: Sequence[str]
    ) -> bool:
        """Fold a segment into a chain once. The lists are rebuilt here and the write is guarded by the
        chain's version (array operators differ between MongoDB and the MongoDB-wire server)."""
        if segment_id in chain.get("segment_ids", []):
            return False
        held = set(chain.get("event_ids", []))
        event_ids = [e for e in event_ids if e not in held]  # a segment re-formed after an erasure may repeat some
        fields = {
            **updates,
            "event_ids": [*chain.get("event_ids", []), *event_ids],
            "segment_ids": [*chain.get("segment_ids", []), segment_id],
            "merge_count": int(chain.get("merge_count", 0)) + 1,
            "event_count": int(chain.get("event_count", 0)) + len(event_ids),
            "version": int(chain.get("version", 0)) + 1,
        }
        with self._writing([chain["_id"]]), mongo_unavailable():
            result = await self.chains.update_one(
                {"_id": chain["_id"], "version": int(chain.get("version", 0))}, {"$set": fields}
            )
        return result.modified_count == 1

    async def rewrite(self, chain: Mapping[str, Any], fields: Mapping[str, Any]) -> bool:
        """Set fields of a chain as it was read (guarded by its version, which this bumps). False when
        the chain changed or went since."""
        version = int(chain.get("version", 0))
        with self._writing([chain["_id"]]), mongo_unavailable():
            result = await self.chains.update_one(
                {"_id": chain["_id"], "version": version}, {"$set": {**fields, "version": version + 1}}
            )
        return result.modified_count == 1

    async def delete_chain(self, chain: Mapping[str, Any]) -> bool:
        """Delete a chain as it was read (guarded by its version). False when it changed or went since."""
        with self._writing([chain["_id"]]), mongo_unavailable():
            result = await self.chains.delete_one({"_id": chain["_id"], "version": int(chain.get("version", 0))})
        return result.deleted_count == 1

    async def set_fields(self, chain_id: str, fields: Mapping[str, Any]) -> dict[str, Any] | None:
        with self._writing([chain_id]), mongo_unavailable():
            return await self.chains.find_one_and_update(
                {"_id": chain_id}, {"$set": dict(fields)}, return_document=ReturnDocument.AFTER
            )

    async def record_recalls(self, recalls: Sequence[tuple[str, int, Mapping[str, Any]]]) -> None:
        """Recalls of chains, each (chain id, how many, the warmed fields): one round trip for all of
        them. An archived chain is left as it is (its lifecycle stays archived)."""
        if not recalls:
            return
        ops = [
            UpdateOne({"_id": c, "status": "active"}, {"$set": dict(fields), "$inc": {"recall_count": n}})
            for c, n, fields in recalls
        ]
        try:
            with mongo_unavailable():
                await self.chains.bulk_write(ops, ordered=False)
        except BaseException:
            self.forget_cached([c for c, _, _ in recalls])  # it may have landed: read them again
            raise
        if self.search_cache is not None:
            for chain_id, count, fields in recalls:
                self.search_cache.add_recalls(chain_id, count, fields)

    async def merge_candidates(
        self, *, tenant_id: str, user_id: str, agent_id: str | None, since: datetime, limit: int
    ) -> list[dict[str, Any]]:
        """The user's searchable chains active since `since`, most recent first: of every agent of the
        user, or with `agent_id` only the chains that agent's conversations are in."""
        query: dict[str, Any] = {
            "tenant_id": tenant_id,
            "user_id": user_id,
            "status": "active",
            "embedding_state": "indexed",
            "last_event_at": {"$gte": epoch(since)},
        }
        if agent_id is not None:
            query.update(agent_query(agent_id))
        with mongo_unavailable():
            cursor = self.chains.find(query).sort("last_event_at", DESCENDING).limit(limit)
            return [d async for d in cursor]

    async def fact_chains(
        self, *, tenant_id: str, user_id: str, agent_id: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """The user's chains that hold a lasting fact of theirs (`lasting_fact`), of any status, the
        most recently added to first (of chains whose last events were told at one time, as events
        stored in one call are, the one formed later first): of every agent of the user, or with
        `agent_id` that agent's."""
        query: dict[str, Any] = {"tenant_id": tenant_id, "user_id": user_id, "lasting_fact": True}
        if agent_id is not None:
            query.update(agent_query(agent_id))
        fields = {"profile_facts": 1, "event_ids": 1, "last_event_at": 1, "created_at": 1}
        newest = [("last_event_at", DESCENDING), ("created_at", DESCENDING), ("_id", ASCENDING)]
        with mongo_unavailable():
            cursor = self.chains.find(query, fields).sort(newest).limit(limit)
            return [d async for d in cursor]

    async def list_page(self, *, query: Mapping[str, Any], skip: int, limit: int) -> list[dict[str, Any]]:
        with mongo_unavailable():
            cursor = (
                self.chains.find(dict(query))
                .sort([("last_event_at", DESCENDING), ("_id", ASCENDING)])
                .skip(skip)
                .limit(limit)
            )
            return [d async for d in cursor]

    async def lexicon_rows(
        self, *, tenant_id: str, user_id: str, updated_since: float | None = None
    ) -> list[LexiconRow]:
        """The user's active chains as lexical index rows; with `updated_since` (epoch seconds), only the
        chains written since then, archived ones included (so the index drops them)."""
        query: dict[str, Any] = {"tenant_id": tenant_id, "user_id": user_id}
        if updated_since is None:
            query["status"] = "active"
        else:
            query["updated_at"] = {"$gte": updated_since}
        projection = {"agent_id": 1, "agent_ids": 1, "lexicon": 1, "event_count": 1, "status": 1, **_LEXICON_EXTRAS}
        # A user's first read may hold 10^5 chains: bounded as a whole, not by MONGODB_TIMEOUT_MS per
        # round trip (the MongoDB-wire server prepares a whole result before its first batch).
        with mongo_unavailable(), pymongo.timeout(_FULL_READ_SECONDS):
            return [row_from_doc(d) async for d in self.chains.find(query, projection)]

    async def all_lexicon_rows(self, *, batch_rows: int = 2000) -> AsyncIterator[tuple[tuple[str, str], LexiconRow]]:
        """Every active chain as (its (tenant_id, user_id), its lexical index row), in no set order, for
        the lexical index's warm-up: one read of the collection, however many users it holds."""
        projection = {
            "tenant_id": 1,
            "user_id": 1,
            "agent_id": 1,
            "agent_ids": 1,
            "lexicon": 1,
            "event_count": 1,
            "status": 1,
            **_LEXICON_EXTRAS,
        }
        cursor = self.chains.find({"status": "active"}, projection, batch_size=batch_rows)
        try:
            while True:
                # The bound is entered per batch, never across a yield (it would hold for the caller's
                # own reads too); the MongoDB-wire server prepares the whole result before the first.
                with mongo_unavailable(), pymongo.timeout(_FULL_READ_SECONDS):
                    batch = await cursor.to_list(batch_rows)
                if not batch:
                    return
                for d in batch:
                    yield (d.get("tenant_id", ""), d.get("user_id", "")), row_from_doc(d)
        finally:
            with mongo_unavailable():
                await cursor.close()

    async def chain_count_estimate(self) -> int:
        """The collection's document count from its metadata (archived chains included): no scan."""
        with mongo_unavailable():
            return await self.chains.estimated_document_count()

    async def cold_candidates(
        self, *, accessed_before: datetime, keep_lasting_facts: bool = True, limit: int = 500
    ) -> list[dict[str, Any]]:
        with mongo_unavailable():
            # A pinned chain is never archived (UpdateChain), nor one with a lasting fact of the user unless
            # ARCHIVE_LASTING_FACTS: left out here, so that they never crowd the others out of `limit`.
            query: dict[str, Any] = {
                "status": "active",
                "pinned": {"$ne": True},
                "last_accessed_at": {"$lt": epoch(accessed_before)},
            }
            if keep_lasting_facts:
                query["lasting_fact"] = {"$ne": True}
            cursor = self.chains.find(query).limit(limit)
            return [d async for d in cursor]

    # --- rejected segments (ListRejections, AdmitRejection) ----------------------------------------
    async def rejections(
        self, *, tenant_id: str, user_id: str, agent_id: str, skip: int, limit: int
    ) -> list[dict[str, Any]]:
        """The user's (agent's, when given) rejected segments, newest first."""
        query: dict[str, Any] = {"tenant_id": tenant_id, "user_id": user_id, "outcome": "rejected", "state": "done"}
        if agent_id:
            query["agent_id"] = agent_id
        with mongo_unavailable():
            cursor = (
                self.outcomes.find(query).sort([("created_at", DESCENDING), ("_id", ASCENDING)]).skip(skip).limit(limit)
            )
            return [d async for d in cursor]

    async def admit(self, segment_id: str, plan: Mapping[str, Any]) -> dict[str, Any] | None:
        """Turn a rejected segment's record into this plan (a chain to create), once: the record as it
        is afterwards (also when an earlier admission did it), None when there is none."""
        with mongo_unavailable():
            await self.outcomes.update_one({"_id": segment_id, "outcome": "rejected"}, {"$set": dict(plan)})
            return await self.outcomes.find_one({"_id": segment_id})

    # --- one user's records (erasure, export) -----------------------------------------------------
    async def user_records(self, tenant_id: str, user_id: str) -> list[dict[str, Any]]:
        """Every formation record of the user, whole (ExportUser), oldest first."""
        with mongo_unavailable():
            cursor = self.outcomes.find({"tenant_id": tenant_id, "user_id": user_id}).sort(
                [("created_at", ASCENDING), ("_id", ASCENDING)]
            )
            return [d async for d in cursor]

    async def user_chains(self, tenant_id: str, user_id: str) -> list[dict[str, Any]]:
        """The user's chains (all agents, any status), without their lexicons."""
        with mongo_unavailable():
            return [d async for d in self.chains.find({"tenant_id": tenant_id, "user_id": user_id}, {"lexicon": 0})]

    async def user_outcomes(self, tenant_id: str, user_id: str) -> list[dict[str, Any]]:
        projection = {"event_ids": 1, "state": 1, "chain_id": 1}
        with mongo_unavailable():
            return [d async for d in self.outcomes.find({"tenant_id": tenant_id, "user_id": user_id}, projection)]

    async def delete_outcomes(self, segment_ids: Sequence[str]) -> int:
        if not segment_ids:
            return 0
        with mongo_unavailable():
            return int((await self.outcomes.delete_many({"_id": {"$in": list(segment_ids)}})).deleted_count)

    async def cut_outcome(self, segment_id: str, event_ids: Sequence[str]) -> None:
        """A finished record keeps only these events; its analysis (text of the others) goes."""
        with mongo_unavailable():
            await self.outcomes.update_one(
                {"_id": segment_id}, {"$set": {"event_ids": list(event_ids)}, "$unset": {"analysis": ""}}
            )


def agent_query(agent_id: str) -> dict[str, Any]:
    """The chains of an agent: those whose `agent_ids` hold it, and those written before chains had
    several agents (`agent_id` alone)."""
    return {"$or": [{"agent_ids": agent_id}, {"agent_id": agent_id}]}


def cutoff(now: datetime, hours: float) -> datetime:
    return now - timedelta(hours=hours)


def epoch(dt: datetime) -> float:
    """Times on chain and formation documents are stored as epoch seconds (float).

    Why not BSON dates: the MongoDB-wire server used locally stores a date written by `$set` as a
    string, and compares dates only to the whole second; numbers behave the same on both servers.
    """
    return dt.timestamp()


def from_epoch(value: float | int | datetime | None) -> datetime:
    if value is None:
        return datetime.fromtimestamp(0, UTC)
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromtimestamp(float(value), UTC)
