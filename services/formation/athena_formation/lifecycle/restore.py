"""RestoreChain: an archived chain back in search.

The archiver deleted its embedding; its events are still in the log, so it is embedded again from
them (with its summary and names). The steps are FormChain's: the document is made active with
`embedding_state: pending` (search reads only indexed chains), then the embedding is written and the
chain marked indexed, warmed as by a recall. A retry after a crash in between finds the chain active
but not indexed, and indexes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from athena.events import doc_to_event
from athena_client.memory.v1 import memory_pb2
from athena_formation.curation.owned import WRITE_ROUNDS, ChainContended, owned_chain
from athena_formation.forming.form_chain import ChainFormer
from athena_formation.lifecycle.heat import lifecycle_of
from athena_formation.search.chain_message import chain_to_proto
from athena_formation.store.chain_store import epoch

__all__ = ["ChainRestorer"]


@dataclass
class ChainRestorer:
    former: ChainFormer

    async def restore(self, request: memory_pb2.RestoreChainRequest) -> memory_pb2.Chain:
        store = self.former.store
        for _ in range(WRITE_ROUNDS):
            doc = await owned_chain(store, request.scope, request.chain_id)
            if doc.get("status") == "active" and doc.get("embedding_state") == "indexed":
                return chain_to_proto(doc)
            events = [doc_to_event(d) for d in await store.event_log.docs(doc.get("event_ids", []))]
            vector = await self.former.chain_embedding(doc, events)
            now = datetime.now(UTC)
            heat = self.former.heat.heat(
                importance=float(doc.get("importance", 0.5)),
                recall_count=int(doc.get("recall_count", 0)),
                last_accessed_at=now,
                now=now,
            )
            fields = {
                "status": "active",
                "lifecycle": lifecycle_of(heat),
                "heat_score": heat,
                "last_accessed_at": epoch(now),
                "embedding_state": "pending",
                "restored_at": epoch(now),
                # Other formation replicas re-read the chains written since their last read.
                "updated_at": epoch(now),
            }
            if not await store.rewrite(doc, fields):
                continue
            written = {**doc, **fields, "version": int(doc.get("version", 0)) + 1}
            await self.former.index_chain(written, vector)
            return chain_to_proto({**written, "embedding_state": "indexed"})
        raise ChainContended(f"chain {request.chain_id} kept changing while it was restored")
