"""A small bounded cache of verified credentials that honours each one's expiry."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ExpiringCache"]

V = TypeVar("V")


class ExpiringCache(Generic[V]):
    """Least-recently-used map of key -> (value, expires_at); an entry is never served at or past its expiry.

    Only credentials that passed full verification go in, so a caller without the signing key cannot
    fill it, and a flood of distinct valid tokens only evicts older entries (they are verified again).
    """

    def __init__(self, *, max_entries: int, clock: Callable[[], float] = time.time) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[V, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> V | None:
        hit = self._entries.get(key)
        if hit is None:
            return None
        value, expires_at = hit
        if self._clock() >= expires_at:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: str, value: V, *, expires_at: float) -> None:
        self._entries[key] = (value, expires_at)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
