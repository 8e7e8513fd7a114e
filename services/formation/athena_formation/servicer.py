"""FormationService: segments in, chains out; and the chain RPCs ingest forwards."""

from __future__ import annotations

import grpc

from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena_client.memory.v1 import memory_pb2
from athena_formation.forming.form_chain import ChainFormer
from athena_formation.lifecycle.erasure import FormationEraser, erased_response
from athena_formation.search.search_memory import Recall

__all__ = ["FormationServicer"]


class FormationServicer(formation_pb2_grpc.FormationServiceServicer):
    def __init__(self, *, former: ChainFormer, recall: Recall, eraser: FormationEraser) -> None:
        self.former = former
        self.recall = recall
        self.eraser = eraser

    async def FormChain(
        self, request: formation_pb2.FormChainRequest, context: grpc.aio.ServicerContext
    ) -> formation_pb2.FormChainResponse:
        # Events of a user forgotten after they were stored are dropped (docs/architecture.md, "Erasure").
        segment = await self.eraser.without_erased(request.segment)
        if segment is None:
            return erased_response()
        response = await self.former.form(segment)
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

    async def GetChain(
        self, request: memory_pb2.GetChainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.Chain:
        return await self.recall.get_chain(request)

    async def ListChains(
        self, request: memory_pb2.ListChainsRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListChainsResponse:
        return await self.recall.list_chains(request)
