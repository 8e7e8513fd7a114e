"""FormationService: segments in, chains out; and the chain RPCs ingest forwards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc

from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena_client.memory.v1 import memory_pb2
from athena_formation.curation.chain_deletion import ChainDeletion
from athena_formation.curation.chain_edits import ChainEditor
from athena_formation.curation.chain_events import ChainEvents
from athena_formation.curation.export import UserExport
from athena_formation.curation.rejections import Rejections
from athena_formation.forming.form_chain import ChainFormer
from athena_formation.lifecycle.erasure import FormationEraser, erased_response
from athena_formation.lifecycle.restore import ChainRestorer
from athena_formation.search.search_memory import Recall
from athena_formation.search.user_profile import UserProfile

__all__ = ["Curation", "FormationServicer"]


@dataclass
class Curation:
    """What the per-memory calls of the public API do (athena_formation.curation)."""

    deletion: ChainDeletion
    editor: ChainEditor
    events: ChainEvents
    rejections: Rejections
    restorer: ChainRestorer
    export: UserExport

    @classmethod
    def of(cls, former: ChainFormer) -> Curation:
        store = former.store
        return cls(
            deletion=ChainDeletion(store=store, vectors=former.vectors, lexical=former.lexical),
            editor=ChainEditor(former=former),
            events=ChainEvents(store=store),
            rejections=Rejections(former=former),
            restorer=ChainRestorer(former=former),
            export=UserExport(store=store, vectors=former.vectors),
        )


class FormationServicer(formation_pb2_grpc.FormationServiceServicer):
    def __init__(self, *, former: ChainFormer, recall: Recall, eraser: FormationEraser) -> None:
        self.former = former
        self.recall = recall
        self.eraser = eraser
        self.curation = Curation.of(former)
        self.profile = UserProfile(recall.store, changes=recall.lexical)

    async def FormChain(
        self, request: formation_pb2.FormChainRequest, context: grpc.aio.ServicerContext
    ) -> formation_pb2.FormChainResponse:
        # Events of a user forgotten after they were stored are dropped (docs/architecture.md, "Erasure").
        segment = await self.eraser.without_erased(request.segment)
        if segment is None:
            return erased_response()
        embeddings = request.embeddings if request.HasField("embeddings") else None
        response = await self.former.form(segment, embeddings=embeddings)
        # ForgetUser may have run while it was formed: what it wrote of events erased meanwhile is taken back.
        return await self.eraser.after_forming(segment, response)

    async def ForgetUser(
        self, request: memory_pb2.ForgetUserRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ForgetUserResponse:
        self.recall.open_terms.forget_user(
            request.tenant_id, request.user_id
        )  # words of open events kept between searches
        return await self.eraser.forget(request.tenant_id, request.user_id)

    async def SearchMemory(
        self, request: formation_pb2.SearchRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.SearchMemoryResponse:
        return await self.recall.search(request.request, request.open_segments)

    async def GetProfile(
        self, request: formation_pb2.ProfileRequest, context: grpc.aio.ServicerContext
    ) -> formation_pb2.ProfileResponse:
        facts = await self.profile.facts(request.scope, request.open_segments, limit=request.limit)
        return formation_pb2.ProfileResponse(facts=facts)

    async def GetChain(
        self, request: memory_pb2.GetChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        return await self.recall.get_chain(request)

    async def ListChains(
        self, request: memory_pb2.ListChainsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListChainsResponse:
        return await self.recall.list_chains(request)

    async def DeleteChain(
        self, request: memory_pb2.DeleteChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.DeleteChainResponse:
        return await self.curation.deletion.delete(request)

    async def UpdateChain(
        self, request: memory_pb2.UpdateChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        return await self.curation.editor.update(request)

    async def GetChainEvents(
        self, request: memory_pb2.GetChainEventsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.GetChainEventsResponse:
        return await self.curation.events.page(request)

    async def ListRejections(
        self, request: memory_pb2.ListRejectionsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListRejectionsResponse:
        return await self.curation.rejections.list(request)

    async def AdmitRejection(
        self, request: memory_pb2.AdmitRejectionRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        return await self.curation.rejections.admit(request)

    async def RestoreChain(
        self, request: memory_pb2.RestoreChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        return await self.curation.restorer.restore(request)

    async def ExportUser(
        self, request: memory_pb2.ExportUserRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[memory_pb2.ExportUserResponse]:
        async for item in self.curation.export.stream(request):
            yield item
