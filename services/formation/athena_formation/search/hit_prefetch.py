"""The likely hits' documents, read while the query is embedded and the vectors are scanned.

A search scores the query's words (0.7 of the relevance by default) before its embedding is ready,
so the chains the words alone rank best are known early. Those of them the search cache does not hold
are read from MongoDB at once, beside the embedding and the scan; the hits among them are then taken
from that read instead of a read of their own after the ranking. A search waits for the prefetch only
for a hit it holds: a hit the cache holds, or one the words did not find, never waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from athena_formation.store.chain_store import ChainStore

__all__ = ["HitPrefetch"]


class HitPrefetch:
    """One search's read of its likely hits (those not in the search cache)."""

    def __init__(self, store: ChainStore, chain_ids: Sequence[str]) -> None:
        _, missing = store.cached_for_search(chain_ids)
        self.chain_ids = frozenset(missing)
        """The chains being read."""
        self._read: asyncio.Future[dict[str, dict[str, Any]]] | None = None
        if missing:
            self._read = asyncio.ensure_future(store.get_for_search(missing))
            self._read.add_done_callback(_retrieved)  # a failed prefetch is the hits' own read's to report

    async def take(self, chain_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The documents read of these chains (each one this prefetch reads; a chain it found gone
        is absent). Empty when the read failed: the caller reads them itself and reports the failure."""
        if self._read is None or not any(c in self.chain_ids for c in chain_ids):
            return {}
        try:
            docs = await self._read
        except Exception:
            return {}
        return {c: docs[c] for c in chain_ids if c in docs}

    def covers(self, chain_id: str) -> bool:
        """Read (or being read) here, so not to be read again unless the read failed."""
        return chain_id in self.chain_ids and self._read is not None and not self._failed()

    def _failed(self) -> bool:
        read = self._read
        return read is not None and read.done() and (read.cancelled() or read.exception() is not None)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
