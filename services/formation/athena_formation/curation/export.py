"""The formation part of ExportUser: every chain of the user (active or archived), every formation
record (rejections included), then the counts, embeddings among them. Ingest streams the events
before these and adds its own counts (athena_ingest.export)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from athena.events import epoch_to_timestamp
from athena_client.memory.v1 import memory_pb2
from athena_formation.search.chain_message import chain_to_proto
from athena_formation.store.chain_store import ChainStore
from athena_formation.store.vector_index import VectorIndex

__all__ = ["UserExport", "record_to_proto"]


def record_to_proto(record: Mapping[str, Any]) -> memory_pb2.FormationRecord:
    out = memory_pb2.FormationRecord(
        segment_id=record["_id"],
        scope=memory_pb2.Scope(
            tenant_id=record["tenant_id"], user_id=record["user_id"], agent_id=record.get("agent_id", "")
        ),
        outcome=record.get("outcome", ""),
        chain_id=record.get("chain_id", ""),
        reason=record.get("reason", ""),
        quality=memory_pb2.QualityScores(**record.get("quality", {})),
        event_ids=record.get("event_ids", []),
        admitted=record.get("admitted_at") is not None,
    )
    if record.get("created_at") is not None:
        out.created_at.CopyFrom(epoch_to_timestamp(float(record["created_at"])))
    return out


@dataclass
class UserExport:
    store: ChainStore
    vectors: VectorIndex

    async def stream(self, request: memory_pb2.ExportUserRequest) -> AsyncIterator[memory_pb2.ExportUserResponse]:
        tenant_id, user_id = request.tenant_id, request.user_id
        summary = memory_pb2.ExportSummary()
        for doc in await self.store.user_chains(tenant_id, user_id):
            summary.chains += 1
            yield memory_pb2.ExportUserResponse(chain=chain_to_proto(doc))
        for record in await self.store.user_records(tenant_id, user_id):
            summary.formation_records += 1
            yield memory_pb2.ExportUserResponse(formation_record=record_to_proto(record))
        summary.embeddings = len(await self.vectors.ids_of_user(tenant_id=tenant_id, user_id=user_id))
        yield memory_pb2.ExportUserResponse(summary=summary)
