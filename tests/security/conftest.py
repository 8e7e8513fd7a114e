"""Fixtures of the security tests: a scratch CA, RSA keys for RS256, and ingest + formation running in
this process with authentication configured, against the session's redis-server and nx-27017 and a
fresh Milvus Lite file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from security_support import (
    BuildSettings,
    RsaKeys,
    ScratchCA,
    Services,
    StartGateway,
    StartIngest,
    StartServices,
    memory_gateway,
)
from support.in_process import in_process_settings

from athena.config import Settings, load_settings
from athena.grpc_util import ServiceHost
from athena.local import MongoWireServer, RedisServer
from athena_cli.stack import StackCredentials
from athena_formation.server import build_formation
from athena_ingest.server import build_ingest


@pytest.fixture
def scratch_ca(tmp_path: Path) -> ScratchCA:
    return ScratchCA(tmp_path / "pki")


@pytest.fixture(scope="session")
def rsa_keys(tmp_path_factory: pytest.TempPathFactory) -> RsaKeys:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_file = tmp_path_factory.mktemp("rsa") / "jwt-public.pem"
    public_file.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return RsaKeys(private_pem=private, public_file=public_file)


@pytest.fixture
def build_settings(
    redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, tmp_path: Path
) -> BuildSettings:
    """build(credentials, **overrides) -> Settings of this test's services (fresh ports, auth configured)."""

    def build(credentials: StackCredentials, **overrides: Any) -> Settings:
        return in_process_settings(
            redis_url=redis_server.url,
            mongodb_uri=mongo_server.url,
            database=mongo_db_name,
            data_dir=tmp_path,
            credentials=credentials,
            **{"mongodb_timeout_ms": 5000, **overrides},
        )

    return build


@pytest.fixture
async def start_ingest(build_settings: BuildSettings, redis) -> AsyncIterator[StartIngest]:
    """start(**settings overrides) -> the ingest host alone (enough for StoreEvent and GetContext)."""
    hosts: list[ServiceHost] = []

    async def start(credentials: StackCredentials, **overrides: Any) -> ServiceHost:
        host, _ = await build_ingest(build_settings(credentials, **overrides))
        await host.start()
        hosts.append(host)
        return host

    yield start
    for host in reversed(hosts):
        await host.shutdown()


@pytest.fixture
async def start_services(build_settings: BuildSettings, redis) -> AsyncIterator[StartServices]:
    """start(**settings overrides) -> formation and ingest; everything started is stopped after the test."""
    started: list[Services] = []

    async def start(**overrides: Any) -> Services:
        credentials = StackCredentials()
        settings = build_settings(credentials, **overrides)
        formation = await build_formation(settings)
        await formation.host.start()
        ingest, _ = await build_ingest(settings)
        await ingest.start()
        services = Services(settings, credentials, formation, ingest)
        started.append(services)
        return services

    yield start
    for s in reversed(started):
        await s.ingest.shutdown()
        await s.formation.host.shutdown()


@pytest.fixture
async def start_gateway() -> AsyncIterator[StartGateway]:
    """start(servicer, credentials, generic_handlers=(), **settings overrides) -> MemoryService served by
    the test's own servicer behind the production interceptors (no stores needed)."""
    hosts: list[ServiceHost] = []

    async def start(
        servicer: Any, credentials: StackCredentials, *, generic_handlers: Any = (), **overrides: Any
    ) -> ServiceHost:
        settings = load_settings(**{**credentials.settings_overrides(), **overrides})
        host = memory_gateway(settings, servicer, generic_handlers=generic_handlers)
        await host.start()
        hosts.append(host)
        return host

    yield start
    for host in reversed(hosts):
        await host.shutdown()
