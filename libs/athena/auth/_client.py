"""Client side: a channel interceptor that adds a bearer credential to every unary call (raw stubs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from athena.auth._authenticator import AUTHORIZATION, bearer_metadata

__all__ = ["BearerCredentialInterceptor"]


class BearerCredentialInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    """`grpc.aio.insecure_channel(target, interceptors=[BearerCredentialInterceptor(key)])`: every stub of
    the channel then authenticates, without each call passing metadata."""

    def __init__(self, credential: str) -> None:
        self._metadata = bearer_metadata(credential)

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Any],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        own = [(k, v) for k, v in (client_call_details.metadata or ()) if k.lower() != AUTHORIZATION]
        details = grpc.aio.ClientCallDetails(
            method=client_call_details.method,
            timeout=client_call_details.timeout,
            metadata=grpc.aio.Metadata(*own, *self._metadata),
            credentials=client_call_details.credentials,
            wait_for_ready=client_call_details.wait_for_ready,
        )
        return await continuation(details, request)
