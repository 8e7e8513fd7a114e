"""A cognitive_chains document as the public Chain message."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from athena.events import epoch_to_timestamp, to_timestamp
from athena_client.memory.v1 import memory_pb2
from athena_formation.store.chain_agents import chain_agents
from athena_formation.store.chain_store import from_epoch

__all__ = ["chain_to_proto"]

_STATUS = {"active": memory_pb2.CHAIN_STATUS_ACTIVE, "archived": memory_pb2.CHAIN_STATUS_ARCHIVED}


def chain_to_proto(doc: Mapping[str, Any]) -> memory_pb2.Chain:
    chain = memory_pb2.Chain(
        id=doc["_id"],
        scope=memory_pb2.Scope(tenant_id=doc["tenant_id"], user_id=doc["user_id"], agent_id=doc["agent_id"]),
        topic=doc.get("topic", ""),
        subtopics=[memory_pb2.Topic(name=t["name"], confidence=t["confidence"]) for t in doc.get("subtopics", [])],
        summary=doc.get("summary", ""),
        entities=[memory_pb2.Entity(text=e["text"], kind=e["kind"]) for e in doc.get("entities", [])],
        quality=memory_pb2.QualityScores(**doc.get("quality", {})),
        heat_score=float(doc.get("heat_score", 0.0)),
        recall_strength=float(doc.get("recall_strength", 0.0)),
        lifecycle=doc.get("lifecycle", ""),
        status=_STATUS.get(doc.get("status", ""), memory_pb2.CHAIN_STATUS_UNSPECIFIED),
        event_ids=doc.get("event_ids", []),
        event_count=int(doc.get("event_count", 0)),
        merge_count=int(doc.get("merge_count", 0)),
        analysis_path=doc.get("analysis_path", ""),
        recall_count=int(doc.get("recall_count", 0)),
        pinned=bool(doc.get("pinned", False)),
        lasting_fact=bool(doc.get("lasting_fact", False)),
        importance=float(doc.get("importance", 0.0)),
        edited_fields=doc.get("edited_fields", []),
        agent_ids=chain_agents(doc),
    )
    for field in ("created_at", "updated_at", "last_accessed_at", "first_event_at", "last_event_at"):
        value = doc.get(field)
        if value is not None:
            getattr(chain, field).CopyFrom(
                to_timestamp(from_epoch(value)) if isinstance(value, datetime) else epoch_to_timestamp(float(value))
            )
    return chain
