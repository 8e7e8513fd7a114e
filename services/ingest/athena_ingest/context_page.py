"""GetContext's pages: the newest events of a selection that fit under the transport limit, and the
opaque token of the next older page.

A selection is the last `limit` events of a scope's window (the whole window for 0) when its first page
is read. A page is the newest events of the selection not returned yet that fit a byte budget, read
backwards from the window in chunks, oldest first within the page. Its token names the page's oldest
event (the anchor), the anchor's window index then, and how many events of the selection remain older
than it. Events enter a window only at its end, so the anchor keeps its index or moves towards the head
(cuts, the cap and erasure remove events): the next page is read just before it, and an anchor that
left the window ends the paging with an empty page.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from athena.stm import ShortTermWindow, WindowSlice
from athena_client.memory.v1 import memory_pb2

__all__ = [
    "CHAINS_BUDGET_BYTES",
    "PROFILE_BUDGET_BYTES",
    "RESPONSE_BUDGET_BYTES",
    "TRANSPORT_LIMIT_BYTES",
    "Cursor",
    "Page",
    "decode_cursor",
    "encode_cursor",
    "events_budget",
    "fit_chains",
    "fit_profile",
    "read_page",
]

TRANSPORT_LIMIT_BYTES = 4 * 1024 * 1024
"""gRPC's default max_receive_message_length: the largest answer a client takes unless it raises its own."""
RESPONSE_BUDGET_BYTES = TRANSPORT_LIMIT_BYTES - 256 * 1024
"""Largest GetContext answer built, events, relevant_chains and profile together; the margin left under the
transport limit holds next_page_token (at most MAX_TOKEN_CHARS) many times over."""
CHAINS_BUDGET_BYTES = 1024 * 1024
"""Most bytes of relevant_chains in one answer, so that events always keep most of the budget."""
PROFILE_BUDGET_BYTES = 256 * 1024
"""Most bytes of profile in one answer."""
MAX_TOKEN_CHARS = 512
"""Longest page_token accepted (the tokens issued are far shorter)."""
FIRST_CHUNK_EVENTS = 64
"""Events of a page's first window read; later reads are sized by what is left of the budget."""
MAX_CHUNK_EVENTS = 1024
"""Most events of one window read."""

_MAX_INDEX = 2**31 - 1
_MAX_ID_CHARS = 128
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_-]+={0,2}\Z")
"""URL-safe base64, strictly: b64decode itself would skip characters outside the alphabet."""


@dataclass(frozen=True)
class Cursor:
    """Where the next older page of a selection starts: just before its anchor."""

    anchor_id: str
    """Id of the oldest event returned so far."""
    index: int
    """The anchor's window index when it was returned (it can only have moved towards the head since)."""
    remaining: int | None
    """Events of the selection older than the anchor still to return; None: the rest of the window (limit 0)."""


@dataclass(frozen=True)
class Page:
    events: list[memory_pb2.Event]
    """Oldest first."""
    next: Cursor | None
    """Where the next older page starts; None when no older event of the selection is left."""


def encode_cursor(cursor: Cursor) -> str:
    """The opaque next_page_token of `cursor`: URL-safe base64 of a small JSON object."""
    body: dict[str, Any] = {"e": cursor.anchor_id, "i": cursor.index}
    if cursor.remaining is not None:
        body["r"] = cursor.remaining
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode()


def decode_cursor(token: str, *, max_remaining: int) -> Cursor | None:
    """The cursor of a page_token; None for an empty one (the first page). Raises ValueError for
    anything encode_cursor did not produce, so that a forged token never reaches Redis as an absurd
    index or count (`max_remaining`: the largest selection, the window cap)."""
    if not token:
        return None
    if len(token) > MAX_TOKEN_CHARS or not _TOKEN_CHARS.match(token):
        raise ValueError("not URL-safe base64")
    try:
        body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (
        binascii.Error,
        ValueError,
        RecursionError,
    ) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError("not a JSON object in base64") from exc
    return _cursor_of(body, max_remaining=max_remaining)


