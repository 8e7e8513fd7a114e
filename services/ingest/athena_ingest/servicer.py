"""MemoryService: the public gRPC API (served by ingest)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import grpc
from redis.asyncio import Redis

from athena.errors import DependencyUnavailable, FieldViolation
from athena.formation_client import FormationClient
from athena.internal.v1 import formation_pb2
from athena.redis_util import redis_unavailable
from athena.stm import ShortTermWindow
from athena_client.memory.v1 import memory_pb2, memory_pb2_grpc
from athena_ingest.context_page import (
    decode_cursor,
    encode_cursor,
    events_budget,
    fit_chains,
    fit_profile,
    read_page,
)
from athena_ingest.erasure import Eraser, validate_forget
from athena_ingest.export import UserExporter
from athena_ingest.ingestor import Ingestor
from athena_ingest.open_events import OpenEvents
from athena_ingest.task_results import read_task_result
from athena_ingest.validation import (
    DEFAULT_PROFILE_FACTS,
    raise_if_any,
    validate_admit_rejection,
    validate_chain_request,
    validate_export_user,
    validate_get_chain,
    validate_get_chain_events,
    validate_get_context,
    validate_get_task_result,
    validate_list_chains,
    validate_list_rejections,
    validate_scope,
    validate_search,
    validate_update_chain,
)
from athena_ingest.window_flush import WindowFlushes

__all__ = ["MemoryServicer"]

log = logging.getLogger("athena.ingest")


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    def __init__(
        self,
        *,
        ingestor: Ingestor,
        window: ShortTermWindow,
        formation: FormationClient,
        eraser: Eraser,
        flushes: WindowFlushes,
        open_events: OpenEvents,
        exporter: UserExporter,
        redis: Redis,
    ) -> None:
        self.open_events = open_events
        self.exporter = exporter
        self.redis = redis
        self.eraser = eraser
        self.flushes = flushes
        self.ingestor = ingestor
        self.window = window
        self.formation = formation

    async def StoreEvent(
        self, request: memory_pb2.StoreEventRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.StoreEventResponse:
        if not request.HasField("event"):
            raise_if_any(
                [
                    *validate_scope(request.scope, has_scope=request.HasField("scope")),
                    FieldViolation("event", "is required"),
                ]
            )
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
        limit however large the window, and relevant memories come on the first page only (a WINDOW
        hit whose events are all on the page is left out: the caller has them already)."""
        raise_if_any(validate_get_context(request, limits=self.ingestor.limits))
        cursor = decode_cursor(request.page_token, max_remaining=self.ingestor.limits.max_window_events)
        chains, profile = await self._memories(request) if request.query and cursor is None else ([], [])
        with redis_unavailable():
            page = await read_page(
                self.window, request.scope, cursor, limit=request.limit, budget=events_budget(chains, profile)
            )
        if chains:
            shown = {e.id for e in page.events}
            chains = [
                h for h in chains if h.source != memory_pb2.HIT_SOURCE_WINDOW or not shown.issuperset(h.event_ids)
            ]
        return memory_pb2.GetContextResponse(
            events=page.events,
            relevant_chains=chains,
            profile=profile,
            next_page_token=encode_cursor(page.next) if page.next else "",
        )

    async def _memories(
        self, request: memory_pb2.GetContextRequest
    ) -> tuple[list[memory_pb2.SearchHit], list[memory_pb2.ProfileFact]]:
        """The memories most relevant to the request's query, best first, and the user's profile,
        newest first, each within its budget: formation answers both at once, from one read of the
        scope's open events."""
        segments = await self._open_segments(request.scope)
        search = memory_pb2.SearchMemoryRequest(
            scope=request.scope, query=request.query, limit=request.chain_limit or 3
        )
        profile = formation_pb2.ProfileRequest(
            scope=request.scope, limit=request.profile_limit or DEFAULT_PROFILE_FACTS, open_segments=segments
        )
        found = asyncio.ensure_future(self._search(search, segments))
        try:
            told = await self.formation.call(self.formation.stub.GetProfile, profile)
        except BaseException:
            found.cancel()  # the answer fails with the profile's error (a TaskGroup would wrap it)
            raise
        return fit_chains((await found).hits), fit_profile(told.facts)

    async def SearchMemory(
        self, request: memory_pb2.SearchMemoryRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.SearchMemoryResponse:
        raise_if_any(validate_search(request, limits=self.ingestor.limits))
        return await self._search(request, await self._open_segments(request.scope))

    async def _search(
        self, request: memory_pb2.SearchMemoryRequest, segments: list[formation_pb2.Segment]
    ) -> memory_pb2.SearchMemoryResponse:
        """Formation ranks the chains and the scope's open events (`segments`, open_events.py), read
        here: ingest owns Redis."""
        return await self.formation.call(
            self.formation.stub.SearchMemory, formation_pb2.SearchRequest(request=request, open_segments=segments)
        )

    async def _open_segments(self, scope: memory_pb2.Scope) -> list[formation_pb2.Segment]:
        """The scope's events in no chain yet. Without Redis, none: the chains are still searched and
        their facts read, alone (they do not need it)."""
        try:
            return await self.open_events.read(scope)
        except DependencyUnavailable as exc:
            log.warning("reading the chains alone: the open events could not be read (%s)", exc)
            return []

    async def GetChain(
        self, request: memory_pb2.GetChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        raise_if_any(validate_get_chain(request))
        return await self.formation.call(self.formation.stub.GetChain, request)

    async def ListChains(
        self, request: memory_pb2.ListChainsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListChainsResponse:
        raise_if_any(validate_list_chains(request))
        return await self.formation.call(self.formation.stub.ListChains, request)

    async def FlushWindow(
        self, request: memory_pb2.FlushWindowRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.FlushWindowResponse:
        raise_if_any(validate_scope(request.scope, has_scope=request.HasField("scope")))
        return await self.flushes.flush(request.scope)

    async def ForgetUser(
        self, request: memory_pb2.ForgetUserRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ForgetUserResponse:
        validate_forget(request)
        return await self.eraser.forget(request.tenant_id, request.user_id)

    # --- one memory at a time (formation owns the chains; ingest the log and Redis) -----------------
    async def DeleteChain(
        self, request: memory_pb2.DeleteChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.DeleteChainResponse:
        raise_if_any(validate_chain_request(request))
        return await self.formation.call(self.formation.stub.DeleteChain, request)

    async def UpdateChain(
        self, request: memory_pb2.UpdateChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        raise_if_any(validate_update_chain(request))
        return await self.formation.call(self.formation.stub.UpdateChain, request)

    async def GetChainEvents(
        self, request: memory_pb2.GetChainEventsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.GetChainEventsResponse:
        raise_if_any(validate_get_chain_events(request))
        return await self.formation.call(self.formation.stub.GetChainEvents, request)

    async def ListRejections(
        self, request: memory_pb2.ListRejectionsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListRejectionsResponse:
        raise_if_any(validate_list_rejections(request))
        return await self.formation.call(self.formation.stub.ListRejections, request)

    async def AdmitRejection(
        self, request: memory_pb2.AdmitRejectionRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        raise_if_any(validate_admit_rejection(request))
        return await self.formation.call(self.formation.stub.AdmitRejection, request)

    async def RestoreChain(
        self, request: memory_pb2.RestoreChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        raise_if_any(validate_chain_request(request))
        return await self.formation.call(self.formation.stub.RestoreChain, request)

    async def GetTaskResult(
        self, request: memory_pb2.GetTaskResultRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.TaskResult:
        raise_if_any(validate_get_task_result(request))
        return await read_task_result(self.redis, request.scope, request.task_id)

    async def ExportUser(
        self, request: memory_pb2.ExportUserRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[memory_pb2.ExportUserResponse]:
        raise_if_any(validate_export_user(request))
        async for item in self.exporter.stream(request):
            yield item
