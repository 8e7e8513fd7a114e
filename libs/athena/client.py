"""A small typed async client of Athena's public API, for agent platforms, the demo and the tests.

Every call carries a deadline, and UNAVAILABLE is retried with exponential backoff and full jitter.
StoreEvent is made safe to retry by giving every event an event_id before the first attempt.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

import grpc

from athena.auth import AUTHORIZATION, bearer_metadata
from athena.events import to_timestamp
from athena.memory.v1 import memory_pb2, memory_pb2_grpc
from athena.queue import Backoff, ExponentialFullJitter

__all__ = ["AthenaClient", "ClientOptions", "ContextPage", "EventInput"]

T = TypeVar("T")

ROLES = {"user": memory_pb2.ROLE_USER, "agent": memory_pb2.ROLE_AGENT, "system": memory_pb2.ROLE_SYSTEM}
TYPES = {
    "message": memory_pb2.EVENT_TYPE_MESSAGE,
    "thought": memory_pb2.EVENT_TYPE_THOUGHT,
    "action": memory_pb2.EVENT_TYPE_ACTION,
    "observation": memory_pb2.EVENT_TYPE_OBSERVATION,
}


@dataclass(frozen=True)
class ClientOptions:
    timeout: float = 10.0
    """Deadline of one attempt, in seconds."""
    max_attempts: int = 5
    """Attempts per call when the server answers UNAVAILABLE (or the deadline passes on a safe call)."""
    backoff: Backoff = field(default_factory=lambda: ExponentialFullJitter(base=0.2, cap=5.0))
    metadata: Sequence[tuple[str, str]] = ()
    """Call metadata sent with every request (e.g. authorization)."""


@dataclass(frozen=True)
class EventInput:
    role: str
    content: str
    type: str = "message"
    metadata: Mapping[str, str] = field(default_factory=dict)
    timestamp: datetime | None = None
    event_id: str | None = None

    def to_proto(self) -> memory_pb2.NewEvent:
        event = memory_pb2.NewEvent(
            role=ROLES.get(self.role, memory_pb2.ROLE_UNSPECIFIED),
            type=TYPES.get(self.type, memory_pb2.EVENT_TYPE_UNSPECIFIED),
            content=self.content,
            metadata=dict(self.metadata),
            # Set before the first attempt, so that a retry cannot store the event twice.
            event_id=self.event_id or uuid.uuid4().hex,
        )
        if self.timestamp is not None:
            event.timestamp.CopyFrom(to_timestamp(self.timestamp))
        return event


class ContextPage(list[memory_pb2.Event]):
    """One GetContext page: its events oldest first (a list, as get_context has always returned), and
    the token of the next older page of the same selection ("" on the last page)."""

    def __init__(self, events: Iterable[memory_pb2.Event] = (), next_page_token: str = "") -> None:
        super().__init__(events)
        self.next_page_token = next_page_token


_RETRYABLE = {grpc.StatusCode.UNAVAILABLE}


class AthenaClient:
    def __init__(
        self,
        target: str,
        *,
        options: ClientOptions | None = None,
        channel: grpc.aio.Channel | None = None,
        api_key: str | None = None,
        bearer_token: str | None = None,
        tls: bool = False,
        root_certificates: bytes | None = None,
    ) -> None:
        """`api_key` or `bearer_token` (a JWT) is sent as `authorization: Bearer ...` with every call; the
        server takes the tenant from it. `tls` (implied by `root_certificates`, the PEM CAs to trust;
        None: the system's) connects over TLS."""
        if api_key and bearer_token:
            raise ValueError("give api_key or bearer_token, not both")
        credential = api_key or bearer_token
        base = options or ClientOptions()
        if credential:
            base = replace(
                base,
                metadata=(*[m for m in base.metadata if m[0].lower() != AUTHORIZATION], *bearer_metadata(credential)),
            )
        self.options = base
        if channel is not None:
            self._channel = channel
        elif tls or root_certificates is not None:
            self._channel = grpc.aio.secure_channel(
                target, grpc.ssl_channel_credentials(root_certificates=root_certificates)
            )
        else:
            self._channel = grpc.aio.insecure_channel(target)
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)

    async def __aenter__(self) -> AthenaClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    @staticmethod
    def scope(tenant_id: str, user_id: str, agent_id: str) -> memory_pb2.Scope:
        return memory_pb2.Scope(tenant_id=tenant_id, user_id=user_id, agent_id=agent_id)

    async def _call(self, method: Callable[..., Awaitable[T]], request: Any) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                return await method(request, timeout=self.options.timeout, metadata=tuple(self.options.metadata))
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in _RETRYABLE or attempt >= self.options.max_attempts:
                    raise
                await asyncio.sleep(self.options.backoff.compute(attempt))

    async def store_event(
        self, scope: memory_pb2.Scope, event: EventInput | memory_pb2.NewEvent
    ) -> memory_pb2.StoreEventResponse:
        proto = event.to_proto() if isinstance(event, EventInput) else event
        return await self._call(self._stub.StoreEvent, memory_pb2.StoreEventRequest(scope=scope, event=proto))

    async def store_events(
        self, scope: memory_pb2.Scope, events: Sequence[EventInput | memory_pb2.NewEvent]
    ) -> memory_pb2.StoreEventsResponse:
        protos = [e.to_proto() if isinstance(e, EventInput) else e for e in events]
        return await self._call(self._stub.StoreEvents, memory_pb2.StoreEventsRequest(scope=scope, events=protos))

    async def get_context(self, scope: memory_pb2.Scope, *, limit: int = 0, page_token: str = "") -> ContextPage:
        """One page of the scope's window, oldest first: the newest of the last `limit` events (0: the
        whole window) that fit one answer, or with `page_token` (a page's next_page_token) the next
        older page. A window that fits one answer is one page, with no next_page_token."""
        request = memory_pb2.GetContextRequest(scope=scope, limit=limit, page_token=page_token)
        response = await self._call(self._stub.GetContext, request)
        return ContextPage(response.events, response.next_page_token)

    async def context_pages(self, scope: memory_pb2.Scope, *, limit: int = 0) -> AsyncIterator[ContextPage]:
        """Every page of the last `limit` events (0: the whole window), newest page first."""
        token = ""
        while True:
            page = await self.get_context(scope, limit=limit, page_token=token)
            yield page
            token = page.next_page_token
            if not token:
                return

    async def get_full_context(self, scope: memory_pb2.Scope, *, limit: int = 0) -> list[memory_pb2.Event]:
        """The last `limit` events (0: the whole window), oldest first, however many pages they take."""
        pages = [page async for page in self.context_pages(scope, limit=limit)]
        return [event for page in reversed(pages) for event in page]

    async def search_memory(
        self,
        scope: memory_pb2.Scope,
        query: str,
        *,
        limit: int = 5,
        similarity_threshold: float | None = None,
        metadata_filters: Mapping[str, str] | None = None,
    ) -> list[memory_pb2.SearchHit]:
        request = memory_pb2.SearchMemoryRequest(
            scope=scope, query=query, limit=limit, metadata_filters=dict(metadata_filters or {})
        )
        if similarity_threshold is not None:
            request.similarity_threshold = similarity_threshold
        return list((await self._call(self._stub.SearchMemory, request)).hits)

    async def get_chain(self, scope: memory_pb2.Scope, chain_id: str) -> memory_pb2.Chain:
        return await self._call(self._stub.GetChain, memory_pb2.GetChainRequest(scope=scope, chain_id=chain_id))

    async def list_chains(
        self,
        scope: memory_pb2.Scope,
        *,
        status: memory_pb2.ChainStatus.ValueType = memory_pb2.CHAIN_STATUS_UNSPECIFIED,
        page_size: int = 200,
    ) -> list[memory_pb2.Chain]:
        """Every chain of the scope, following the pages."""
        chains: list[memory_pb2.Chain] = []
        token = ""
        while True:
            page = await self._call(
                self._stub.ListChains,
                memory_pb2.ListChainsRequest(scope=scope, status=status, page_size=page_size, page_token=token),
            )
            chains.extend(page.chains)
            token = page.next_page_token
            if not token:
                return chains

    async def flush_window(self, scope: memory_pb2.Scope) -> memory_pb2.FlushWindowResponse:
        """Close the scope's conversation: what its window holds is formed into a chain after the tasks
        already queued for it (`task_id` names the flush; empty when the window was empty)."""
        return await self._call(self._stub.FlushWindow, memory_pb2.FlushWindowRequest(scope=scope))

    async def forget_user(self, tenant_id: str, user_id: str) -> memory_pb2.ForgetUserResponse:
        """Erase everything Athena holds about the user in the tenant; returns the receipt (counts per store)."""
        return await self._call(
            self._stub.ForgetUser, memory_pb2.ForgetUserRequest(tenant_id=tenant_id, user_id=user_id)
        )
