"""Least-recently-searched eviction for formation's per-user search caches (vectors, lexicons)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

__all__ = ["evict_least_recent"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def evict_least_recent(users: OrderedDict[K, V], *, size: Callable[[V], int], limit: int, keep: K) -> list[tuple[K, V]]:
    """Drop the least recently used users (the front of `users`) until their sizes sum to at most
    `limit`, never `keep` (the user being served) and never the last one. Returns what was dropped."""
    total = sum(size(v) for v in users.values())
    dropped: list[tuple[K, V]] = []
    while total > limit and len(users) > 1:
        key, value = next(iter(users.items()))
        if key == keep:
            users.move_to_end(key)
            continue
        del users[key]
        dropped.append((key, value))
        total -= size(value)
    return dropped
