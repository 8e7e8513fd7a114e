"""The formation part of ForgetUser, and the tombstone check FormChain honours.

Ingest writes the tombstone (a record in `erasures` with `erased_at`, epoch seconds) before it calls
FormationService.ForgetUser. Formation then deletes, in this order: the user's Milvus embeddings (so
search can never return a chain about to disappear), the chains, the formation records.

FormChain for a segment holding an event stored at or before the user's tombstone answers REJECTED
with reason "erased" and writes nothing. A FormChain already running when the forget happened is
checked again when it finishes: if its segment is now erased, whatever it wrote is removed and it
answers "erased" as well. Both times come from ingest's clock (stored_at, erased_at), so the
comparison does not depend on formation's clock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pymongo import AsyncMongoClient

from athena.internal.v1 import formation_pb2
from athena.memory.v1 import memory_pb2
from athena.stores import mongo_unavailable
from athena_formation.chain_store import ChainStore
from athena_formation.lexical_index import LexicalIndex
from athena_formation.vector_index import VectorIndex

__all__ = ["ERASED", "ERASURES", "FormationEraser"]

log = logging.getLogger("athena.formation.erasure")

ERASURES = "erasures"
ERASED = "erased"


@dataclass
class FormationEraser:
    mongo: AsyncMongoClient[dict[str, Any]]
    database: str
    store: ChainStore
    vectors: VectorIndex
    lexical: LexicalIndex | None = None

    async def erased_at(self, tenant_id: str, user_id: str) -> float | None:
        """The user's latest tombstone (epoch seconds), or None."""
        with mongo_unavailable():
            docs = [d async for d in self.mongo[self.database][ERASURES].find({"tenant_id": tenant_id, "user_id": user_id})]
        times = [float(d["erased_at"]) for d in docs if d.get("erased_at") is not None]
        return max(times) if times else None

    async def segment_erased(self, segment: formation_pb2.Segment) -> bool:
        s = segment.scope
        if not (s.tenant_id and s.user_id and segment.events):
            return False  # invalid: the former reports it
        erased_at = await self.erased_at(s.tenant_id, s.user_id)
        return erased_at is not None and any(e.stored_at.ToNanoseconds() / 1e9 <= erased_at for e in segment.events)

    async def forget(self, tenant_id: str, user_id: str) -> memory_pb2.ForgetUserResponse:
        with mongo_unavailable():
            chain_ids = {d["_id"] async for d in self.store.chains.find({"tenant_id": tenant_id, "user_id": user_id}, {"_id": 1})}
            chain_ids |= {
                d["chain_id"]
                async for d in self.store.outcomes.find({"tenant_id": tenant_id, "user_id": user_id}, {"chain_id": 1})
                if d.get("chain_id")
            }
        vector_ids = await self.vectors.ids_of_user(tenant_id=tenant_id, user_id=user_id) | await self.vectors.existing(sorted(chain_ids))
        await self.vectors.delete(sorted(vector_ids))
        if self.lexical is not None:
            self.lexical.forget_user(tenant_id, user_id)
        with mongo_unavailable():
            chains = await self.store.chains.delete_many({"tenant_id": tenant_id, "user_id": user_id})
            self.store.forget_cached(sorted(chain_ids))
            records = await self.store.outcomes.delete_many({"tenant_id": tenant_id, "user_id": user_id})
        receipt = memory_pb2.ForgetUserResponse(
            embeddings=len(vector_ids), chains=int(chains.deleted_count), formation_records=int(records.deleted_count)
        )
        log.info("erased formation data of %s/%s: %d embeddings, %d chains, %d records",
                 tenant_id, user_id, receipt.embeddings, receipt.chains, receipt.formation_records)
        return receipt

    async def undo(self, segment_id: str, chain_id: str) -> None:
        """Remove what a FormChain that raced the forget wrote (embedding first, then chain and record)."""
        if chain_id:
            await self.vectors.delete([chain_id])
        with mongo_unavailable():
            if chain_id and self.lexical is not None:
                doc = await self.store.chains.find_one({"_id": chain_id}, {"tenant_id": 1, "user_id": 1})
                if doc is not None:
                    self.lexical.drop(doc["tenant_id"], doc["user_id"], [chain_id])
            if chain_id:
                await self.store.chains.delete_many({"_id": chain_id})
                self.store.forget_cached([chain_id])
            await self.store.outcomes.delete_many({"_id": segment_id})


def erased_response() -> formation_pb2.FormChainResponse:
    return formation_pb2.FormChainResponse(outcome=formation_pb2.FORM_OUTCOME_REJECTED, reason=ERASED)
