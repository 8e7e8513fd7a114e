"""Prometheus metrics for every RPC a service handles, unary or server-streaming (go-grpc-prometheus style names)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import grpc

from athena.grpc_util._wrapping import StreamBehaviour, UnaryBehaviour, UnaryWrappingInterceptor
from athena.metrics import GRPC_HANDLED, GRPC_HANDLING_SECONDS, GRPC_STARTED

__all__ = ["MetricsInterceptor"]

_CODE_NAMES = {c.value[0]: c.name for c in grpc.StatusCode}


def _code_of(context: grpc.aio.ServicerContext) -> str:
    code = context.code() if hasattr(context, "code") else None
    if code is None:
        return "UNKNOWN"
    if isinstance(code, grpc.StatusCode):
        return code.name
    return _CODE_NAMES.get(code, "UNKNOWN")


def _failed_code(exc: BaseException, context: grpc.aio.ServicerContext) -> str:
    """The final code of a call that ended with `exc` (error mapping sits inside, so it is an abort or worse)."""
    if isinstance(exc, grpc.aio.AbortError):
        return _code_of(context)
    # grpc.aio cancels the handler when the client goes away; a stream the server stopped reading
    # (its write failed: the client is gone) is closed with GeneratorExit.
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return "CANCELLED"
    return "INTERNAL"


class MetricsInterceptor(UnaryWrappingInterceptor):
    """Outermost interceptor: counts starts, final status codes (after error mapping) and latency.

    A server-streaming call is one call like a unary one: started when grpc asks for its first
    response, timed until its stream ends, counted by the code it ends with.
    """

    def wrap_unary(self, method: str, inner: UnaryBehaviour) -> UnaryBehaviour:
        _, service, name = method.split("/", 2)
        # Label children resolved once per method: a labels() lookup per call is a lock and a dict probe.
        started_total = GRPC_STARTED.labels(service, name)
        handled_ok = GRPC_HANDLED.labels(service, name, "OK")
        seconds = GRPC_HANDLING_SECONDS.labels(service, name)
        perf_counter = time.perf_counter

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started_total.inc()
            started = perf_counter()
            code = "OK"
            try:
                return await inner(request, context)
            except BaseException as exc:
                code = _failed_code(exc, context)
                raise
            finally:
                (handled_ok if code == "OK" else GRPC_HANDLED.labels(service, name, code)).inc()
                seconds.observe(perf_counter() - started)

        return unary_unary

    def wrap_unary_stream(self, method: str, inner: StreamBehaviour) -> StreamBehaviour:
        _, service, name = method.split("/", 2)
        started_total = GRPC_STARTED.labels(service, name)
        handled_ok = GRPC_HANDLED.labels(service, name, "OK")
        seconds = GRPC_HANDLING_SECONDS.labels(service, name)
        perf_counter = time.perf_counter

        async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncGenerator[Any, None]:
            started_total.inc()
            started = perf_counter()
            code = "OK"
            try:
                async with aclosing(inner(request, context)) as items:
                    async for item in items:
                        yield item
            except BaseException as exc:
                code = _failed_code(exc, context)
                raise
            finally:
                (handled_ok if code == "OK" else GRPC_HANDLED.labels(service, name, code)).inc()
                seconds.observe(perf_counter() - started)

        return unary_stream
