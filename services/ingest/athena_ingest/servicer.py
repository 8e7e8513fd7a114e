"""MemoryService: the public gRPC API (served by ingest)."""

from __future__ import annotations

import grpc

from athena.errors import FieldViolation
from athena.formation_client import FormationClient
from athena.memory.v1 import memory_pb2, memory_pb2_grpc
from athena.redis_util import redis_unavailable
from athena.stm import ShortTermWindow
from athena_ingest.context_page import decode_cursor, encode_cursor, events_budget, fit_chains, read_page
from athena_ingest.erasure import Eraser, validate_forget
from athena_ingest.ingestor import Ingestor
from athena_ingest.validation import (
    raise_if_any,
    validate_get_chain,
    validate_get_context,
    validate_list_chains,
    validate_scope,
    validate_search,
)

__all__ = ["MemoryServicer"]


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    def __init__(self, *, ingestor: Ingestor, window: ShortTermWindow, formation: FormationClient, eraser: Eraser) -> None:
        self.eraser = eraser
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
        """One page of the window (athena_ingest.context_page): the answer stays under the transport
        limit however large the window, and relevant chains come on the first page only."""
        raise_if_any(validate_get_context(request, limits=self.ingestor.limits))
        cursor = decode_cursor(request.page_token, max_remaining=self.ingestor.limits.max_window_events)
        chains = await self._relevant_chains(request) if request.query and cursor is None else []
        with redis_unavailable():
            page = await read_page(self.window, request.scope, cursor, limit=request.limit, budget=events_budget(chains))
        return memory_pb2.GetContextResponse(
            events=page.events, relevant_chains=chains, next_page_token=encode_cursor(page.next) if page.next else ""
        )

    async def _relevant_chains(self, request: memory_pb2.GetContextRequest) -> list[memory_pb2.SearchHit]:
        """The chains most relevant to the request's query, best first, within CHAINS_BUDGET_BYTES."""
        search = memory_pb2.SearchMemoryRequest(scope=request.scope, query=request.query, limit=request.chain_limit or 3)
        found = await self.formation.call(self.formation.stub.SearchMemory, search)
        return fit_chains(found.hits)

    async def SearchMemory(
        self, request: memory_pb2.SearchMemoryRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.SearchMemoryResponse:
        raise_if_any(validate_search(request, limits=self.ingestor.limits))
        return await self.formation.call(self.formation.stub.SearchMemory, request)

    async def GetChain(self, request: memory_pb2.GetChainRequest, context: grpc.aio.ServicerContext) -> memory_pb2.Chain:
        raise_if_any(validate_get_chain(request))
        return await self.formation.call(self.formation.stub.GetChain, request)

    async def ListChains(
        self, request: memory_pb2.ListChainsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListChainsResponse:
        raise_if_any(validate_list_chains(request))
        return await self.formation.call(self.formation.stub.ListChains, request)

    async def ForgetUser(
        self, request: memory_pb2.ForgetUserRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ForgetUserResponse:
        validate_forget(request)
        return await self.eraser.forget(request.tenant_id, request.user_id)
