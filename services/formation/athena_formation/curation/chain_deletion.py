"""DeleteChain: one chain goes, in the order erasure uses (lifecycle/erasure.py): its embedding first,
so search never returns a chain about to disappear, then its document, then the events' references
(or the events themselves, when asked)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from athena_client.memory.v1 import memory_pb2
from athena_formation.curation.owned import WRITE_ROUNDS, ChainContended, owned_chain
from athena_formation.store.chain_store import ChainStore
from athena_formation.store.lexical_index import LexicalIndex
from athena_formation.store.vector_index import VectorIndex

__all__ = ["ChainDeletion"]

log = logging.getLogger("athena.formation.curation")


@dataclass
class ChainDeletion:
    store: ChainStore
    vectors: VectorIndex
    lexical: LexicalIndex | None = None

    async def delete(self, request: memory_pb2.DeleteChainRequest) -> memory_pb2.DeleteChainResponse:
        out = memory_pb2.DeleteChainResponse()
        for _ in range(WRITE_ROUNDS):
            doc = await owned_chain(self.store, request.scope, request.chain_id)
            embedded = await self.vectors.existing([doc["_id"]])
            await self.vectors.delete(sorted(embedded))
            out.embeddings += len(embedded)
            if self.lexical is not None:
                self.lexical.drop(doc["tenant_id"], doc["user_id"], [doc["_id"]])
            if not await self.store.delete_chain(doc):
                continue  # a merge landed in between: read it again (its embedding may be back)
            out.chains = 1
            event_ids = list(doc.get("event_ids", []))
            if request.delete_events:
                out.events = await self.store.event_log.delete(event_ids)
                out.events_deleted = True
            else:
                out.events = await self.store.event_log.unlink_chain(doc["_id"], event_ids)
            log.info(
                "chain %s deleted (%d events %s)", doc["_id"], out.events, "deleted" if out.events_deleted else "kept"
            )
            return out
        raise ChainContended(f"chain {request.chain_id} kept changing while it was deleted")
