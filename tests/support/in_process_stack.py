"""Formation and ingest running in the test's own process, on the session's redis-server and nx-27017
and a Milvus Lite file of their own: the public API for real, with the formation objects at hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from redis.asyncio import Redis

from athena.auth import bearer_credential_interceptors
from athena.local import MongoWireServer, RedisServer
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions
from athena_formation.server import Formation, build_formation
from athena_ingest.server import build_ingest
from support.in_process import in_process_settings

__all__ = ["InProcessStack", "running_in_process"]


@dataclass
class InProcessStack:
    credentials: StackCredentials
    target: str
    formation_target: str
    redis: Redis
    formation: Formation

    def client(self, tenant_id: str = "acme", *, token: str = "") -> AsyncAthenaClient:
        """A client of the public API with a JWT of the tenant (or the token given)."""
        return AsyncAthenaClient(
            self.target,
            options=ClientOptions(timeout=30, max_attempts=1),
            bearer_token=token or self.credentials.token_for(tenant_id),
        )

    def formation_channel(self) -> grpc.aio.Channel:
        """A channel to FormationService with the internal credential (what cognition would use)."""
        return grpc.aio.insecure_channel(
            self.formation_target, interceptors=bearer_credential_interceptors(self.credentials.internal_token)
        )


@asynccontextmanager
async def running_in_process(
    redis_server: RedisServer,
    mongo_server: MongoWireServer,
    database: str,
    redis: Redis,
    data_dir: Path,
    **overrides: Any,
) -> AsyncIterator[InProcessStack]:
    """Formation and ingest in this process, on these servers; `overrides` are settings."""
    credentials = StackCredentials()
    settings = in_process_settings(
        redis_url=redis_server.url,
        mongodb_uri=mongo_server.url,
        database=database,
        data_dir=data_dir,
        credentials=credentials,
        # Formation's port 0 too: a port picked in advance can be taken before formation binds it
        # (Milvus Lite's own server starts first); ingest is told the port formation bound.
        **{"mongodb_timeout_ms": 5000, "formation_grpc_port": 0, **overrides},
    )
    formation = await build_formation(settings)
    await formation.host.start()
    settings = settings.model_copy(update={"formation_address": f"127.0.0.1:{formation.host.bound_port}"})
    ingest, _ = await build_ingest(settings)
    await ingest.start()
    try:
        yield InProcessStack(
            credentials, f"127.0.0.1:{ingest.bound_port}", f"127.0.0.1:{formation.host.bound_port}", redis, formation
        )
    finally:
        await ingest.shutdown()
        await formation.host.shutdown()
