"""Prometheus metrics for every unary RPC a service handles (go-grpc-prometheus style names)."""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable

import grpc

from athena.metrics import GRPC_HANDLED, GRPC_HANDLING_SECONDS, GRPC_STARTED

__all__ = ["MetricsInterceptor"]


def _code_of(context: grpc.aio.ServicerContext) -> str:
    code = context.code() if hasattr(context, "code") else None
    if code is None:
        return "UNKNOWN"
    if isinstance(code, grpc.StatusCode):
        return code.name
    return next((c.name for c in grpc.StatusCode if c.value[0] == code), "UNKNOWN")


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    """Outermost interceptor: counts starts, final status codes (after error mapping) and latency."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        _, service, method = handler_call_details.method.split("/", 2)

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            GRPC_STARTED.labels(service, method).inc()
            started = time.perf_counter()
            code = "OK"
            try:
                return await inner(request, context)
            except grpc.aio.AbortError:
                code = _code_of(context)
                raise
            except BaseException:
                code = "INTERNAL"
                raise
            finally:
                GRPC_HANDLED.labels(service, method, code).inc()
                GRPC_HANDLING_SECONDS.labels(service, method).observe(time.perf_counter() - started)

        return grpc.unary_unary_rpc_method_handler(
            unary_unary, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer
        )
