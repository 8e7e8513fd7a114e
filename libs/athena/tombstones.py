"""The erasure tombstone: the one record of when a user was forgotten, and the one rule of what it erases.

ForgetUser writes a tombstone holding `erased_at` (epoch seconds, whole milliseconds) in two stores:
a record in the MongoDB collection `erasures` (formation's view, and the audit trail with the
receipt) and the Redis key `erasure:v1:{tenant}:{user}` (ingest's and cognition's view, read inside
ingest's Redis script). An event is erased by a tombstone when it was stored at or before
`erased_at`; events stored after it start a new memory and are kept in every store.

Both times come from ingest's clock and both are whole milliseconds (`stored_at` is truncated where
ingest assigns it), so the comparison is the same in Python, in Lua and on a BSON date.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from athena import keys
from athena.collection_names import ERASURES
from athena.stores import insert_own, mongo_unavailable

__all__ = ["MongoTombstones", "erased_at_now", "erases", "millis", "redis_tombstone", "write_redis_tombstone"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def erased_at_now() -> float:
    """A new tombstone's time: now, in epoch seconds, truncated to the millisecond."""
    return (time.time_ns() // 1_000_000) / 1000


def millis(when: Timestamp | datetime | float) -> int:
    """A time as whole epoch milliseconds (truncated), whichever form a store keeps it in."""
    if isinstance(when, Timestamp):
        return when.seconds * 1000 + when.nanos // 1_000_000
    if isinstance(when, datetime):
        aware = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        return (aware - _EPOCH) // timedelta(milliseconds=1)  # exact: no float on the way
    return round(when * 1e6) // 1000  # float seconds: to microseconds first, as they were written


def erases(erased_at: float | None, stored_at: Timestamp | datetime | float) -> bool:
    """Whether a tombstone of `erased_at` erases an event stored at `stored_at` (at or before it)."""
    return erased_at is not None and millis(stored_at) <= millis(erased_at)


async def redis_tombstone(redis: Redis, tenant_id: str, user_id: str) -> float | None:
    """The user's tombstone as Redis holds it, or None."""
    raw = await redis.get(keys.erasure_key(tenant_id, user_id))
    return float(raw) if raw else None


async def write_redis_tombstone(redis: Redis, tenant_id: str, user_id: str, erased_at: float) -> None:
    # repr: Lua's tonumber reads it back to the same double.
    await redis.set(keys.erasure_key(tenant_id, user_id), repr(erased_at), ex=keys.ERASURE_TTL_SECONDS)


class MongoTombstones:
    """The `erasures` collection."""

    def __init__(self, client: AsyncMongoClient[dict[str, Any]], database: str) -> None:
        self.collection = client[database][ERASURES]

    async def begin(self, tenant_id: str, user_id: str, erased_at: float) -> str:
        """Record a new tombstone (state erasing); returns its record id."""
        record_id = f"{tenant_id}:{user_id}:{millis(erased_at)}"
        record = {
            "_id": record_id,
            "tenant_id": tenant_id,
            "user_id": user_id,
            "erased_at": erased_at,
            "state": "erasing",
        }
        with mongo_unavailable():
            await insert_own(self.collection, record)
        return record_id

    async def finish(self, record_id: str, receipt: Mapping[str, int]) -> None:
        with mongo_unavailable():
            await self.collection.update_one(
                {"_id": record_id}, {"$set": {"state": "done", "finished_at": time.time(), "receipt": dict(receipt)}}
            )

    async def latest(self, tenant_id: str, user_id: str) -> float | None:
        """The user's latest tombstone (epoch seconds), or None."""
        with mongo_unavailable():
            docs = [
                d async for d in self.collection.find({"tenant_id": tenant_id, "user_id": user_id}, {"erased_at": 1})
            ]
        times = [float(d["erased_at"]) for d in docs if d.get("erased_at") is not None]
        return max(times) if times else None
