"""The one way Athena's server interceptors wrap a unary handler: once per method, not once per call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

__all__ = ["UnaryBehaviour", "UnaryWrappingInterceptor"]

UnaryBehaviour = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
Deserializer = Callable[[bytes], Any] | None


class UnaryWrappingInterceptor(grpc.aio.ServerInterceptor):
    """Base of interceptors that wrap the behaviour of unary handlers.

    grpc.aio runs `intercept_service` on every call. Registered services hand back the same handler
    object for a method on every lookup, so the wrapped handler (closure, label children, new method
    handler) is built on a method's first call and reused while the inner handler is that same object;
    an inner interceptor that builds a new handler per call just makes every call a rebuild.
    Subclasses say how to wrap (`wrap_unary`), and may replace the deserializer or refuse a handler.
    """

    def __init__(self) -> None:
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler | None]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        if handler is None:  # unknown method: nothing to wrap, nothing cached
            return None
        method: str = handler_call_details.method
        hit = self._wrapped.get(method)
        if hit is not None and hit[0] is handler:
            return hit[1]
        wrapped = self.wrap_handler(method, handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def wrap_handler(self, method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler | None:
        """The handler served for `method`; by default unary handlers wrapped, others untouched."""
        if handler.unary_unary is None:
            return handler
        return grpc.unary_unary_rpc_method_handler(
            self.wrap_unary(method, handler.unary_unary),
            request_deserializer=self.request_deserializer(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )

    def request_deserializer(self, deserializer: Deserializer) -> Deserializer:
        return deserializer

    def wrap_unary(self, method: str, inner: UnaryBehaviour) -> UnaryBehaviour:
        raise NotImplementedError
