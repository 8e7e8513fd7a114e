"""The one way Athena's server interceptors wrap a handler: once per method, not once per call.

Handlers with a single request are wrapped: unary-unary ones (`wrap_unary`) and server-streaming
ones (`wrap_unary_stream`). Client-streaming and bidirectional handlers pass untouched (no Athena
service has one); an interceptor that must not let them through refuses them in `wrap_handler`.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import grpc

__all__ = ["StreamBehaviour", "UnaryBehaviour", "UnaryWrappingInterceptor", "as_stream_behaviour"]

UnaryBehaviour = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
StreamBehaviour = Callable[[Any, grpc.aio.ServicerContext], AsyncGenerator[Any, None]]
"""A server-streaming handler as an async generator function: (request, context) -> responses."""
Deserializer = Callable[[bytes], Any] | None


def as_stream_behaviour(handler: Callable[[Any, Any], Any]) -> StreamBehaviour:
    """A server-streaming handler in any of the forms grpc.aio accepts, as an async generator function.

    grpc.aio serves an async generator function, a coroutine function writing with `context.write`,
    or a function returning a (sync) iterator. Interceptors wrap one shape: the async generator, which
    is also what grpc.aio needs from the outermost handler to iterate it.
    """
    if inspect.isasyncgenfunction(handler):
        return handler

    async def adapted(request: Any, context: grpc.aio.ServicerContext) -> AsyncGenerator[Any, None]:
        result = handler(request, context)
        if inspect.isawaitable(result):
            result = await result  # a coroutine handler wrote its responses with context.write
        if result is None:
            return
        if hasattr(result, "__aiter__"):
            async for item in result:
                yield item
        else:
            for item in result:
                yield item

    return adapted


class UnaryWrappingInterceptor(grpc.aio.ServerInterceptor):
    """Base of interceptors that wrap the behaviour of handlers taking one request.

    grpc.aio runs `intercept_service` on every call. Registered services hand back the same handler
    object for a method on every lookup, so the wrapped handler (closure, label children, new method
    handler) is built on a method's first call and reused while the inner handler is that same object;
    an inner interceptor that builds a new handler per call just makes every call a rebuild.
    Subclasses say how to wrap (`wrap_unary`, `wrap_unary_stream`), and may replace the deserializer or
    refuse a handler.
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
        """The handler served for `method`: unary and server-streaming handlers wrapped, others untouched."""
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self.wrap_unary(method, handler.unary_unary),
                request_deserializer=self.request_deserializer(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self.wrap_unary_stream(method, as_stream_behaviour(handler.unary_stream)),
                request_deserializer=self.request_deserializer(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        return handler

    def request_deserializer(self, deserializer: Deserializer) -> Deserializer:
        return deserializer

    def wrap_unary(self, method: str, inner: UnaryBehaviour) -> UnaryBehaviour:
        raise NotImplementedError

    def wrap_unary_stream(self, method: str, inner: StreamBehaviour) -> StreamBehaviour:
        """Must return an async generator function (grpc.aio iterates the outermost one)."""
        raise NotImplementedError
