"""Validation of public requests: every problem is reported with the field it concerns, before any write.

The rules (docs/api.md, "Limits"):
- ids (scope ids, event_id, chain_id): 1-128 characters of [A-Za-z0-9._@-];
- free text (content, metadata values, queries): UTF-8 (protobuf refuses anything else at parse time),
  bounded in bytes, no control characters except tab, newline and carriage return. Text is refused,
  never silently stripped: what is stored is byte for byte what the client sent;
- metadata keys: 1..N bytes, no control character at all, no '.' and no leading '$' (they are field
  names of the stored `metadata` document in MongoDB). Any other character is allowed: filters compare
  keys as values, never as field paths (docs/security.md, "Metadata filters");
- timestamps: valid protobuf Timestamps between EVENT_EARLIEST_TIMESTAMP and now + the allowed skew;
- counts (batch size, metadata entries, filters, result limits) inside their ranges;
- page tokens: empty or one a previous page issued (decoded and range-checked, never trusted).
Field paths follow google.rpc.BadRequest: `events[3].metadata["k"]`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from google.protobuf import timestamp_pb2

from athena.config import Settings
from athena.errors import FieldViolation, InvalidArgument
from athena.events import ROLE_NAMES, TYPE_NAMES
from athena_client.memory.v1 import memory_pb2
from athena_ingest.context_page import decode_cursor

__all__ = [
    "DEFAULT_PROFILE_FACTS",
    "ID_PATTERN",
    "MAX_CONTEXT_CHAINS",
    "MAX_PAGE_SIZE",
    "MAX_PROFILE_FACTS",
    "MAX_SEARCH_LIMIT",
    "Limits",
    "raise_if_any",
    "validate_admit_rejection",
    "validate_chain_request",
    "validate_export_user",
    "validate_get_chain",
    "validate_get_chain_events",
    "validate_get_context",
    "validate_get_task_result",
    "validate_list_chains",
    "validate_list_rejections",
    "validate_new_event",
    "validate_scope",
    "validate_search",
    "validate_update_chain",
]

# Result-count ranges are part of the API contract (memory.proto states them), not deployment settings.
MAX_SEARCH_LIMIT = 100
MAX_CONTEXT_CHAINS = 100
MAX_PROFILE_FACTS = 100
DEFAULT_PROFILE_FACTS = 20
MAX_PAGE_SIZE = 200
MAX_CHAIN_EVENTS_PAGE = 1000
MAX_SUMMARY_CHARS = 4000
MAX_TOPIC_CHARS = 200
_MAX_PAGE_TOKEN_CHARS = 512
_MAX_REPORTED = 10
"""Most violations listed in one error: the rest are counted, so the status fits in gRPC trailers."""
_MAX_SHOWN_KEY_CHARS = 40

# \Z, not $: `$` also matches before a trailing newline, and "alice\n" is not an id.
ID_PATTERN = re.compile(r"^[A-Za-z0-9._@-]{1,128}\Z")
"""The rule of every scope id (and event and chain id)."""
_ID_RULE = "must be 1-128 characters of A-Z a-z 0-9 . _ @ -"
_PAGE_TOKEN = re.compile(r"^[A-Za-z0-9_=-]*\Z")
# Unicode category Cc is exactly U+0000-U+001F (C0, NUL included), U+007F (DEL) and U+0080-U+009F (C1).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_TEXT_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Control characters free text may not hold: all but tab, newline and carriage return."""


@dataclass(frozen=True)
class Limits:
    """The configurable input limits (Settings fields of the same meaning)."""

    max_content_bytes: int
    max_metadata_entries: int
    max_metadata_key_bytes: int
    max_metadata_value_bytes: int
    earliest_timestamp: datetime
    max_future_skew: timedelta
    max_batch: int
    max_query_bytes: int
    max_metadata_filters: int
    max_window_events: int
    """GetContext's limit may not exceed what a window can hold."""

    @classmethod
    def from_settings(cls, s: Settings) -> Limits:
        return cls(
            max_content_bytes=s.event_max_content_bytes,
            max_metadata_entries=s.event_max_metadata_entries,
            max_metadata_key_bytes=s.event_max_metadata_key_bytes,
            max_metadata_value_bytes=s.event_max_metadata_value_bytes,
            earliest_timestamp=s.event_earliest_timestamp,
            max_future_skew=timedelta(seconds=s.event_max_future_skew_seconds),
            max_batch=s.store_events_max_batch,
            max_query_bytes=s.search_max_query_bytes,
            max_metadata_filters=s.search_max_metadata_filters,
            max_window_events=s.stm_window_max_events,
        )


def raise_if_any(violations: Sequence[FieldViolation]) -> None:
    if not violations:
        return
    listed = list(violations[:_MAX_REPORTED])
    if len(violations) > _MAX_REPORTED:
        listed.append(FieldViolation("request", f"{len(violations) - _MAX_REPORTED} more violations not listed"))
    raise InvalidArgument(listed)


