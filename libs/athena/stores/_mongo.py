"""Connecting to MongoDB through PyMongo's async API, and turning its outages into DependencyUnavailable."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from pymongo import AsyncMongoClient
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import (
    AutoReconnect,
    BulkWriteError,
    ConnectionFailure,
    DuplicateKeyError,
    NetworkTimeout,
    OperationFailure,
    ServerSelectionTimeoutError,
)

from athena.config import Settings
from athena.errors import DependencyUnavailable

__all__ = ["connect_mongo", "insert_own", "mongo_unavailable"]

_OUTAGE = (AutoReconnect, ConnectionFailure, NetworkTimeout, ServerSelectionTimeoutError)
_TRANSIENT_LABELS = ("RetryableWriteError", "TransientTransactionError")
_TRANSIENT_CODES = frozenset(
    {
        6,  # HostUnreachable
        7,  # HostNotFound
        50,  # MaxTimeMSExpired
        89,  # NetworkTimeout
        91,  # ShutdownInProgress
        134,  # ReadConcernMajorityNotAvailableYet
        262,  # ExceededTimeLimit
        9001,  # SocketException
        11600,  # InterruptedAtShutdown
    }
)
"""Server error codes of a passing state (the retryable-writes spec's list, plus a command's time
limit): the driver retried once already, the caller may retry later. Not-primary codes arrive as
NotPrimaryError, an AutoReconnect."""


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
    """Map MongoDB connection failures, and server errors of a passing state (a failover, a shutdown,
    a time limit), to DependencyUnavailable("mongodb"): retryable, UNAVAILABLE to a client. Any other
    server error is a bug or bad data and stays what it is (INTERNAL)."""
    try:
        yield
    except _OUTAGE as exc:
        raise DependencyUnavailable("mongodb", type(exc).__name__) from exc
    except OperationFailure as exc:
        if not _is_transient(exc):
            raise
        raise DependencyUnavailable("mongodb", f"{type(exc).__name__} (code {exc.code})") from exc


def _is_transient(exc: OperationFailure) -> bool:
    """Whether a server error names a passing state rather than a wrong request (for a bulk write: one
    of its write errors does; the duplicate keys among them are the caller's to handle)."""
    if exc.timeout or any(exc.has_error_label(label) for label in _TRANSIENT_LABELS):
        return True
    if isinstance(exc, BulkWriteError):
        return any(err.get("code") in _TRANSIENT_CODES for err in (exc.details or {}).get("writeErrors", []))
    return exc.code in _TRANSIENT_CODES


async def insert_own(collection: AsyncCollection[dict[str, Any]], doc: dict[str, Any]) -> None:
    """Insert a record whose `_id` only this caller makes (random or time-stamped). A duplicate key is
    then this very write, landed by an attempt whose reply was lost and re-sent by the driver's
    retryable write (a server without retryable-write support, as nx-27017, reports it as a duplicate)."""
    with suppress(DuplicateKeyError):
        await collection.insert_one(doc)
