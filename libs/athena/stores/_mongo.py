"""Connecting to MongoDB through PyMongo's async API, and turning its outages into DependencyUnavailable."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from pymongo import AsyncMongoClient
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import AutoReconnect, ConnectionFailure, DuplicateKeyError, NetworkTimeout, ServerSelectionTimeoutError

from athena.config import Settings
from athena.errors import DependencyUnavailable

__all__ = ["connect_mongo", "insert_own", "mongo_unavailable"]

_OUTAGE = (AutoReconnect, ConnectionFailure, NetworkTimeout, ServerSelectionTimeoutError)


def connect_mongo(settings: Settings) -> AsyncMongoClient[dict[str, Any]]:
    t = settings.mongodb_timeout_ms
    return AsyncMongoClient(
        settings.mongodb_uri,
        serverSelectionTimeoutMS=t,
        connectTimeoutMS=t,
        socketTimeoutMS=t,
        tz_aware=True,
    )


@contextmanager
def mongo_unavailable() -> Iterator[None]:
    """Map MongoDB connection failures to DependencyUnavailable("mongodb")."""
    try:
        yield
    except _OUTAGE as exc:
        raise DependencyUnavailable("mongodb", type(exc).__name__) from exc


async def insert_own(collection: AsyncCollection[dict[str, Any]], doc: dict[str, Any]) -> None:
    """Insert a record whose `_id` only this caller makes (random or time-stamped). A duplicate key is
    then this very write, landed by an attempt whose reply was lost and re-sent by the driver's
    retryable write (a server without retryable-write support, as nx-27017, reports it as a duplicate)."""
    try:
        await collection.insert_one(doc)
    except DuplicateKeyError:
        pass
