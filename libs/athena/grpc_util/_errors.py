"""The one place where Athena errors become gRPC status codes (with google.rpc rich details)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from athena.errors import (
    AthenaError,
    DependencyUnavailable,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    NotFound,
    PermanentTaskError,
    PermissionDenied,
    RetryableError,
    Unauthenticated,
)
from athena.grpc_util._wrapping import StreamBehaviour, UnaryBehaviour, UnaryWrappingInterceptor

__all__ = ["ErrorMappingInterceptor", "bad_request_violations", "error_from_rpc", "status_code_for"]

log = logging.getLogger("athena.grpc")

_CODES: list[tuple[type[AthenaError], grpc.StatusCode]] = [
    (InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (DependencyUnavailable, grpc.StatusCode.UNAVAILABLE),
    (RetryableError, grpc.StatusCode.UNAVAILABLE),
    (PermanentTaskError, grpc.StatusCode.FAILED_PRECONDITION),
]


def status_code_for(exc: BaseException) -> grpc.StatusCode:
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code
    return grpc.StatusCode.INTERNAL


def _rich_status(exc: AthenaError, code: grpc.StatusCode) -> status_pb2.Status:
    status = status_pb2.Status(code=code.value[0], message=str(exc))
    if isinstance(exc, InvalidArgument):
        detail = any_pb2.Any()
        detail.Pack(
            error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
                    for v in exc.violations
                ]
            )
        )
        status.details.append(detail)
    elif isinstance(exc, RetryableError):
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.RetryInfo(retry_delay={"seconds": 1}))
        status.details.append(detail)
    return status


def bad_request_violations(error: grpc.aio.AioRpcError | grpc.RpcError) -> list[tuple[str, str]]:
    """(field, description) pairs of a BadRequest detail carried by a failed call."""
    status = rpc_status.from_call(error)
    if status is None:
        return []
    out: list[tuple[str, str]] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            br = error_details_pb2.BadRequest()
            detail.Unpack(br)
            out.extend((v.field, v.description) for v in br.field_violations)
    return out


def error_from_rpc(error: grpc.aio.AioRpcError) -> AthenaError | None:
    """The Athena error an internal call's status stands for, so a forwarding service passes it on."""
    code = error.code()
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        violations = [FieldViolation(f, d) for f, d in bad_request_violations(error)]
        return InvalidArgument(violations or [FieldViolation("request", error.details() or "invalid")])
    simple: dict[grpc.StatusCode, type[AthenaError]] = {
        grpc.StatusCode.NOT_FOUND: NotFound,
        grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
        grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
        grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    }
    kind = simple.get(code)
    return kind(error.details() or code.name) if kind else None


class _Undecodable:
    """Stands in for a request whose bytes did not parse (see ErrorMappingInterceptor)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    # grpc answers a deserializer's exception with UNKNOWN; hand the handler a marker instead, so the
    # failure becomes INVALID_ARGUMENT like every other bad input.
    if deserializer is None:
        return None

    def deserialize(raw: bytes) -> Any:
        try:
            return deserializer(raw)
        except Exception as exc:  # DecodeError: corrupt wire format, invalid UTF-8 in a string field
            return _Undecodable(str(exc))

    return deserialize


class ErrorMappingInterceptor(UnaryWrappingInterceptor):
    """Turns AthenaError into its status code with rich details; anything else into a bare INTERNAL.

    A request that does not parse (corrupt protobuf, invalid UTF-8 in a string field) is INVALID_ARGUMENT
    with the field violation `request`. Interceptors outside this one receive such a request as an opaque
    marker and must not read request fields; those inside it (authentication) never see it.

    A server-streaming call is mapped the same way whether the error comes before its first response or
    mid-stream: the responses already sent stay sent, and the stream ends with the error's status.
    """

    def request_deserializer(self, deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
        return _tolerant(deserializer)

    def wrap_unary(self, method: str, inner: UnaryBehaviour) -> UnaryBehaviour:
        async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                _refuse_undecodable(request)
                return await inner(request, context)
            except grpc.aio.AbortError:
                raise
            except Exception as exc:
                await _abort_for(method, exc, context)

        return unary_unary

    def wrap_unary_stream(self, method: str, inner: StreamBehaviour) -> StreamBehaviour:
        async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncGenerator[Any, None]:
            try:
                _refuse_undecodable(request)
                async with aclosing(inner(request, context)) as responses:
                    async for response in responses:
                        yield response
            except grpc.aio.AbortError:
                raise
            except Exception as exc:
                await _abort_for(method, exc, context)

        return unary_stream


def _refuse_undecodable(request: Any) -> None:
    if isinstance(request, _Undecodable):
        raise InvalidArgument([FieldViolation("request", f"could not be parsed: {request.reason}")])


async def _abort_for(method: str, exc: Exception, context: grpc.aio.ServicerContext) -> None:
    """Ends the call with the status `exc` stands for (context.abort raises AbortError)."""
    if isinstance(exc, AthenaError):
        code = status_code_for(exc)
        if code is grpc.StatusCode.UNAVAILABLE:
            log.warning("%s: %s", method, exc)
        status = rpc_status.to_status(_rich_status(exc, code))
        await context.abort(status.code, status.details, status.trailing_metadata)
    log.error("%s failed", method, exc_info=exc)
    await context.abort(grpc.StatusCode.INTERNAL, "internal error")
