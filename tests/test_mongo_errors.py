"""Which MongoDB errors reach a client as UNAVAILABLE (retry later) and which stay what they are.

The errors are PyMongo's own exception types, built as the driver builds them from a server reply.
"""

from __future__ import annotations

import pytest
from pymongo.errors import AutoReconnect, BulkWriteError, DuplicateKeyError, ExecutionTimeout, OperationFailure

from athena.errors import DependencyUnavailable
from athena.stores import mongo_unavailable


def _raised_inside(exc: Exception) -> BaseException:
    with pytest.raises(BaseException) as caught, mongo_unavailable():
        raise exc
    return caught.value


@pytest.mark.parametrize(
    "exc",
    [
        AutoReconnect("connection refused"),
        OperationFailure("interrupted at shutdown", code=11600),
        OperationFailure("exceeded time limit", code=262),
        ExecutionTimeout("operation exceeded time limit", code=50),
        OperationFailure("not master", code=999, details={"errorLabels": ["RetryableWriteError"]}),
        BulkWriteError({"writeErrors": [{"index": 3, "code": 91, "errmsg": "shutdown in progress"}], "nInserted": 3}),
    ],
    ids=["connection lost", "shutdown", "time limit", "max time", "retryable label", "bulk write cut by a shutdown"],
)
def test_a_passing_server_state_is_dependency_unavailable(exc: Exception) -> None:
    raised = _raised_inside(exc)
    assert isinstance(raised, DependencyUnavailable)
    assert raised.dependency == "mongodb"
    assert raised.__cause__ is exc


@pytest.mark.parametrize(
    "exc",
    [
        DuplicateKeyError("E11000 duplicate key", code=11000),
        OperationFailure("unknown operator: $foo", code=2),
        BulkWriteError(
            {"writeErrors": [{"index": 0, "code": 11000, "errmsg": "E11000 duplicate key"}], "nInserted": 0}
        ),
    ],
    ids=["duplicate key", "bad query", "bulk write of duplicates"],
)
def test_a_wrong_request_stays_the_error_it_is(exc: Exception) -> None:
    assert _raised_inside(exc) is exc
