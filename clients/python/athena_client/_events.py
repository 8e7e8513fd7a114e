"""Events as a caller writes them (role and type names), and their wire form (NewEvent)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Optional

from google.protobuf.timestamp_pb2 import Timestamp

from athena_client.memory.v1 import memory_pb2

__all__ = ["ROLES", "TYPES", "EventInput", "event_kind", "to_timestamp"]

# Role name -> (role, the event type when the caller names none). "assistant" is OpenAI's name of the
# agent; a "tool" message (a tool's or function's result handed back to the agent) is something the
# agent observed: an agent-side observation event.
ROLES: Mapping[str, tuple[memory_pb2.Role.ValueType, memory_pb2.EventType.ValueType]] = {
    "user": (memory_pb2.ROLE_USER, memory_pb2.EVENT_TYPE_MESSAGE),
    "agent": (memory_pb2.ROLE_AGENT, memory_pb2.EVENT_TYPE_MESSAGE),
    "assistant": (memory_pb2.ROLE_AGENT, memory_pb2.EVENT_TYPE_MESSAGE),
    "system": (memory_pb2.ROLE_SYSTEM, memory_pb2.EVENT_TYPE_MESSAGE),
    "tool": (memory_pb2.ROLE_AGENT, memory_pb2.EVENT_TYPE_OBSERVATION),
}
TYPES: Mapping[str, memory_pb2.EventType.ValueType] = {
    "message": memory_pb2.EVENT_TYPE_MESSAGE,
    "thought": memory_pb2.EVENT_TYPE_THOUGHT,
    "action": memory_pb2.EVENT_TYPE_ACTION,
    "observation": memory_pb2.EVENT_TYPE_OBSERVATION,
}


def event_kind(
    role: str, type: Optional[str] = None
) -> tuple[memory_pb2.Role.ValueType, memory_pb2.EventType.ValueType]:
    """(Role, EventType) of a role name and an optional type name (None: the role's default type:
    observation for "tool", message for the others). ValueError on a name that is neither."""
    kind = ROLES.get(role)
    if kind is None:
        raise ValueError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
    if type is None:
        return kind
    event_type = TYPES.get(type)
    if event_type is None:
        raise ValueError(f"unknown event type {type!r}: use one of {', '.join(TYPES)}")
    return kind[0], event_type


def to_timestamp(dt: datetime) -> Timestamp:
    """A Timestamp of a datetime; a naive one is taken as UTC (as the server stores every time)."""
    ts = Timestamp()
    ts.FromDatetime(dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc))
    return ts


@dataclass(frozen=True)
class EventInput:
    """One event to store. `role`: "user", "agent" (or "assistant"), "system", or "tool" (an
    observation of the agent's). `type`: "message", "thought", "action" or "observation"; None takes
    the role's default (observation for "tool", else message). A name outside these is a ValueError
    here, before anything is sent."""

    role: str
    content: str
    type: Optional[str] = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    timestamp: Optional[datetime] = None
    event_id: Optional[str] = None
    """Idempotency id; None: the client draws one (once, before the first attempt)."""

    def __post_init__(self) -> None:
        event_kind(self.role, self.type)

    def to_proto(self) -> memory_pb2.NewEvent:
        role, event_type = event_kind(self.role, self.type)
        event = memory_pb2.NewEvent(
            role=role,
            type=event_type,
            content=self.content,
            metadata=dict(self.metadata),
            # Set before the first attempt, so that a retry cannot store the event twice.
            event_id=self.event_id or uuid.uuid4().hex,
        )
        if self.timestamp is not None:
            event.timestamp.CopyFrom(to_timestamp(self.timestamp))
        return event
