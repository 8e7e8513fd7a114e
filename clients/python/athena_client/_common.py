"""What the synchronous and the asyncio client share: options, credentials, the retry rule, and every
request and result (so that the two differ only in how they wait)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Union

import grpc

from athena_client._events import EventInput
from athena_client.credentials import AUTHORIZATION, bearer_metadata
from athena_client.memory.v1 import memory_pb2
from athena_client.retry import Backoff, ExponentialFullJitter

__all__ = [
    "EXPORT_TIMEOUT",
    "ClientOptions",
    "ContextPage",
    "EventLike",
    "admit_rejection_request",
    "call_kwargs",
    "chain_request",
    "channel_credentials",
    "delete_chain_request",
    "export_user_request",
    "flush_window_request",
    "forget_user_request",
    "get_chain_events_request",
    "get_chain_request",
    "get_context_request",
    "get_task_result_request",
    "list_chains_request",
    "list_rejections_request",
    "resolve_options",
    "retry_delay",
    "scope",
    "search_memory_request",
    "store_event_request",
    "store_events_request",
    "update_chain_request",
]

EventLike = Union[EventInput, memory_pb2.NewEvent]

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE})
"""What a call is retried on: the server or a store it needs is down. Every request is safe to repeat
(StoreEvent's event carries its event_id from the first attempt on)."""


@dataclass(frozen=True)
class ClientOptions:
    timeout: float = 10.0
    """Deadline of one attempt, in seconds."""
    max_attempts: int = 5
    """Attempts per call, the first included, while the server answers UNAVAILABLE."""
    backoff: Backoff = field(default_factory=ExponentialFullJitter)
    """Wait between attempts (default: full jitter, base 0.2 s, cap 5 s)."""
    metadata: Sequence[tuple[str, str]] = ()
    """Call metadata sent with every request (e.g. authorization)."""


class ContextPage(list[memory_pb2.Event]):
    """One GetContext answer. As a list: its window events, oldest first (what get_context has always
    returned). `relevant_chains`: with a query, the memories most relevant to it, best first (chains
    and not-yet-formed window turns, as search_memory ranks them; first page only). `profile`: with a
    query, what the user has told of themselves (lasting facts and standing instructions), newest
    first, whatever the query (first page only).
    `next_page_token`: the token of the next older page of the same selection ("" on the last page)."""

    def __init__(
        self,
        events: Iterable[memory_pb2.Event] = (),
        next_page_token: str = "",
        relevant_chains: Iterable[memory_pb2.SearchHit] = (),
        profile: Iterable[memory_pb2.ProfileFact] = (),
    ) -> None:
        super().__init__(events)
        self.next_page_token = next_page_token
        self.relevant_chains: list[memory_pb2.SearchHit] = list(relevant_chains)
        self.profile: list[memory_pb2.ProfileFact] = list(profile)

    @property
    def events(self) -> list[memory_pb2.Event]:
        """The page's window events, oldest first (a copy of the list itself)."""
        return list(self)

    @classmethod
    def of(cls, response: memory_pb2.GetContextResponse) -> ContextPage:
        return cls(response.events, response.next_page_token, response.relevant_chains, response.profile)

    def __repr__(self) -> str:
        return (
            f"ContextPage(events={len(self)}, relevant_chains={len(self.relevant_chains)}, "
            f"profile={len(self.profile)}, next_page_token={self.next_page_token!r})"
        )


def resolve_options(
    options: Optional[ClientOptions], *, api_key: Optional[str], bearer_token: Optional[str]
) -> ClientOptions:
    """The options with the credential's authorization metadata in place of any given in them."""
    if api_key and bearer_token:
        raise ValueError("give api_key or bearer_token, not both")
    credential = api_key or bearer_token
    base = options or ClientOptions()
    if credential:
        kept = [m for m in base.metadata if m[0].lower() != AUTHORIZATION]
        base = replace(base, metadata=(*kept, *bearer_metadata(credential)))
    return base


def channel_credentials(tls: bool, root_certificates: Optional[bytes]) -> Optional[grpc.ChannelCredentials]:
    """TLS credentials when asked for (root_certificates implies TLS; None: the system's CAs), else None."""
    if tls or root_certificates is not None:
        return grpc.ssl_channel_credentials(root_certificates=root_certificates)
    return None


def retry_delay(options: ClientOptions, attempt: int, error: Exception) -> Optional[float]:
    """Seconds to wait before attempt `attempt + 1` of a call whose attempt `attempt` failed with
    `error`, or None when the error is final."""
    code = error.code() if isinstance(error, grpc.RpcError) and hasattr(error, "code") else None
    if code not in RETRYABLE or attempt >= options.max_attempts:
        return None
    return options.backoff.compute(attempt)


def scope(tenant_id: str, user_id: str, agent_id: str) -> memory_pb2.Scope:
    return memory_pb2.Scope(tenant_id=tenant_id, user_id=user_id, agent_id=agent_id)


def _new_event(event: EventLike) -> memory_pb2.NewEvent:
    return event.to_proto() if isinstance(event, EventInput) else event


def store_event_request(scope: memory_pb2.Scope, event: EventLike) -> memory_pb2.StoreEventRequest:
    return memory_pb2.StoreEventRequest(scope=scope, event=_new_event(event))


def store_events_request(scope: memory_pb2.Scope, events: Iterable[EventLike]) -> memory_pb2.StoreEventsRequest:
    return memory_pb2.StoreEventsRequest(scope=scope, events=[_new_event(e) for e in events])


def get_context_request(
    scope: memory_pb2.Scope, *, query: str, chain_limit: int, profile_limit: int, limit: int, page_token: str
) -> memory_pb2.GetContextRequest:
    return memory_pb2.GetContextRequest(
        scope=scope,
        query=query,
        chain_limit=chain_limit,
        profile_limit=profile_limit,
        limit=limit,
        page_token=page_token,
    )


def search_memory_request(
    scope: memory_pb2.Scope,
    query: str,
    *,
    limit: int,
    similarity_threshold: Optional[float],
    metadata_filters: Optional[Mapping[str, str]],
) -> memory_pb2.SearchMemoryRequest:
    request = memory_pb2.SearchMemoryRequest(
        scope=scope, query=query, limit=limit, metadata_filters=dict(metadata_filters or {})
    )
    if similarity_threshold is not None:
        request.similarity_threshold = similarity_threshold
    return request


def get_chain_request(scope: memory_pb2.Scope, chain_id: str) -> memory_pb2.GetChainRequest:
    return memory_pb2.GetChainRequest(scope=scope, chain_id=chain_id)


def list_chains_request(
    scope: memory_pb2.Scope, *, status: memory_pb2.ChainStatus.ValueType, page_size: int, page_token: str
) -> memory_pb2.ListChainsRequest:
    return memory_pb2.ListChainsRequest(scope=scope, status=status, page_size=page_size, page_token=page_token)


def flush_window_request(scope: memory_pb2.Scope) -> memory_pb2.FlushWindowRequest:
    return memory_pb2.FlushWindowRequest(scope=scope)


def forget_user_request(tenant_id: str, user_id: str) -> memory_pb2.ForgetUserRequest:
    return memory_pb2.ForgetUserRequest(tenant_id=tenant_id, user_id=user_id)


def delete_chain_request(
    scope: memory_pb2.Scope, chain_id: str, *, delete_events: bool
) -> memory_pb2.DeleteChainRequest:
    return memory_pb2.DeleteChainRequest(scope=scope, chain_id=chain_id, delete_events=delete_events)


def update_chain_request(
    scope: memory_pb2.Scope,
    chain_id: str,
    *,
    pinned: Optional[bool],
    importance: Optional[float],
    summary: Optional[str],
    topic: Optional[str],
) -> memory_pb2.UpdateChainRequest:
    """Only the fields given are sent: the others are left as they are."""
    request = memory_pb2.UpdateChainRequest(scope=scope, chain_id=chain_id)
    if pinned is not None:
        request.pinned = pinned
    if importance is not None:
        request.importance = importance
    if summary is not None:
        request.summary = summary
    if topic is not None:
        request.topic = topic
    return request


def chain_request(scope: memory_pb2.Scope, chain_id: str) -> memory_pb2.RestoreChainRequest:
    return memory_pb2.RestoreChainRequest(scope=scope, chain_id=chain_id)


def get_chain_events_request(
    scope: memory_pb2.Scope, chain_id: str, *, page_size: int, page_token: str
) -> memory_pb2.GetChainEventsRequest:
    return memory_pb2.GetChainEventsRequest(scope=scope, chain_id=chain_id, page_size=page_size, page_token=page_token)


def list_rejections_request(
    scope: memory_pb2.Scope, *, page_size: int, page_token: str
) -> memory_pb2.ListRejectionsRequest:
    return memory_pb2.ListRejectionsRequest(scope=scope, page_size=page_size, page_token=page_token)


def admit_rejection_request(scope: memory_pb2.Scope, segment_id: str) -> memory_pb2.AdmitRejectionRequest:
    return memory_pb2.AdmitRejectionRequest(scope=scope, segment_id=segment_id)


def get_task_result_request(scope: memory_pb2.Scope, task_id: str) -> memory_pb2.GetTaskResultRequest:
    return memory_pb2.GetTaskResultRequest(scope=scope, task_id=task_id)


def export_user_request(tenant_id: str, user_id: str) -> memory_pb2.ExportUserRequest:
    return memory_pb2.ExportUserRequest(tenant_id=tenant_id, user_id=user_id)


EXPORT_TIMEOUT = 600.0
"""Deadline of a whole export stream, in seconds: a user's history may take minutes to stream."""


def call_kwargs(options: ClientOptions) -> dict[str, Any]:
    """The per-attempt arguments of a stub call: its deadline and metadata."""
    return {"timeout": options.timeout, "metadata": tuple(options.metadata)}
