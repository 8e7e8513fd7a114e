"""FormationService: segments in, chains out."""

from __future__ import annotations

from typing import Any

import grpc

from athena.config import Settings
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena_formation.vector_index import VectorIndex

__all__ = ["FormationServicer"]


class FormationServicer(formation_pb2_grpc.FormationServiceServicer):
    def __init__(self, *, settings: Settings, mongo: Any, vectors: VectorIndex) -> None:
        self.settings = settings
        self.mongo = mongo
        self.vectors = vectors

    async def FormChain(
        self, request: formation_pb2.FormChainRequest, context: grpc.aio.ServicerContext
    ) -> formation_pb2.FormChainResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "chain formation is not implemented yet")
        raise AssertionError("unreachable")
