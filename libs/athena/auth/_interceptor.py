"""The server interceptor that authenticates every call of the guarded services, and binds its tenant.

It sits innermost (after error mapping), so Unauthenticated and PermissionDenied become status codes in
the one place errors are mapped. Services it does not guard (health, reflection) pass untouched, so
Kubernetes probes need no credential.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Iterable

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from athena.auth._authenticator import Authenticator
from athena.auth._tenancy import TenantLocator, bind_tenant
from athena.errors import PermissionDenied

__all__ = ["AuthInterceptor"]

log = logging.getLogger("athena.auth")


class AuthInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, authenticator: Authenticator, services: Iterable[ServiceDescriptor], *, tenant_bound: bool) -> None:
        """`tenant_bound`: every request must stay inside the credential's tenant (the public API)."""
        self.authenticator = authenticator
        descriptors = list(services)
        self._services = frozenset(s.full_name for s in descriptors)
        self._tenants = TenantLocator(descriptors) if tenant_bound else None

    def _guards(self, method: str) -> bool:
        parts = method.split("/")
        return len(parts) != 3 or parts[1] in self._services  # an unparseable name is guarded: fail closed

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        handler = await continuation(handler_call_details)
        if handler is None or not self._guards(method):
            return handler
        if handler.unary_unary is None:
            # Only unary RPCs are guarded; anything else on a guarded service is refused outright.
            log.error("%s: not a unary RPC, refused", method)
            return None
        inner = handler.unary_unary
        location = self._tenants.location(method) if self._tenants is not None else None

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            principal = self.authenticator.authenticate(context.invocation_metadata())
            if self._tenants is not None:
                if location is None:
                    raise PermissionDenied("no tenant binding for this method")
                bind_tenant(request, location, principal.tenant_id)
            return await inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            unary_unary, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer
        )
