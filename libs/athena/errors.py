"""Athena's exception hierarchy. Whether an error is worth retrying is part of its type.

    AthenaError
    ├── InvalidArgument          bad input; carries field violations       (never retried)
    ├── NotFound                                                           (never retried)
    ├── Unauthenticated / PermissionDenied                                 (never retried)
    ├── FailedPrecondition       the request is valid but the memory's state refuses it
    ├── PermanentTaskError       a queued task that can never succeed      (dead-lettered at once)
    └── RetryableError           worth another try later
        └── DependencyUnavailable   Redis, MongoDB, Milvus, formation... is down or timed out

The mapping to gRPC status codes lives in one place: athena.grpc_util.errors.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AthenaError",
    "DependencyUnavailable",
    "FailedPrecondition",
    "FieldViolation",
    "InvalidArgument",
    "NotFound",
    "PermanentTaskError",
    "PermissionDenied",
    "RetryableError",
    "Unauthenticated",
]


class AthenaError(Exception):
    """Base of every error Athena raises on purpose."""


@dataclass(frozen=True)
class FieldViolation:
    field: str
    """Path of the offending field, e.g. "events[3].content"."""
    description: str


class InvalidArgument(AthenaError):
    def __init__(self, violations: list[FieldViolation]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{v.field}: {v.description}" for v in violations))


class NotFound(AthenaError):
    pass


class Unauthenticated(AthenaError):
    pass


class PermissionDenied(AthenaError):
    pass


class FailedPrecondition(AthenaError):
    """E.g. a rejected segment whose events are no longer in the log cannot be admitted."""


class PermanentTaskError(AthenaError):
    """A task that will fail the same way however often it runs."""


class RetryableError(AthenaError):
    """Transient: the same call may succeed later."""


class DependencyUnavailable(RetryableError):
    def __init__(self, dependency: str, detail: str = "") -> None:
        self.dependency = dependency
        super().__init__(f"{dependency} is unavailable" + (f": {detail}" if detail else ""))
