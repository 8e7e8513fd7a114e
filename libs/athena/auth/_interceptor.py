"""The server interceptor that authenticates every call of the guarded services, binds its tenant and
checks its credential scope.

It sits innermost (after error mapping), so Unauthenticated and PermissionDenied become status codes in
the one place errors are mapped. Services it does not guard (health, reflection) pass untouched, so
Kubernetes probes need no credential. Unary and server-streaming methods are guarded (a stream is
checked before its first response); a client-streaming or bidirectional method of a guarded service is
refused outright, since its requests would reach the handler unchecked.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from contextlib import aclosing
from typing import Any

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from athena.auth._authenticator import Authenticator
from athena.auth._scopes import METHOD_SCOPES, ScopeTable
from athena.auth._tenancy import TenantLocator, bind_tenant
from athena.errors import PermissionDenied
from athena.grpc_util import StreamBehaviour, UnaryBehaviour, UnaryWrappingInterceptor

__all__ = ["AuthInterceptor"]

log = logging.getLogger("athena.auth")

Gate = Callable[[Any, grpc.aio.ServicerContext], None]
"""Admits a call (returns) or refuses it (raises Unauthenticated / PermissionDenied)."""


class AuthInterceptor(UnaryWrappingInterceptor):
    def __init__(
        self,
        authenticator: Authenticator,
        services: Iterable[ServiceDescriptor],
        *,
        tenant_bound: bool,
        method_scopes: Mapping[str, Mapping[str, str]] = METHOD_SCOPES,
    ) -> None:
        """`tenant_bound`: every request must stay inside the credential's tenant and the credential must
        hold the scope `method_scopes` names for the method (the public API). Both are resolved for every
        method now: a method without a tenant field or a scope entry fails here, not at its first call."""
        super().__init__()
        self.authenticator = authenticator
        descriptors = list(services)
        self._services = frozenset(s.full_name for s in descriptors)
        self._tenants = TenantLocator(descriptors) if tenant_bound else None
        self._scopes = ScopeTable(descriptors, method_scopes) if tenant_bound else None

    def _guards(self, method: str) -> bool:
        parts = method.split("/")
        return len(parts) != 3 or parts[1] in self._services  # an unparseable name is guarded: fail closed

    def wrap_handler(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler | None:
        if not self._guards(method):
            return handler
        if handler.unary_unary is None and handler.unary_stream is None:
            # The gate reads the one request before the handler runs; a request stream cannot be gated.
            log.error("%s: a client-streaming RPC, refused", method)
            return None
        return super().wrap_handler(method, handler)

    def _gate(self, method: str) -> Gate:
        authenticate = self.authenticator.authenticate
        if self._tenants is None or self._scopes is None:
            # The internal credential acts for every tenant and is not scope-checked.

            def untenanted(request: Any, context: grpc.aio.ServicerContext) -> None:
                authenticate(context.invocation_metadata())

            return untenanted
        location = self._tenants.location(method)
        needed = self._scopes.required(method)

        def tenanted(request: Any, context: grpc.aio.ServicerContext) -> None:
            principal = authenticate(context.invocation_metadata())
            if location is None or needed is None:
                raise PermissionDenied("no tenant binding for this method")
            # The scope first: it depends on the method alone, so a refusal says nothing about the request.
            if not principal.allows(needed):
                raise PermissionDenied(f"the credential lacks the {needed} scope")
            bind_tenant(request, location, principal.tenant_id)

        return tenanted

    def wrap_unary(self, method: str, inner: UnaryBehaviour) -> UnaryBehaviour:
        admit = self._gate(method)

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            admit(request, context)
            return await inner(request, context)

        return unary_unary

    def wrap_unary_stream(self, method: str, inner: StreamBehaviour) -> StreamBehaviour:
        admit = self._gate(method)

        async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncGenerator[Any, None]:
            admit(request, context)  # before the handler runs, so before its first response
            async with aclosing(inner(request, context)) as responses:
                async for response in responses:
                    yield response

        return unary_stream
