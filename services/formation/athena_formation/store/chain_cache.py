"""Recently searched chain documents, kept in formation's memory so a search reads fewer of them.

SearchMemory reads its hits' documents from MongoDB (to check they are still active and to answer
with them). A user's hot chains come back search after search, so formation keeps the documents it
read (without their lexicons), least recently used dropped past `max_documents`.

Coherent because formation is the one writer of `cognitive_chains` and every write goes through
ChainStore, which drops the written chain from here once the write is done (a recall's warm-up,
whose effect is known, is applied to the cached copy instead: the hottest chains are the ones
recalled, and dropping them at every warm-up would empty the cache of exactly them). A read that raced a write must not put back the version it read
before the write: every drop is stamped, and a document read before a drop of its chain is not
kept. Used only where formation is the one writer (Milvus Lite); with a Milvus server several
formation replicas write, and every search reads MongoDB.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ChainDocCache"]


class ChainDocCache:
    def __init__(self, *, max_documents: int = 10_000) -> None:
        self.max_documents = max_documents
        self._docs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._seq = 0
        self._dropped_at: dict[str, int] = {}  # chain id -> stamp of its last drop, while reads are open
        self._reads = 0

    def __len__(self) -> int:
        return len(self._docs)

    def lookup(self, chain_ids: Iterable[str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """(the cached documents, the ids to read from MongoDB)."""
        found: dict[str, dict[str, Any]] = {}
        missing: list[str] = []
        for chain_id in chain_ids:
            doc = self._docs.get(chain_id)
            if doc is None:
                missing.append(chain_id)
            else:
                self._docs.move_to_end(chain_id)
                found[chain_id] = doc
        return found, missing

    def begin_read(self) -> int:
        """A stamp to hand to `end_read` with what a MongoDB read returned."""
        self._reads += 1
        return self._seq

    def end_read(self, stamp: int, docs: Iterable[Mapping[str, Any]]) -> None:
        """Keep what was read, but not a chain dropped (written) since `stamp`."""
        self._reads -= 1
        for doc in docs:
            if self._dropped_at.get(doc["_id"], -1) <= stamp:
                self._docs[doc["_id"]] = dict(doc)
                self._docs.move_to_end(doc["_id"])
        while len(self._docs) > self.max_documents:
            self._docs.popitem(last=False)
        if not self._reads:
            self._dropped_at.clear()

    def drop(self, chain_ids: Iterable[str]) -> None:
        """These chains were written: their next search reads them again."""
        self._seq += 1
        for chain_id in chain_ids:
            self._docs.pop(chain_id, None)
            if self._reads:
                self._dropped_at[chain_id] = self._seq

    def add_recalls(self, chain_id: str, count: int, fields: Mapping[str, Any]) -> None:
        """A recall warm-up MongoDB accepted: the cached copy takes it as MongoDB did ($inc, $set),
        and a read in flight may hold either state, so it is not kept."""
        self._seq += 1
        if self._reads:
            self._dropped_at[chain_id] = self._seq
        doc = self._docs.get(chain_id)
        if doc is not None and doc.get("status") == "active":
            doc.update(fields)
            doc["recall_count"] = int(doc.get("recall_count", 0)) + count