def _cursor_of(body: object, *, max_remaining: int) -> Cursor:
    if not isinstance(body, dict) or not {"e", "i"} <= body.keys() <= {"e", "i", "r"}:
        raise ValueError("not a cursor")
    anchor, index, remaining = body["e"], body["i"], body.get("r")
    # The anchor is only ever compared with the ids of window events.
    if not isinstance(anchor, str) or not 0 < len(anchor) <= _MAX_ID_CHARS:
        raise ValueError("bad anchor")
    if not _is_int(index) or not 0 <= index <= _MAX_INDEX:
        raise ValueError("bad index")
    if remaining is not None and (not _is_int(remaining) or not 0 < remaining <= max_remaining):
        raise ValueError("bad remaining count")
    return Cursor(anchor_id=anchor, index=index, remaining=remaining)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def wire_size(message_bytes: int) -> int:
    """Bytes a message of `message_bytes` takes as an element of a repeated field numbered 1-15:
    the tag, the length varint and the message."""
    return 1 + max(1, (message_bytes.bit_length() + 6) // 7) + message_bytes


Message = TypeVar("Message", memory_pb2.SearchHit, memory_pb2.ProfileFact)


def _fit(messages: Iterable[Message], budget: int) -> list[Message]:
    """The leading messages that fit `budget` bytes together (the first that does not fit and every
    one after it are left out, so that the answer keeps its order: a ranking, or newest first)."""
    kept: list[Message] = []
    used = 0
    for message in messages:
        used += wire_size(message.ByteSize())
        if used > budget:
            break
        kept.append(message)
    return kept


def fit_chains(hits: Iterable[memory_pb2.SearchHit]) -> list[memory_pb2.SearchHit]:
    """The best-ranked hits that fit CHAINS_BUDGET_BYTES together."""
    return _fit(hits, CHAINS_BUDGET_BYTES)


def fit_profile(facts: Iterable[memory_pb2.ProfileFact]) -> list[memory_pb2.ProfileFact]:
    """The newest facts that fit PROFILE_BUDGET_BYTES together."""
    return _fit(facts, PROFILE_BUDGET_BYTES)


def events_budget(chains: Iterable[memory_pb2.SearchHit], profile: Iterable[memory_pb2.ProfileFact] = ()) -> int:
    """Bytes left for a page's events once `chains` and `profile` are in the answer."""
    return (
        RESPONSE_BUDGET_BYTES
        - sum(wire_size(hit.ByteSize()) for hit in chains)
        - sum(wire_size(fact.ByteSize()) for fact in profile)
    )


@dataclass
class _PageBuilder:
    """Collects a page newest first while its events fit the budget."""

    budget: int
    used: int = 0
    newest_first: list[memory_pb2.Event] = field(default_factory=list)

    def take(self, chunk: WindowSlice) -> int:
        """Takes the chunk's events from its newest end while they fit (the page's first event always
        does, so that paging moves on). Returns how many it took."""
        taken = 0
        for event in reversed(chunk.events):
            size = wire_size(event.ByteSize())
            if self.newest_first and self.used + size > self.budget:
                break
            self.newest_first.append(event)
            self.used += size
            taken += 1
        return taken

    def next_chunk(self) -> int:
        """How many events the next window read should fetch: what is left of the budget over the
        page's average event size, plus one to learn whether the next event still fits."""
        average = max(1, self.used // max(1, len(self.newest_first)))
        return max(1, min(MAX_CHUNK_EVENTS, (self.budget - self.used) // average + 1))

    def page(self, next_cursor: Cursor | None) -> Page:
        return Page(events=self.newest_first[::-1], next=next_cursor)


def _bounded(count: int, remaining: int | None) -> int:
    return count if remaining is None else min(count, remaining)


async def _first_chunk(
    window: ShortTermWindow, scope: memory_pb2.Scope, cursor: Cursor | None, remaining: int | None
) -> WindowSlice | None:
    count = _bounded(FIRST_CHUNK_EVENTS, remaining)
    if cursor is None:
        return await window.read_newest(scope, count=count)
    return await window.read_before(scope, anchor_id=cursor.anchor_id, hint=cursor.index, count=count)


async def read_page(
    window: ShortTermWindow, scope: memory_pb2.Scope, cursor: Cursor | None, *, limit: int, budget: int
) -> Page:
    """The page of the selection (`limit`: its size on the first page, 0 the whole window) that starts
    at `cursor` (None: the first page): its newest events not returned yet that fit `budget` bytes."""
    builder = _PageBuilder(budget)
    remaining = cursor.remaining if cursor is not None else (limit or None)
    chunk = await _first_chunk(window, scope, cursor, remaining)
    while chunk is not None and chunk.events:
        taken = builder.take(chunk)
        remaining = None if remaining is None else remaining - taken
        oldest = chunk.start + len(chunk.events) - taken  # the window index of the page's oldest event
        if remaining == 0 or oldest == 0:
            return builder.page(None)
        anchor_id = builder.newest_first[-1].id
        if taken < len(chunk.events):  # the budget is spent with older events of the selection left
            return builder.page(Cursor(anchor_id=anchor_id, index=oldest, remaining=remaining))
        count = _bounded(builder.next_chunk(), remaining)
        chunk = await window.read_before(scope, anchor_id=anchor_id, hint=oldest, count=count)
    # The window holds nothing older, or the page's oldest event left it meanwhile, and with it the
    # events before it (a cut takes the window's head, an erasure every event stored before it).
    return builder.page(None)
