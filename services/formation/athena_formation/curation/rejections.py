"""ListRejections and AdmitRejection: the segments the quality gate did not remember, and forming one
as a chain after all.

An admission turns the rejected segment's formation record into a plan to create a chain (its id the
one FormChain would have given it, from the segment id) and carries the plan out with FormChain's own
steps (form_chain.py): chain document, embedding, events pointed at the chain, record done. The
record keeps the gate's scores and reason beside `admitted_at`. A repeat, or a retry after a crash,
carries out the same plan again, idempotently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from athena.errors import FailedPrecondition, NotFound
from athena.events import doc_to_event, epoch_to_timestamp
from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.curation.owned import in_scope
from athena_formation.forming.form_chain import ChainFormer, new_chain_id
from athena_formation.page_tokens import decode_offset, encode_offset
from athena_formation.search.chain_message import chain_to_proto
from athena_formation.store.chain_store import epoch

__all__ = ["Rejections", "rejection_to_proto"]

DEFAULT_PAGE = 20


def rejection_to_proto(record: Mapping[str, Any]) -> memory_pb2.Rejection:
    analysis = record.get("analysis") or {}
    out = memory_pb2.Rejection(
        segment_id=record["_id"],
        scope=memory_pb2.Scope(
            tenant_id=record["tenant_id"], user_id=record["user_id"], agent_id=record.get("agent_id", "")
        ),
        reason=record.get("reason", ""),
        quality=memory_pb2.QualityScores(**record.get("quality", {})),
        topic=analysis.get("topic", ""),
        summary=analysis.get("summary", ""),
        event_ids=record.get("event_ids", []),
        event_count=len(record.get("event_ids", [])),
    )
    when = record.get("finished_at") or record.get("created_at")
    if when is not None:
        out.rejected_at.CopyFrom(epoch_to_timestamp(float(when)))
    return out


@dataclass
class Rejections:
    former: ChainFormer

    async def list(self, request: memory_pb2.ListRejectionsRequest) -> memory_pb2.ListRejectionsResponse:
        scope = request.scope
        size = request.page_size or DEFAULT_PAGE
        offset = decode_offset(request.page_token)
        records = await self.former.store.rejections(
            tenant_id=scope.tenant_id, user_id=scope.user_id, agent_id=scope.agent_id, skip=offset, limit=size + 1
        )
        return memory_pb2.ListRejectionsResponse(
            rejections=[rejection_to_proto(r) for r in records[:size]],
            next_page_token=encode_offset(offset + size) if len(records) > size else "",
        )

    async def admit(self, request: memory_pb2.AdmitRejectionRequest) -> memory_pb2.Chain:
        store = self.former.store
        record = await store.outcome(request.segment_id)
        if (
            record is None
            or not in_scope(record, request.scope)
            or not (record.get("outcome") == "rejected" or record.get("admitted_at") is not None)
        ):
            raise NotFound(f"rejected segment {request.segment_id!r} not found")
        events = [doc_to_event(d) for d in await store.event_log.docs(record.get("event_ids", []))]
        if not events:
            raise FailedPrecondition(f"segment {request.segment_id!r}: its events are no longer in the event log")
        if record.get("outcome") == "rejected":
            plan = {
                "outcome": "created",
                "chain_id": new_chain_id(request.segment_id),
                "state": "planned",
                "admitted_at": epoch(datetime.now(UTC)),
                "rejection": {"reason": record.get("reason", ""), "quality": record.get("quality", {})},
                "reason": "",
            }
            if not record.get("analysis"):  # an erasure cut the record down: analyse what is left
                plan["analysis"] = await self.former.analyse(events)
            record = await store.admit(request.segment_id, plan)
            if record is None:
                raise NotFound(f"rejected segment {request.segment_id!r} not found")
        if record.get("state") != "done":
            segment = formation_pb2.Segment(
                id=record["_id"],
                scope=memory_pb2.Scope(
                    tenant_id=record["tenant_id"], user_id=record["user_id"], agent_id=record["agent_id"]
                ),
                events=events,
            )
            await self.former.carry_out(segment, record)
        chain = await store.get(record["chain_id"])
        if chain is None:  # deleted (DeleteChain) since it was admitted
            raise NotFound(f"the chain of segment {request.segment_id!r} was deleted")
        return chain_to_proto(chain)
