"""Validation of public requests: every problem is reported with the field it concerns, before any write."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Sequence

from athena.config import Settings
from athena.errors import FieldViolation, InvalidArgument
from athena.events import ROLE_NAMES, TYPE_NAMES, timestamp_of
from athena.memory.v1 import memory_pb2

__all__ = [
    "ID_PATTERN",
    "Limits",
    "raise_if_any",
    "validate_get_chain",
    "validate_list_chains",
    "validate_new_event",
    "validate_scope",
    "validate_search",
]

MAX_QUERY_BYTES = 4096
MAX_SEARCH_LIMIT = 100
MAX_PAGE_SIZE = 200
MAX_METADATA_FILTERS = 8

_ID = re.compile(r"^[A-Za-z0-9._@-]{1,128}$")
ID_PATTERN = _ID
"""The rule of every scope id (and event and chain id)."""
_EARLIEST = datetime(1990, 1, 1, tzinfo=timezone.utc)
_ALLOWED_CONTROL = {"\n", "\r", "\t"}


@dataclass(frozen=True)
class Limits:
    max_content_bytes: int
    max_metadata_entries: int
    max_metadata_key_bytes: int
    max_metadata_value_bytes: int
    max_future_skew: timedelta
    max_batch: int

    @classmethod
    def from_settings(cls, s: Settings) -> "Limits":
        return cls(
            max_content_bytes=s.event_max_content_bytes,
            max_metadata_entries=s.event_max_metadata_entries,
            max_metadata_key_bytes=s.event_max_metadata_key_bytes,
            max_metadata_value_bytes=s.event_max_metadata_value_bytes,
            max_future_skew=timedelta(seconds=s.event_max_future_skew_seconds),
            max_batch=s.store_events_max_batch,
        )


def raise_if_any(violations: Sequence[FieldViolation]) -> None:
    if violations:
        raise InvalidArgument(list(violations))


def validate_scope(
    scope: memory_pb2.Scope, *, has_scope: bool, field: str = "scope", agent_optional: bool = False
) -> list[FieldViolation]:
    if not has_scope:
        return [FieldViolation(field, "is required")]
    out = []
    for name in ("tenant_id", "user_id", "agent_id"):
        value = getattr(scope, name)
        if not value and name == "agent_id" and agent_optional:
            continue
        if not value:
            out.append(FieldViolation(f"{field}.{name}", "is required"))
        elif not _ID.match(value):
            out.append(FieldViolation(f"{field}.{name}", "must be 1-128 characters of A-Z a-z 0-9 . _ @ -"))
    return out


def _has_bad_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" and ch not in _ALLOWED_CONTROL for ch in text)


def validate_new_event(event: memory_pb2.NewEvent, *, field: str, limits: Limits, now: datetime) -> list[FieldViolation]:
    out: list[FieldViolation] = []
    if event.role not in ROLE_NAMES:
        out.append(FieldViolation(f"{field}.role", "must be ROLE_USER, ROLE_AGENT or ROLE_SYSTEM"))
    if event.type not in TYPE_NAMES:
        out.append(
            FieldViolation(
                f"{field}.type",
                "must be EVENT_TYPE_MESSAGE, EVENT_TYPE_THOUGHT, EVENT_TYPE_ACTION or EVENT_TYPE_OBSERVATION",
            )
        )
    if not event.content.strip():
        out.append(FieldViolation(f"{field}.content", "must not be empty"))
    elif len(event.content.encode("utf-8")) > limits.max_content_bytes:
        out.append(FieldViolation(f"{field}.content", f"must be at most {limits.max_content_bytes} bytes"))
    elif _has_bad_control(event.content):
        out.append(FieldViolation(f"{field}.content", "must not contain control characters other than tab and newline"))
    if len(event.metadata) > limits.max_metadata_entries:
        out.append(FieldViolation(f"{field}.metadata", f"must have at most {limits.max_metadata_entries} entries"))
    else:
        for key, value in event.metadata.items():
            if not key or len(key.encode("utf-8")) > limits.max_metadata_key_bytes or _has_bad_control(key):
                out.append(
                    FieldViolation(
                        f"{field}.metadata", f"key {key[:40]!r} must be 1-{limits.max_metadata_key_bytes} bytes without control characters"
                    )
                )
            elif len(value.encode("utf-8")) > limits.max_metadata_value_bytes or _has_bad_control(value):
                out.append(
                    FieldViolation(
                        f"{field}.metadata[{key}]",
                        f"must be at most {limits.max_metadata_value_bytes} bytes without control characters",
                    )
                )
    if event.HasField("timestamp"):
        ts = event.timestamp
        if not (0 <= ts.nanos < 1_000_000_000) or ts.seconds < int(_EARLIEST.timestamp()):
            out.append(FieldViolation(f"{field}.timestamp", "must be a valid time after 1990-01-01"))
        elif ts.seconds > int((now + limits.max_future_skew).timestamp()) or timestamp_of(ts) > now + limits.max_future_skew:
            out.append(
                FieldViolation(f"{field}.timestamp", f"must not be more than {int(limits.max_future_skew.total_seconds())}s in the future")
            )
    if event.event_id and not _ID.match(event.event_id):
        out.append(FieldViolation(f"{field}.event_id", "must be 1-128 characters of A-Z a-z 0-9 . _ @ -"))
    return out


def _validate_query(query: str, field: str = "query") -> list[FieldViolation]:
    if not query.strip():
        return [FieldViolation(field, "must not be empty")]
    if len(query.encode("utf-8")) > MAX_QUERY_BYTES:
        return [FieldViolation(field, f"must be at most {MAX_QUERY_BYTES} bytes")]
    if _has_bad_control(query):
        return [FieldViolation(field, "must not contain control characters other than tab and newline")]
    return []


def validate_search(request: memory_pb2.SearchMemoryRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _validate_query(request.query)
    if not 0 <= request.limit <= MAX_SEARCH_LIMIT:
        out.append(FieldViolation("limit", f"must be between 0 and {MAX_SEARCH_LIMIT} (0: default 5)"))
    if not -1.0 <= request.similarity_threshold <= 1.0:
        out.append(FieldViolation("similarity_threshold", "must be between -1 and 1"))
    if len(request.metadata_filters) > MAX_METADATA_FILTERS:
        out.append(FieldViolation("metadata_filters", f"must have at most {MAX_METADATA_FILTERS} entries"))
    for key, value in request.metadata_filters.items():
        if not key or len(key) > 128 or len(value) > 1024 or _has_bad_control(key + value) or "." in key or key.startswith("$"):
            out.append(FieldViolation(f"metadata_filters[{key[:40]}]", "key must be 1-128 characters without '.', '$' or control characters; value at most 1024"))
    return out


def validate_get_chain(request: memory_pb2.GetChainRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    if not request.chain_id:
        out.append(FieldViolation("chain_id", "is required"))
    elif not _ID.match(request.chain_id):
        out.append(FieldViolation("chain_id", "is not a chain id"))
    return out


def validate_list_chains(request: memory_pb2.ListChainsRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    if not 0 <= request.page_size <= MAX_PAGE_SIZE:
        out.append(FieldViolation("page_size", f"must be between 0 and {MAX_PAGE_SIZE} (0: default 20)"))
    if request.status not in (memory_pb2.CHAIN_STATUS_UNSPECIFIED, memory_pb2.CHAIN_STATUS_ACTIVE, memory_pb2.CHAIN_STATUS_ARCHIVED):
        out.append(FieldViolation("status", "must be CHAIN_STATUS_ACTIVE, CHAIN_STATUS_ARCHIVED or unspecified"))
    if len(request.page_token) > 512:
        out.append(FieldViolation("page_token", "is not a token this service issued"))
    return out
