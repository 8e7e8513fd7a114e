"""Client of the internal FormationService, used by cognition (FormChain) and ingest (search, chains)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc

from athena.auth import internal_call_metadata, internal_channel_credentials
from athena.config import Settings, SettingsError
from athena.errors import DependencyUnavailable
from athena.grpc_util import error_from_rpc
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.queue import Backoff, ExponentialFullJitter

__all__ = ["FormationClient", "channel_options"]

T = TypeVar("T")

_TRANSIENT = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED}

# A connection to every address the target resolves to, calls in turn: with a headless Service each
# formation pod is an address (the default pick_first would put every call on the first one).
_ROUND_ROBIN = json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})


def channel_options(*, min_resolution_interval: float = 10.0) -> list[tuple[str, str | int]]:
    """Options of the channel to formation: round_robin over the resolved addresses, and the name resolved
    again at most every `min_resolution_interval` seconds. gRPC resolves again when a connection ends,
    which formation causes every FORMATION_MAX_CONNECTION_AGE_SECONDS: that is how new replicas get calls."""
    return [
        ("grpc.service_config", _ROUND_ROBIN),
        ("grpc.dns_min_time_between_resolutions_ms", max(1, round(min_resolution_interval * 1000))),
    ]


class FormationClient:
    def __init__(
        self,
        target: str,
        *,
        timeout: float = 30.0,
        attempts: int = 3,
        backoff: Backoff | None = None,
        metadata: tuple[tuple[str, str], ...] = (),
        credentials: grpc.ChannelCredentials | None = None,
        min_resolution_interval: float = 10.0,
    ) -> None:
        """`target`: host:port or any gRPC target (dns:///name:port, ipv4:a:p,b:p); `metadata` carries the
        internal credential; `credentials` the (m)TLS of the hop (None: plaintext)."""
        self.timeout = timeout
        self.attempts = attempts
        self.backoff = backoff or ExponentialFullJitter(base=0.2, cap=2.0)
        self.metadata = metadata
        options = channel_options(min_resolution_interval=min_resolution_interval)
        self._channel = (
            grpc.aio.secure_channel(target, credentials, options=options)
            if credentials is not None
            else grpc.aio.insecure_channel(target, options=options)
        )
        self.stub = formation_pb2_grpc.FormationServiceStub(self._channel)

    @classmethod
    def from_settings(cls, settings: Settings, *, timeout: float = 30.0) -> FormationClient:
        """The client ingest and cognition use: FORMATION_ADDRESS, the internal token, mTLS when configured."""
        metadata = internal_call_metadata(settings)
        if not metadata and not settings.auth_disabled:
            # Fail at start-up rather than on every call: formation would refuse us.
            raise SettingsError("INTERNAL_AUTH_TOKEN (or INTERNAL_AUTH_TOKEN_FILE) is required to call formation")
        return cls(
            settings.formation_address,
            timeout=timeout,
            metadata=metadata,
            credentials=internal_channel_credentials(settings),
        )

    async def close(self) -> None:
        await self._channel.close()

    async def call(self, method: Callable[..., Awaitable[T]], request: Any, *, timeout: float | None = None) -> T:
        """A few quick retries of transient failures; then DependencyUnavailable, for the caller's own backoff."""
        for attempt in range(1, self.attempts + 1):
            try:
                return await method(request, timeout=timeout or self.timeout, metadata=self.metadata)
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in _TRANSIENT:
                    mapped = error_from_rpc(exc)
                    if mapped is not None:
                        raise mapped from exc
                    raise
                if attempt == self.attempts:
                    raise DependencyUnavailable("formation", f"{exc.code().name}: {exc.details()}") from exc
                await asyncio.sleep(self.backoff.compute(attempt))
        raise AssertionError("unreachable")

    async def form_chain(
        self, segment: formation_pb2.Segment, *, embeddings: formation_pb2.EventEmbeddings | None = None
    ) -> formation_pb2.FormChainResponse:
        """`embeddings`: vectors the caller already has of the segment's events (a hint, see the proto)."""
        request = formation_pb2.FormChainRequest(segment=segment, embeddings=embeddings)
        return await self.call(self.stub.FormChain, request)
