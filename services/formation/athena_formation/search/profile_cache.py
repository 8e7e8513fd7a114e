"""The chains' part of users' profiles, kept between GetContext calls (search/user_profile.py).

An agent asks GetContext at every turn, and the facts of a user's chains change only when formation
writes one of their chains; reading them is a MongoDB query each time. This keeps, per user, what the
last read gave for each (agent, limit) asked, and drops a user's entries on every write of their
chains the lexical index is told of (LexicalIndex.on_change: formations' creations, merges, re-forms,
deletions, archiving and erasure). A read that a write overtook is not kept (`since`). An entry lives
at most `ttl_seconds`: with a shared vector store (several formation replicas) another replica's
writes are not told here, so as long as a user's lexicon (SEARCH_LEXICON_REFRESH_SECONDS); else a
minute (user_profile.UNSHARED_TTL_SECONDS).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ProfileCache", "ToldFacts"]

ToldFacts = Sequence[tuple[Mapping[str, Any], str]]
"""(a `profile_facts` entry, its chain's id), oldest first."""
UserKey = tuple[str, str]
Part = tuple[str, int]
"""(agent id, "" for every agent; the limit asked)"""


class ProfileCache:
    def __init__(self, *, max_users: int = 10_000, ttl_seconds: float | None = None) -> None:
        self.max_users = max_users
        self.ttl_seconds = ttl_seconds
        self._users: OrderedDict[UserKey, dict[Part, tuple[float, ToldFacts]]] = OrderedDict()
        self._writes = 0

    def changed(self, key: UserKey) -> None:
        """A write of the user's chains: their entries go, and reads in flight are not kept."""
        self._writes += 1
        self._users.pop(key, None)

    def since(self) -> int:
        """Taken before a read, given back to `put`."""
        return self._writes

    def get(self, key: UserKey, part: Part) -> ToldFacts | None:
        entry = self._users.get(key, {}).get(part)
        if entry is None:
            return None
        kept_at, told = entry
        if self.ttl_seconds is not None and time.monotonic() - kept_at >= self.ttl_seconds:
            return None
        self._users.move_to_end(key)
        return told

    def put(self, key: UserKey, part: Part, told: ToldFacts, *, since: int) -> None:
        """Keep what a read begun at `since` gave, unless a write came after it began."""
        if since != self._writes or self.max_users <= 0:
            return
        self._users.setdefault(key, {})[part] = (time.monotonic(), told)
        self._users.move_to_end(key)
        while len(self._users) > self.max_users:
            self._users.popitem(last=False)
