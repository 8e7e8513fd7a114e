"""UpdateChain: pin or unpin a chain, set its importance, correct its summary or topic.

A corrected summary or topic is recorded in `edited_fields`, so later merges keep it
(ChainFormer's merge), and the chain's embedding follows it: the document is written with
`embedding_state: pending` (out of search for the moment), then re-embedded from its events in the
log and made searchable again, the same steps FormChain takes. A retry after a crash between the two
does both again. An archived chain has no embedding: only its document changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from athena.events import doc_to_event
from athena_client.memory.v1 import memory_pb2
from athena_formation.curation.owned import WRITE_ROUNDS, ChainContended, owned_chain
from athena_formation.forming.form_chain import ChainFormer
from athena_formation.lifecycle.heat import lifecycle_of
from athena_formation.search.chain_message import chain_to_proto
from athena_formation.store.chain_store import epoch, from_epoch

__all__ = ["ChainEditor"]


@dataclass
class ChainEditor:
    former: ChainFormer

    async def update(self, request: memory_pb2.UpdateChainRequest) -> memory_pb2.Chain:
        store = self.former.store
        for _ in range(WRITE_ROUNDS):
            doc = await owned_chain(store, request.scope, request.chain_id)
            fields = self._fields(doc, request)
            if not await store.rewrite(doc, fields):
                continue  # a merge landed in between: apply the edit to what it wrote
            written = {**doc, **fields}
            if fields.get("embedding_state") == "pending":
                # Events deleted from the log (another chain's delete_events) leave the summary and names.
                events = [doc_to_event(d) for d in await store.event_log.docs(doc.get("event_ids", []))]
                await self.former.index_chain(written, await self.former.chain_embedding(written, events))
                written["embedding_state"] = "indexed"
            return chain_to_proto(written)
        raise ChainContended(f"chain {request.chain_id} kept changing while it was updated")

    def _fields(self, doc: dict[str, Any], request: memory_pb2.UpdateChainRequest) -> dict[str, Any]:
        now = datetime.now(UTC)
        fields: dict[str, Any] = {"updated_at": epoch(now)}
        edited = list(doc.get("edited_fields", []))
        if request.HasField("pinned"):
            fields["pinned"] = request.pinned
        for name in ("summary", "topic", "importance"):
            if request.HasField(name):
                fields[name] = getattr(request, name)
                if name not in edited:
                    edited.append(name)
        fields["edited_fields"] = edited
        if request.HasField("importance") and doc.get("status") == "active":
            heat = self.former.heat.heat(
                importance=request.importance,
                recall_count=int(doc.get("recall_count", 0)),
                last_accessed_at=from_epoch(doc.get("last_accessed_at")),
                now=now,
            )
            fields.update(heat_score=heat, lifecycle=lifecycle_of(heat))
        retext = (request.HasField("summary") and request.summary != doc.get("summary")) or (
            request.HasField("topic") and request.topic != doc.get("topic")
        )
        if doc.get("status") == "active" and (retext or doc.get("embedding_state") != "indexed"):
            fields["embedding_state"] = "pending"
        return fields
