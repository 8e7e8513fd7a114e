"""Prometheus metrics for every unary RPC a service handles (go-grpc-prometheus style names)."""

from __future__ import annotations

import time
from typing import Any

import grpc

from athena.grpc_util._wrapping import UnaryBehaviour, UnaryWrappingInterceptor
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


class MetricsInterceptor(UnaryWrappingInterceptor):
    """Outermost interceptor: counts starts, final status codes (after error mapping) and latency."""

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
            except grpc.aio.AbortError:
                code = _code_of(context)
                raise
            except BaseException:
                code = "INTERNAL"
                raise
            finally:
                (handled_ok if code == "OK" else GRPC_HANDLED.labels(service, name, code)).inc()
                seconds.observe(perf_counter() - started)

        return unary_unary
