"""Client side: channel interceptors that add a bearer credential to every call of raw stubs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from athena.auth._authenticator import AUTHORIZATION, bearer_metadata

__all__ = ["BearerCredentialInterceptor", "BearerCredentialStreamInterceptor", "bearer_credential_interceptors"]


class _BearerCredential:
    def __init__(self, credential: str) -> None:
        self._metadata = bearer_metadata(credential)

    def _with_credential(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        own = [(k, v) for k, v in (details.metadata or ()) if k.lower() != AUTHORIZATION]
        return grpc.aio.ClientCallDetails(
            method=details.method,
            timeout=details.timeout,
            metadata=grpc.aio.Metadata(*own, *self._metadata),
            credentials=details.credentials,
            wait_for_ready=details.wait_for_ready,
        )


class BearerCredentialInterceptor(_BearerCredential, grpc.aio.UnaryUnaryClientInterceptor):
    """`grpc.aio.insecure_channel(target, interceptors=[BearerCredentialInterceptor(key)])`: every unary
    call of the channel's stubs then authenticates, without each call passing metadata. For
    server-streaming calls too (ExportUser), use `bearer_credential_interceptors(key)`."""

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Any],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        return await continuation(self._with_credential(client_call_details), request)


class BearerCredentialStreamInterceptor(_BearerCredential, grpc.aio.UnaryStreamClientInterceptor):
    """The same for server-streaming calls. (A channel files each interceptor under the first call kind
    it matches, so one object cannot serve both kinds.)"""

    async def intercept_unary_stream(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Any],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        return await continuation(self._with_credential(client_call_details), request)


def bearer_credential_interceptors(credential: str) -> list[grpc.aio.ClientInterceptor]:
    """`interceptors=` of a channel whose unary and server-streaming calls all carry `credential`."""
    return [BearerCredentialInterceptor(credential), BearerCredentialStreamInterceptor(credential)]
