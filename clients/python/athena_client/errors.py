"""Reading the details of a refused call."""

from __future__ import annotations

from google.rpc import error_details_pb2, status_pb2

__all__ = ["field_violations"]

_DETAILS_KEY = "grpc-status-details-bin"


def field_violations(error: object) -> list[tuple[str, str]]:
    """(field, description) of each field an INVALID_ARGUMENT names (its google.rpc.BadRequest
    detail), e.g. [("event.content", "must not be empty")]; [] when the error carries none. `error`:
    the grpc.RpcError either client raised."""
    trailing = getattr(error, "trailing_metadata", None)
    metadata = trailing() if callable(trailing) else None
    out: list[tuple[str, str]] = []
    for key, value in metadata or ():
        if key != _DETAILS_KEY or not isinstance(value, bytes):
            continue
        for detail in status_pb2.Status.FromString(value).details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad_request = error_details_pb2.BadRequest()
                detail.Unpack(bad_request)
                out.extend((v.field, v.description) for v in bad_request.field_violations)
    return out
