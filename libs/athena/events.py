"""Conversions of events between their protobuf form, their MongoDB document and plain names."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from athena import keys
from athena_client.memory.v1 import memory_pb2

__all__ = [
    "METADATA_PAIRS",
    "ROLE_NAMES",
    "TYPE_NAMES",
    "doc_to_event",
    "epoch_to_timestamp",
    "event_to_doc",
    "is_user_message",
    "metadata_pair",
    "metadata_pairs",
    "role_name",
    "scope_key",
    "scope_of_doc",
    "timestamp_of",
    "to_timestamp",
    "type_name",
    "utc",
]

ROLE_NAMES: dict[int, str] = {
    memory_pb2.ROLE_USER: "user",
    memory_pb2.ROLE_AGENT: "agent",
    memory_pb2.ROLE_SYSTEM: "system",
}
TYPE_NAMES: dict[int, str] = {
    memory_pb2.EVENT_TYPE_MESSAGE: "message",
    memory_pb2.EVENT_TYPE_THOUGHT: "thought",
    memory_pb2.EVENT_TYPE_ACTION: "action",
    memory_pb2.EVENT_TYPE_OBSERVATION: "observation",
}
_ROLE_VALUES = {v: k for k, v in ROLE_NAMES.items()}
_TYPE_VALUES = {v: k for k, v in TYPE_NAMES.items()}


def role_name(role: int) -> str:
    return ROLE_NAMES[role]


def type_name(event_type: int) -> str:
    return TYPE_NAMES[event_type]


def is_user_message(event: memory_pb2.Event) -> bool:
    """The seed's trigger: only a user message (role user, type message) asks for a chain check."""
    return event.role == memory_pb2.ROLE_USER and event.type == memory_pb2.EVENT_TYPE_MESSAGE


def scope_key(scope: memory_pb2.Scope) -> str:
    return keys.scope_id(scope.tenant_id, scope.user_id, scope.agent_id)


def utc(dt: datetime) -> datetime:
    """MongoDB hands back naive datetimes in UTC; make every datetime aware."""
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def to_timestamp(dt: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(utc(dt))
    return ts


def epoch_to_timestamp(seconds: float) -> Timestamp:
    """A Timestamp of seconds since the epoch, to the microsecond (as a datetime of them would be),
    without building the datetime: answers carry several per chain, and FromDatetime is slow Python."""
    fraction, whole = math.modf(seconds)
    micros = int(whole) * 1_000_000 + round(fraction * 1_000_000)  # datetime.fromtimestamp's rounding
    return Timestamp(seconds=micros // 1_000_000, nanos=(micros % 1_000_000) * 1000)


def timestamp_of(ts: Timestamp) -> datetime:
    return ts.ToDatetime(tzinfo=UTC)


METADATA_PAIRS = "metadata_pairs"
"""The event document's field holding its metadata as a list of `metadata_pair` strings."""


def metadata_pair(key: str, value: str) -> str:
    """One metadata entry as one string, the form a metadata filter compares by value.

    A filter on `metadata.<key>` would make the user's key a field path, which a MongoDB-wire server
    may paste into its own query language (nx-27017 pastes it into SQL); an equality on this string
    keeps the key and the value plain values. JSON of the two-element list is unambiguous (one pair,
    one string, whatever quotes, brackets, backslashes or control characters either holds) and is the
    same string for the writer and for every filter, since both call this function.
    """
    return json.dumps([key, value], ensure_ascii=False, separators=(",", ":"))


def metadata_pairs(metadata: Mapping[str, str]) -> list[str]:
    """Every entry of `metadata` as its `metadata_pair` string, in key order (a stable document)."""
    return [metadata_pair(k, metadata[k]) for k in sorted(metadata)]


def event_to_doc(event: memory_pb2.Event) -> dict[str, Any]:
    """The event's `cognitive_events` document. `metadata` is what events are read back from;
    `metadata_pairs` is what metadata filters match (`metadata_pair`)."""
    return {
        "_id": event.id,
        "tenant_id": event.scope.tenant_id,
        "user_id": event.scope.user_id,
        "agent_id": event.scope.agent_id,
        "role": ROLE_NAMES[event.role],
        "type": TYPE_NAMES[event.type],
        "content": event.content,
        "metadata": dict(event.metadata),
        METADATA_PAIRS: metadata_pairs(event.metadata),
        # Millisecond precision: what BSON dates keep.
        "timestamp": timestamp_of(event.timestamp).replace(microsecond=event.timestamp.nanos // 1_000_000 * 1000),
        "stored_at": timestamp_of(event.stored_at),
        "client_event_id": event.client_event_id,
    }


def scope_of_doc(doc: Mapping[str, Any]) -> memory_pb2.Scope:
    return memory_pb2.Scope(tenant_id=doc["tenant_id"], user_id=doc["user_id"], agent_id=doc["agent_id"])


def doc_to_event(doc: Mapping[str, Any]) -> memory_pb2.Event:
    return memory_pb2.Event(
        id=doc["_id"],
        scope=scope_of_doc(doc),
        role=_ROLE_VALUES[doc["role"]],  # type: ignore[arg-type]
        type=_TYPE_VALUES[doc["type"]],  # type: ignore[arg-type]
        content=doc["content"],
        metadata=doc.get("metadata") or {},
        timestamp=to_timestamp(doc["timestamp"]),
        stored_at=to_timestamp(doc["stored_at"]),
        client_event_id=doc.get("client_event_id", ""),
    )
