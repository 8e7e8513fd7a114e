"""MemoryService: the public gRPC API (served by ingest)."""

from __future__ import annotations

import grpc

from athena.errors import FieldViolation
from athena.formation_client import FormationClient
from athena.memory.v1 import memory_pb2, memory_pb2_grpc
from athena.redis_util import redis_unavailable
from athena.stm import ShortTermWindow
from athena_ingest.ingestor import Ingestor
from athena_ingest.validation import (
    MAX_SEARCH_LIMIT,
    raise_if_any,
    validate_get_chain,
    validate_list_chains,
    validate_scope,
    validate_search,
)

__all__ = ["MemoryServicer"]

_MAX_CONTEXT_LIMIT = 1000


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    def __init__(self, *, ingestor: Ingestor, window: ShortTermWindow, formation: FormationClient) -> None:
        self.ingestor = ingestor
        self.window = window
        self.formation = formation

    async def StoreEvent(
        self, request: memory_pb2.StoreEventRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.StoreEventResponse:
        if not request.HasField("event"):
            raise_if_any([*validate_scope(request.scope, has_scope=request.HasField("scope")), FieldViolation("event", "is required")])
        self.ingestor.validate(request.scope, request.HasField("scope"), [request.event], batch=False)
        (result,) = await self.ingestor.store(request.scope, [request.event])
        return result

    async def StoreEvents(
        self, request: memory_pb2.StoreEventsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.StoreEventsResponse:
        self.ingestor.validate(request.scope, request.HasField("scope"), request.events, batch=True)
        results = await self.ingestor.store(request.scope, request.events)
        return memory_pb2.StoreEventsResponse(results=results)

    async def GetContext(
        self, request: memory_pb2.GetContextRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.GetContextResponse:
        violations = validate_scope(request.scope, has_scope=request.HasField("scope"))
        if not 0 <= request.limit <= _MAX_CONTEXT_LIMIT:
            violations.append(FieldViolation("limit", f"must be between 0 and {_MAX_CONTEXT_LIMIT}"))
        raise_if_any(violations)
        with redis_unavailable():
            events = await self.window.read(request.scope, limit=request.limit)
        return memory_pb2.GetContextResponse(events=events)