def _id_violation(value: str, field: str, *, required: bool = True) -> list[FieldViolation]:
    if not value:
        return [FieldViolation(field, "is required")] if required else []
    return [] if ID_PATTERN.match(value) else [FieldViolation(field, _ID_RULE)]


def validate_scope(
    scope: memory_pb2.Scope, *, has_scope: bool, field: str = "scope", agent_optional: bool = False
) -> list[FieldViolation]:
    if not has_scope:
        return [FieldViolation(field, "is required")]
    out = _id_violation(scope.tenant_id, f"{field}.tenant_id")
    out += _id_violation(scope.user_id, f"{field}.user_id")
    out += _id_violation(scope.agent_id, f"{field}.agent_id", required=not agent_optional)
    return out


def _text_violations(text: str, field: str, *, max_bytes: int, required: bool) -> list[FieldViolation]:
    if required and not text.strip():
        return [FieldViolation(field, "must not be empty")]
    if len(text.encode("utf-8")) > max_bytes:
        return [FieldViolation(field, f"must be at most {max_bytes} bytes of UTF-8")]
    if _TEXT_CONTROL.search(text):
        return [
            FieldViolation(field, "must not contain control characters other than tab, newline and carriage return")
        ]
    return []


def _key_path(field: str, key: str) -> str:
    shown = key if len(key) <= _MAX_SHOWN_KEY_CHARS else key[:_MAX_SHOWN_KEY_CHARS] + "..."
    # JSON quoting escapes quotes and control characters, so the path is always printable.
    return f"{field}[{json.dumps(shown, ensure_ascii=False)}]"


def _metadata_violations(
    entries: Mapping[str, str], field: str, *, max_entries: int, max_key_bytes: int, max_value_bytes: int
) -> list[FieldViolation]:
    if len(entries) > max_entries:
        return [FieldViolation(field, f"must have at most {max_entries} entries")]
    out = []
    for key, value in entries.items():
        path = _key_path(field, key)
        if not key or len(key.encode("utf-8")) > max_key_bytes:
            out.append(FieldViolation(path, f"key must be 1-{max_key_bytes} bytes of UTF-8"))
        elif _CONTROL.search(key) or "." in key or key.startswith("$"):
            out.append(FieldViolation(path, "key must not contain control characters or '.', nor start with '$'"))
        else:
            out += _text_violations(value, path, max_bytes=max_value_bytes, required=False)
    return out


def _timestamp_violations(
    ts: timestamp_pb2.Timestamp, field: str, *, limits: Limits, now: datetime
) -> list[FieldViolation]:
    # Plain arithmetic: an absurd seconds value must not reach datetime (OverflowError).
    if not 0 <= ts.nanos < 1_000_000_000:
        return [FieldViolation(f"{field}.nanos", "must be between 0 and 999999999")]
    earliest = limits.earliest_timestamp
    if ts.seconds < int(earliest.timestamp()):
        return [FieldViolation(field, f"must not be before {earliest.isoformat()}")]
    latest = (now + limits.max_future_skew).timestamp()
    if ts.seconds + ts.nanos / 1e9 > latest:
        return [
            FieldViolation(field, f"must not be more than {int(limits.max_future_skew.total_seconds())}s in the future")
        ]
    return []


def validate_new_event(
    event: memory_pb2.NewEvent, *, field: str, limits: Limits, now: datetime
) -> list[FieldViolation]:
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
    out += _text_violations(event.content, f"{field}.content", max_bytes=limits.max_content_bytes, required=True)
    out += _metadata_violations(
        event.metadata,
        f"{field}.metadata",
        max_entries=limits.max_metadata_entries,
        max_key_bytes=limits.max_metadata_key_bytes,
        max_value_bytes=limits.max_metadata_value_bytes,
    )
    if event.HasField("timestamp"):
        out += _timestamp_violations(event.timestamp, f"{field}.timestamp", limits=limits, now=now)
    out += _id_violation(event.event_id, f"{field}.event_id", required=False)
    return out


def _range_violation(value: int, field: str, *, top: int, zero_means: str) -> list[FieldViolation]:
    return [] if 0 <= value <= top else [FieldViolation(field, f"must be between 0 and {top} (0: {zero_means})")]


def validate_get_context(request: memory_pb2.GetContextRequest, *, limits: Limits) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"))
    out += _range_violation(request.limit, "limit", top=limits.max_window_events, zero_means="the whole window")
    out += _range_violation(request.chain_limit, "chain_limit", top=MAX_CONTEXT_CHAINS, zero_means="default 3")
    out += _range_violation(
        request.profile_limit, "profile_limit", top=MAX_PROFILE_FACTS, zero_means=f"default {DEFAULT_PROFILE_FACTS}"
    )
    if request.query:
        out += _text_violations(request.query, "query", max_bytes=limits.max_query_bytes, required=True)
    out += _context_token_violations(request.page_token, limits=limits)
    return out


