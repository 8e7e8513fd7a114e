"""The Python client of Athena's public API (athena.memory.v1.MemoryService).

AthenaClient is synchronous (grpc's blocking channel); AsyncAthenaClient has the same methods for
asyncio. Both are context managers. The API's messages are in athena_client.memory.v1.memory_pb2
(the server imports the same module). Nothing here imports the server or registers metrics.
"""

from __future__ import annotations

from athena_client._async import AsyncAthenaClient
from athena_client._common import ClientOptions, ContextPage
from athena_client._events import ROLES, TYPES, EventInput
from athena_client._sync import AthenaClient
from athena_client.errors import field_violations
from athena_client.memory.v1.memory_pb2 import (
    Chain,
    DeleteChainResponse,
    Event,
    ExportUserResponse,
    NewEvent,
    Rejection,
    Scope,
    SearchHit,
    TaskResult,
)
from athena_client.retry import Backoff, ExponentialFullJitter

__version__ = "0.1.0"

__all__ = [
    "ROLES",
    "TYPES",
    "AsyncAthenaClient",
    "AthenaClient",
    "Backoff",
    "Chain",
    "ClientOptions",
    "ContextPage",
    "DeleteChainResponse",
    "Event",
    "EventInput",
    "ExponentialFullJitter",
    "ExportUserResponse",
    "NewEvent",
    "Rejection",
    "Scope",
    "SearchHit",
    "TaskResult",
    "__version__",
    "field_violations",
]
