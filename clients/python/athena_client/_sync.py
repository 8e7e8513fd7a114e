"""The synchronous client (grpc's blocking channel; no event loop)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Optional, TypeVar

import grpc

from athena_client import _common
from athena_client._common import ClientOptions, ContextPage, EventLike
from athena_client.memory.v1 import memory_pb2, memory_pb2_grpc

__all__ = ["AthenaClient"]

T = TypeVar("T")


class AthenaClient:
    """Athena's public API (MemoryService), synchronous; AsyncAthenaClient is the same with asyncio.
    Safe to share between threads (one gRPC channel).

    Every call carries a deadline (`options.timeout`), and UNAVAILABLE is retried with exponential
    backoff and full jitter (`options.max_attempts`, `options.backoff`). StoreEvent is made safe to
    retry by giving every event an event_id before the first attempt."""

    def __init__(
        self,
        target: str,
        *,
        options: Optional[ClientOptions] = None,
        channel: Optional[grpc.Channel] = None,
        api_key: Optional[str] = None,
        bearer_token: Optional[str] = None,
        tls: bool = False,
        root_certificates: Optional[bytes] = None,
    ) -> None:
        """`api_key` or `bearer_token` (a JWT) is sent as `authorization: Bearer ...` with every call; the
        server takes the tenant from it. `tls` (implied by `root_certificates`, the PEM CAs to trust;
        None: the system's) connects over TLS. `channel`: one of your own instead (target unused)."""
        self.options = _common.resolve_options(options, api_key=api_key, bearer_token=bearer_token)
        if channel is not None:
            self._channel = channel
        else:
            credentials = _common.channel_credentials(tls, root_certificates)
            self._channel = (
                grpc.insecure_channel(target) if credentials is None else grpc.secure_channel(target, credentials)
            )
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)

    def __enter__(self) -> AthenaClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    scope = staticmethod(_common.scope)

    def _call(self, method: Callable[..., T], request: Any) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                return method(request, **_common.call_kwargs(self.options))
            except grpc.RpcError as exc:
                delay = _common.retry_delay(self.options, attempt, exc)
                if delay is None:
                    raise
                time.sleep(delay)

    def store_event(self, scope: memory_pb2.Scope, event: EventLike) -> memory_pb2.StoreEventResponse:
        return self._call(self._stub.StoreEvent, _common.store_event_request(scope, event))

    def store_events(self, scope: memory_pb2.Scope, events: Sequence[EventLike]) -> memory_pb2.StoreEventsResponse:
        return self._call(self._stub.StoreEvents, _common.store_events_request(scope, events))

    def get_context(
        self,
        scope: memory_pb2.Scope,
        *,
        query: str = "",
        chain_limit: int = 0,
        profile_limit: int = 0,
        limit: int = 0,
        page_token: str = "",
    ) -> ContextPage:
        """One page of the scope's window, oldest first: the newest of the last `limit` events (0: the
        whole window) that fit one answer, or with `page_token` (a page's next_page_token) the next
        older page. A window that fits one answer is one page, with no next_page_token. With a
        `query`, the first page also holds `relevant_chains`: at most `chain_limit` (0: 3) memories
        most relevant to it, and `profile`: at most `profile_limit` (0: 20) sentences in which the
        user told a lasting fact or a standing instruction, newest first, whatever the query."""
        request = _common.get_context_request(
            scope, query=query, chain_limit=chain_limit, profile_limit=profile_limit, limit=limit, page_token=page_token
        )
        return ContextPage.of(self._call(self._stub.GetContext, request))

    def context_pages(self, scope: memory_pb2.Scope, *, limit: int = 0) -> Iterator[ContextPage]:
        """Every page of the last `limit` events (0: the whole window), newest page first."""
        token = ""
        while True:
            page = self.get_context(scope, limit=limit, page_token=token)
            yield page
            token = page.next_page_token
            if not token:
                return

    def get_full_context(self, scope: memory_pb2.Scope, *, limit: int = 0) -> list[memory_pb2.Event]:
        """The last `limit` events (0: the whole window), oldest first, however many pages they take."""
        pages = list(self.context_pages(scope, limit=limit))
        return [event for page in reversed(pages) for event in page]

    def search_memory(
        self,
        scope: memory_pb2.Scope,
        query: str,
        *,
        limit: int = 5,
        similarity_threshold: Optional[float] = None,
        metadata_filters: Optional[Mapping[str, str]] = None,
    ) -> list[memory_pb2.SearchHit]:
        """The memories most relevant to `query`, best first (agent_id of the scope optional)."""
        request = _common.search_memory_request(
            scope, query, limit=limit, similarity_threshold=similarity_threshold, metadata_filters=metadata_filters
        )
        return list(self._call(self._stub.SearchMemory, request).hits)

    def get_chain(self, scope: memory_pb2.Scope, chain_id: str) -> memory_pb2.Chain:
        return self._call(self._stub.GetChain, _common.get_chain_request(scope, chain_id))

    def list_chains(
        self,
        scope: memory_pb2.Scope,
        *,
        status: memory_pb2.ChainStatus.ValueType = memory_pb2.CHAIN_STATUS_UNSPECIFIED,
        page_size: int = 200,
    ) -> list[memory_pb2.Chain]:
        """Every chain of the scope, most recent first, following the pages."""
        chains: list[memory_pb2.Chain] = []
        token = ""
        while True:
            request = _common.list_chains_request(scope, status=status, page_size=page_size, page_token=token)
            page = self._call(self._stub.ListChains, request)
            chains.extend(page.chains)
            token = page.next_page_token
            if not token:
                return chains

    def flush_window(self, scope: memory_pb2.Scope) -> memory_pb2.FlushWindowResponse:
        """Close the scope's conversation: what its window holds is formed into a chain after the tasks
        already queued for it (`task_id` names the flush; empty when the window was empty)."""
        return self._call(self._stub.FlushWindow, _common.flush_window_request(scope))

    def forget_user(self, tenant_id: str, user_id: str) -> memory_pb2.ForgetUserResponse:
        """Erase everything Athena holds about the user in the tenant; returns the receipt (counts per store)."""
        return self._call(self._stub.ForgetUser, _common.forget_user_request(tenant_id, user_id))

    def delete_chain(
        self, scope: memory_pb2.Scope, chain_id: str, *, delete_events: bool = False
    ) -> memory_pb2.DeleteChainResponse:
        """Delete one chain (its embedding, document and the events' references to it); its events stay
        in the log unless `delete_events`. Needs the memory:admin scope."""
        request = _common.delete_chain_request(scope, chain_id, delete_events=delete_events)
        return self._call(self._stub.DeleteChain, request)

    def update_chain(
        self,
        scope: memory_pb2.Scope,
        chain_id: str,
        *,
        pinned: Optional[bool] = None,
        importance: Optional[float] = None,
        summary: Optional[str] = None,
        topic: Optional[str] = None,
    ) -> memory_pb2.Chain:
        """Pin or unpin a chain (pinned: never archived), set its importance, or correct its summary or
        topic (its embedding follows); fields left None stay as they are. Returns the chain as written."""
        request = _common.update_chain_request(
            scope, chain_id, pinned=pinned, importance=importance, summary=summary, topic=topic
        )
        return self._call(self._stub.UpdateChain, request)

    def get_chain_events(
        self, scope: memory_pb2.Scope, chain_id: str, *, page_size: int = 100
    ) -> list[memory_pb2.Event]:
        """The events behind a chain, oldest first (every page)."""
        events: list[memory_pb2.Event] = []
        token = ""
        while True:
            request = _common.get_chain_events_request(scope, chain_id, page_size=page_size, page_token=token)
            page = self._call(self._stub.GetChainEvents, request)
            events.extend(page.events)
            token = page.next_page_token
            if not token:
                return events

    def list_rejections(self, scope: memory_pb2.Scope, *, page_size: int = 200) -> list[memory_pb2.Rejection]:
        """Every segment the quality gate did not remember (agent_id of the scope optional), newest first."""
        rejections: list[memory_pb2.Rejection] = []
        token = ""
        while True:
            request = _common.list_rejections_request(scope, page_size=page_size, page_token=token)
            page = self._call(self._stub.ListRejections, request)
            rejections.extend(page.rejections)
            token = page.next_page_token
            if not token:
                return rejections

    def admit_rejection(self, scope: memory_pb2.Scope, segment_id: str) -> memory_pb2.Chain:
        """Form a rejected segment as a chain after all; returns the chain."""
        return self._call(self._stub.AdmitRejection, _common.admit_rejection_request(scope, segment_id))

    def restore_chain(self, scope: memory_pb2.Scope, chain_id: str) -> memory_pb2.Chain:
        """Bring an archived chain back into search (re-embedded from its events)."""
        return self._call(self._stub.RestoreChain, _common.chain_request(scope, chain_id))

    def get_task_result(self, scope: memory_pb2.Scope, task_id: str) -> memory_pb2.TaskResult:
        """What a queued task did (a task_id of store_event or flush_window); NOT_FOUND before it ran."""
        return self._call(self._stub.GetTaskResult, _common.get_task_result_request(scope, task_id))

    def export_user(self, tenant_id: str, user_id: str) -> Iterator[memory_pb2.ExportUserResponse]:
        """Everything held about the user: events, chains, formation records, then one summary of the
        counts. Needs the memory:admin scope. Not retried: an interrupted export is asked for again."""
        call = self._stub.ExportUser(
            _common.export_user_request(tenant_id, user_id),
            timeout=_common.EXPORT_TIMEOUT,
            metadata=tuple(self.options.metadata),
        )
        yield from call
