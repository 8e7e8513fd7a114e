"""The server interceptor that authenticates every call of the guarded services, and binds its tenant.

It sits innermost (after error mapping), so Unauthenticated and PermissionDenied become status codes in
the one place errors are mapped. Services it does not guard (health, reflection) pass untouched, so
Kubernetes probes need no credential.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from athena.auth._authenticator import Authenticator
from athena.auth._tenancy import TenantLocator, bind_tenant
from athena.errors import PermissionDenied
from athena.grpc_util import UnaryBehaviour, UnaryWrappingInterceptor

__all__ = ["AuthInterceptor"]

log = logging.getLogger("athena.auth")


class AuthInterceptor(UnaryWrappingInterceptor):
    def __init__(
        self, authenticator: Authenticator, services: Iterable[ServiceDescriptor], *, tenant_bound: bool
    ) -> None:
        """`tenant_bound`: every request must stay inside the credential's tenant (the public API)."""
        super().__init__()
        self.authenticator = authenticator
        descriptors = list(services)
        self._services = frozenset(s.full_name for s in descriptors)
        self._tenants = TenantLocator(descriptors) if tenant_bound else None

    def _guards(self, method: str) -> bool:
        parts = method.split("/")
        return len(parts) != 3 or parts[1] in self._services  # an unparseable name is guarded: fail closed

    def wrap_handler(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler | None:
        if not self._guards(method):
            return handler
        if handler.unary_unary is None:
            # Only unary RPCs are guarded; anything else on a guarded service is refused outright.
            log.error("%s: not a unary RPC, refused", method)
            return None
        return super().wrap_handler(method, handler)

    def wrap_unary(self, method: str, inner: UnaryBehaviour) -> UnaryBehaviour:
        authenticate = self.authenticator.authenticate
        if self._tenants is None:

            async def untenanted(request: Any, context: grpc.aio.ServicerContext) -> Any:
                authenticate(context.invocation_metadata())
                return await inner(request, context)

            return untenanted
        location = self._tenants.location(method)

        async def tenanted(request: Any, context: grpc.aio.ServicerContext) -> Any:
            principal = authenticate(context.invocation_metadata())
            if location is None:
                raise PermissionDenied("no tenant binding for this method")
            bind_tenant(request, location, principal.tenant_id)
            return await inner(request, context)

        return tenanted