def _context_token_violations(token: str, *, limits: Limits) -> list[FieldViolation]:
    """A GetContext page_token must be one a previous answer returned (context_page.decode_cursor)."""
    try:
        decode_cursor(token, max_remaining=limits.max_window_events)
    except ValueError:
        return [FieldViolation("page_token", "is not a token this service issued")]
    return []


def validate_search(request: memory_pb2.SearchMemoryRequest, *, limits: Limits) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _text_violations(request.query, "query", max_bytes=limits.max_query_bytes, required=True)
    out += _range_violation(request.limit, "limit", top=MAX_SEARCH_LIMIT, zero_means="default 5")
    # NaN fails both comparisons, so it is refused too.
    if request.HasField("similarity_threshold") and not -1.0 <= request.similarity_threshold <= 1.0:
        out.append(FieldViolation("similarity_threshold", "must be between -1 and 1"))
    out += _metadata_violations(
        request.metadata_filters,
        "metadata_filters",
        max_entries=limits.max_metadata_filters,
        max_key_bytes=limits.max_metadata_key_bytes,
        max_value_bytes=limits.max_metadata_value_bytes,
    )
    return out


def validate_get_chain(request: memory_pb2.GetChainRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _id_violation(request.chain_id, "chain_id")
    return out


def validate_list_chains(request: memory_pb2.ListChainsRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _page_violations(request.page_size, request.page_token, top=MAX_PAGE_SIZE, default=20)
    if request.status not in (
        memory_pb2.CHAIN_STATUS_UNSPECIFIED,
        memory_pb2.CHAIN_STATUS_ACTIVE,
        memory_pb2.CHAIN_STATUS_ARCHIVED,
    ):
        out.append(FieldViolation("status", "must be CHAIN_STATUS_ACTIVE, CHAIN_STATUS_ARCHIVED or unspecified"))
    return out


def _page_violations(page_size: int, page_token: str, *, top: int, default: int) -> list[FieldViolation]:
    out = _range_violation(page_size, "page_size", top=top, zero_means=f"default {default}")
    if len(page_token) > _MAX_PAGE_TOKEN_CHARS or not _PAGE_TOKEN.match(page_token):
        out.append(FieldViolation("page_token", "is not a token this service issued"))
    return out


def validate_chain_request(
    request: memory_pb2.DeleteChainRequest | memory_pb2.RestoreChainRequest,
) -> list[FieldViolation]:
    """A request naming one chain of a scope (agent optional): DeleteChain, RestoreChain."""
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _id_violation(request.chain_id, "chain_id")
    return out


def validate_update_chain(request: memory_pb2.UpdateChainRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _id_violation(request.chain_id, "chain_id")
    if not (
        request.HasField("pinned")
        or request.HasField("importance")
        or request.HasField("summary")
        or request.HasField("topic")
    ):
        out.append(FieldViolation("request", "must set at least one of pinned, importance, summary, topic"))
    # NaN fails both comparisons, so it is refused too.
    if request.HasField("importance") and not 0.0 <= request.importance <= 1.0:
        out.append(FieldViolation("importance", "must be between 0 and 1"))
    edits = (
        ("summary", request.HasField("summary"), MAX_SUMMARY_CHARS),
        ("topic", request.HasField("topic"), MAX_TOPIC_CHARS),
    )
    for name, given, top in edits:
        if given:
            text = getattr(request, name)
            if len(text) > top:
                out.append(FieldViolation(name, f"must be at most {top} characters"))
            else:
                out += _text_violations(text, name, max_bytes=4 * top, required=True)
    return out


def validate_get_chain_events(request: memory_pb2.GetChainEventsRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _id_violation(request.chain_id, "chain_id")
    out += _page_violations(request.page_size, request.page_token, top=MAX_CHAIN_EVENTS_PAGE, default=100)
    return out


def validate_list_rejections(request: memory_pb2.ListRejectionsRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _page_violations(request.page_size, request.page_token, top=MAX_PAGE_SIZE, default=20)
    return out


def validate_admit_rejection(request: memory_pb2.AdmitRejectionRequest) -> list[FieldViolation]:
    out = validate_scope(request.scope, has_scope=request.HasField("scope"), agent_optional=True)
    out += _id_violation(request.segment_id, "segment_id")
    return out


def validate_get_task_result(request: memory_pb2.GetTaskResultRequest) -> list[FieldViolation]:
    """The whole scope: a task's result is kept under its own scope."""
    out = validate_scope(request.scope, has_scope=request.HasField("scope"))
    out += _id_violation(request.task_id, "task_id")
    return out


def validate_export_user(request: memory_pb2.ExportUserRequest) -> list[FieldViolation]:
    out = _id_violation(request.tenant_id, "tenant_id")
    out += _id_violation(request.user_id, "user_id")
    return out
