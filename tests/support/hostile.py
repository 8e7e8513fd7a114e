"""Sending hostile requests to the public API and judging how it refused them."""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from athena.grpc_util import bad_request_violations

__all__ = ["ACCEPTABLE_REFUSALS", "MEMORY_METHODS", "call_raw", "check_refusal", "refused_fields"]

MEMORY_METHODS = (
    "StoreEvent",
    "StoreEvents",
    "GetContext",
    "SearchMemory",
    "GetChain",
    "ListChains",
    "ForgetUser",
    "FlushWindow",
    "DeleteChain",
    "UpdateChain",
    "GetChainEvents",
    "ListRejections",
    "AdmitRejection",
    "GetTaskResult",
    "RestoreChain",
)
"""The unary methods of MemoryService (ExportUser, a stream, is driven by tests/security)."""

ACCEPTABLE_REFUSALS = frozenset(
    {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED}
)
"""The only ways the public API may refuse a hostile request: never INTERNAL or UNKNOWN."""


async def call_raw(
    channel: grpc.aio.Channel,
    method: str,
    payload: bytes,
    *,
    metadata: Sequence[tuple[str, str]],
    timeout: float = 10.0,
) -> bytes:
    """Send `payload` as the serialized request of MemoryService/`method`, byte for byte."""
    call = channel.unary_unary(f"/athena.memory.v1.MemoryService/{method}")  # no serializers: bytes both ways
    return await call(payload, timeout=timeout, metadata=tuple(metadata))


def refused_fields(error: grpc.aio.AioRpcError) -> list[str]:
    """The field paths of an INVALID_ARGUMENT refusal (fails on any other status)."""
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, f"{error.code().name}: {error.details()}"
    return [f for f, _ in bad_request_violations(error)]


def check_refusal(error: grpc.aio.AioRpcError) -> None:
    """A refusal is acceptable only with one of ACCEPTABLE_REFUSALS, and INVALID_ARGUMENT names a field."""
    assert error.code() in ACCEPTABLE_REFUSALS, f"{error.code().name}: {error.details()}"
    if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
        fields = refused_fields(error)
        assert fields and all(fields), f"no field named: {error.details()}"
