"""The periodic archiver: cold chains lose their embedding first, then are marked archived.

Deleting the Milvus embedding first means a crash in between leaves an active chain without an
embedding (which the next pass archives, and search never returns since nothing finds it), never an
archived chain that search could still find.

Pinned chains are never archived, nor, unless ARCHIVE_LASTING_FACTS, chains in which the user states
a lasting fact about themselves: that is what a memory is for, and a fact told in passing scores low
on the gate's metrics, so its heat would fall under the threshold within a day.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from athena.errors import DependencyUnavailable
from athena.metrics import CHAINS_ARCHIVED
from athena_formation.lifecycle.heat import HeatModel, lifecycle_of
from athena_formation.store.chain_store import ChainStore, epoch, from_epoch
from athena_formation.store.lexical_index import LexicalIndex
from athena_formation.store.vector_index import VectorIndex

__all__ = ["Archiver"]

log = logging.getLogger("athena.formation.archiver")


class Archiver:
    def __init__(
        self,
        *,
        store: ChainStore,
        vectors: VectorIndex,
        heat: HeatModel,
        threshold: float,
        min_age_hours: float,
        lexical: LexicalIndex | None = None,
        keep_lasting_facts: bool = True,
    ) -> None:
        self.store = store
        self.vectors = vectors
        self.lexical = lexical
        self.heat = heat
        self.threshold = threshold
        self.min_age = timedelta(hours=min_age_hours)
        self.keep_lasting_facts = keep_lasting_facts

    async def run_once(self, *, now: datetime | None = None) -> list[str]:
        """Archive every active chain colder than the threshold; returns their ids."""
        now = now or datetime.now(UTC)
        archived = []
        candidates = await self.store.cold_candidates(
            accessed_before=now - self.min_age, keep_lasting_facts=self.keep_lasting_facts
        )
        for doc in candidates:
            if from_epoch(doc["created_at"]) > now - self.min_age:
                continue
            heat = self.heat.heat(
                importance=float(doc.get("importance", 0.5)),
                recall_count=int(doc.get("recall_count", 0)),
                last_accessed_at=from_epoch(doc["last_accessed_at"]),
                now=now,
            )
            if heat >= self.threshold:
                await self.store.set_fields(doc["_id"], {"heat_score": heat, "lifecycle": lifecycle_of(heat)})
                continue
            await self.vectors.delete([doc["_id"]])
            if self.lexical is not None:
                self.lexical.drop(doc["tenant_id"], doc["user_id"], [doc["_id"]])
            # updated_at too: other formation replicas re-read the chains written since their last read.
            await self.store.set_fields(
                doc["_id"],
                {
                    "status": "archived",
                    "lifecycle": "archived",
                    "heat_score": heat,
                    "embedding_state": "deleted",
                    "archived_at": epoch(now),
                    "updated_at": epoch(datetime.now(UTC)),
                },
            )
            archived.append(doc["_id"])
            CHAINS_ARCHIVED.inc()
        if archived:
            log.info("archived %d cold chains", len(archived))
        return archived

    async def run_forever(self, *, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.run_once()
            except DependencyUnavailable as exc:
                log.warning("archiver pass skipped: %s", exc)
