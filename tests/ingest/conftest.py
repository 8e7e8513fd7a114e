from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from athena.config import load_settings
from athena.local import MongoWireServer, RedisServer, free_port
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions
from athena_ingest.ingestor import Ingestor
from athena_ingest.server import build_ingest

ClientFor = Callable[..., AsyncAthenaClient]
"""client_for(tenant_id=None, *, options=None): a client of the in-process ingest for that tenant."""


@pytest.fixture
def credentials() -> StackCredentials:
    """The dev API key, JWT secret and internal token the in-process services are configured with."""
    return StackCredentials()


@pytest.fixture
async def ingest(
    redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, redis, credentials: StackCredentials
) -> AsyncIterator[Ingestor]:
    """The ingest service running in this process against the session's Redis and MongoDB-wire server,
    with authentication on (`client_for` gives a client of any tenant)."""
    settings = load_settings(
        redis_url=redis_server.url,
        mongodb_uri=mongo_server.url,
        mongodb_database=mongo_db_name,
        ingest_grpc_port=free_port(),
        grpc_bind_host="127.0.0.1",
        mongodb_timeout_ms=2000,
        **credentials.settings_overrides(),
    )
    host, ingestor = await build_ingest(settings)
    await host.start()
    ingestor.target = f"127.0.0.1:{host.bound_port}"  # type: ignore[attr-defined]
    yield ingestor
    await host.shutdown()


@pytest.fixture
def client_for(ingest: Ingestor, credentials: StackCredentials) -> ClientFor:
    """Clients of the in-process ingest carrying a JWT for `tenant_id` (the dev API key when None)."""

    def make(tenant_id: str | None = None, *, options: ClientOptions | None = None) -> AsyncAthenaClient:
        opts = options or ClientOptions(timeout=5, max_attempts=1)
        target = ingest.target  # type: ignore[attr-defined]
        if tenant_id is None:
            return AsyncAthenaClient(target, options=opts, api_key=credentials.dev_api_key)
        return AsyncAthenaClient(target, options=opts, bearer_token=credentials.token_for(tenant_id))

    return make


@pytest.fixture
async def client(client_for: ClientFor) -> AsyncIterator[AsyncAthenaClient]:
    """A client of the in-process ingest for the tenant the ingest tests use ("acme")."""
    async with client_for("acme") as c:
        yield c
