"""Credentials of the public API: API keys (hashed, from env and file), HS256 and RS256 JWTs.

Ingest runs in this process against real redis-server and nx-27017. Every refused call must be
UNAUTHENTICATED with one and the same message, whatever was wrong, so a caller learns nothing
about which keys, algorithms or tenants exist.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from security_support import BuildSettings, RsaKeys, StartIngest

from athena.auth import ApiKeyEntry, hash_api_key, mint_hs256, new_api_key
from athena.config import SettingsError
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_formation.server import build_formation
from athena_ingest.server import build_ingest

AUDIENCE = "athena"
SCOPE = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="helper")
FILE_KEY = new_api_key()  # acme's key, configured through AUTH_API_KEYS_FILE


def _claims(tenant: str = "acme", *, aud: str = AUDIENCE, exp_in: float = 600, **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"tenant_id": tenant, "aud": aud, "iat": now, "exp": now + int(exp_in), **extra}


def _rs256(keys: RsaKeys, claims: dict[str, Any]) -> str:
    return jwt.encode(claims, keys.private_pem, algorithm="RS256")


def _hmac_jwt(key: bytes, claims: dict[str, Any]) -> str:
    """An HS256 token signed by hand (PyJWT rightly refuses to HMAC with a PEM key)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
    return signing_input + "." + b64(hmac.new(key, signing_input.encode(), hashlib.sha256).digest())


def _other_rsa_private_pem() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture
async def ingest(start_ingest: StartIngest, tmp_path: Path, rsa_keys: RsaKeys) -> tuple[str, StackCredentials]:
    credentials = StackCredentials()
    keys_file = tmp_path / "api-keys"
    keys_file.write_text(
        f"# acme's production key\n{ApiKeyEntry('acme', hash_api_key(FILE_KEY)).render()}  # issued today\n\n"
    )
    host = await start_ingest(
        credentials, auth_api_keys_file=str(keys_file), auth_jwt_rs256_public_key_file=str(rsa_keys.public_file)
    )
    return f"127.0.0.1:{host.bound_port}", credentials


async def _store(target: str, metadata: tuple[tuple[str, str], ...]) -> memory_pb2.StoreEventResponse:
    async with AsyncAthenaClient(target, options=ClientOptions(timeout=10, max_attempts=1)) as client:
        request = memory_pb2.StoreEventRequest(scope=SCOPE, event=EventInput("user", "hello").to_proto())
        return await client._stub.StoreEvent(request, timeout=10, metadata=metadata)


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


ACCEPTED: dict[str, Callable[[StackCredentials, RsaKeys], tuple[tuple[str, str], ...]]] = {
    "api key from AUTH_API_KEYS_FILE": lambda c, k: _bearer(FILE_KEY),
    "HS256 JWT": lambda c, k: _bearer(mint_hs256(c.jwt_secret, "acme", audience=AUDIENCE)),
    "RS256 JWT": lambda c, k: _bearer(_rs256(k, _claims())),
    "scheme in any case": lambda c, k: (("authorization", f"bearer {FILE_KEY}"),),
}

REFUSED: dict[str, Callable[[StackCredentials, RsaKeys], tuple[tuple[str, str], ...]]] = {
    "missing": lambda c, k: (),
    "not a bearer scheme": lambda c, k: (("authorization", f"Basic {FILE_KEY}"),),
    "empty bearer": lambda c, k: (("authorization", "Bearer "),),
    "two credentials": lambda c, k: (*_bearer(FILE_KEY), *_bearer(FILE_KEY)),
    "api key unknown": lambda c, k: _bearer(new_api_key()),
    "api key hash sent instead of the key": lambda c, k: _bearer(hash_api_key(FILE_KEY)),
    "HS256 bad signature": lambda c, k: _bearer(
        mint_hs256("not-the-secret-of-this-deployment-at-all", "acme", audience=AUDIENCE)
    ),
    "HS256 expired": lambda c, k: _bearer(jwt.encode(_claims(exp_in=-3600), c.jwt_secret, algorithm="HS256")),
    "HS256 wrong audience": lambda c, k: _bearer(mint_hs256(c.jwt_secret, "acme", audience="someone-else")),
    "HS256 without exp": lambda c, k: _bearer(
        jwt.encode({"tenant_id": "acme", "aud": AUDIENCE}, c.jwt_secret, algorithm="HS256")
    ),
    "HS256 without tenant claim": lambda c, k: _bearer(
        jwt.encode(_claims() | {"tenant_id": ""}, c.jwt_secret, algorithm="HS256")
    ),
    "RS256 bad signature": lambda c, k: _bearer(jwt.encode(_claims(), _other_rsa_private_pem(), algorithm="RS256")),
    "RS256 expired": lambda c, k: _bearer(_rs256(k, _claims(exp_in=-3600))),
    "RS256 wrong audience": lambda c, k: _bearer(_rs256(k, _claims(aud="someone-else"))),
    "alg none": lambda c, k: _bearer(jwt.encode(_claims(), None, algorithm="none")),  # type: ignore[arg-type]
    "HS256 signed with the RS256 public key (algorithm confusion)": lambda c, k: _bearer(
        _hmac_jwt(k.public_file.read_bytes(), _claims())
    ),
    "garbage jwt": lambda c, k: _bearer("aaa.bbb.ccc"),
}


@pytest.mark.parametrize("name", list(ACCEPTED))
async def test_valid_credentials_are_accepted(
    ingest: tuple[str, StackCredentials], rsa_keys: RsaKeys, name: str
) -> None:
    target, credentials = ingest
    stored = await _store(target, ACCEPTED[name](credentials, rsa_keys))
    assert stored.event_id


@pytest.mark.parametrize("name", list(REFUSED))
async def test_missing_bad_expired_or_wrong_audience_credentials_are_unauthenticated_alike(
    ingest: tuple[str, StackCredentials], rsa_keys: RsaKeys, redis, name: str
) -> None:
    target, credentials = ingest
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _store(target, REFUSED[name](credentials, rsa_keys))
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert err.value.details() == "missing or invalid credential"
    assert await redis.dbsize() == 0  # nothing was written


async def test_the_expiry_leeway_is_small(ingest: tuple[str, StackCredentials]) -> None:
    target, credentials = ingest
    just_expired = jwt.encode(_claims(exp_in=-5), credentials.jwt_secret, algorithm="HS256")
    assert (await _store(target, _bearer(just_expired))).event_id  # within AUTH_JWT_LEEWAY_SECONDS (30)
    long_expired = jwt.encode(_claims(exp_in=-120), credentials.jwt_secret, algorithm="HS256")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _store(target, _bearer(long_expired))
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_configured_issuer_is_required_and_a_custom_tenant_claim_is_read(start_ingest: StartIngest) -> None:
    credentials = StackCredentials()
    host = await start_ingest(credentials, auth_jwt_issuer="https://id.example", auth_jwt_tenant_claim="org")
    target = f"127.0.0.1:{host.bound_port}"
    good = jwt.encode(
        _claims("other") | {"org": "acme", "iss": "https://id.example"}, credentials.jwt_secret, algorithm="HS256"
    )
    assert (await _store(target, _bearer(good))).event_id
    for bad in (
        jwt.encode(
            _claims() | {"org": "acme", "iss": "https://evil.example"}, credentials.jwt_secret, algorithm="HS256"
        ),
        jwt.encode(_claims() | {"org": "acme"}, credentials.jwt_secret, algorithm="HS256"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _store(target, _bearer(bad))
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # the tenant comes from the configured claim, not from tenant_id
    wrong_tenant = jwt.encode(
        _claims("acme") | {"org": "globex", "iss": "https://id.example"}, credentials.jwt_secret, algorithm="HS256"
    )
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _store(target, _bearer(wrong_tenant))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_health_needs_no_credential(ingest: tuple[str, StackCredentials]) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    target, _ = ingest
    async with grpc.aio.insecure_channel(target) as channel:
        answer = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="readiness"), timeout=10
        )
    assert answer.status == health_pb2.HealthCheckResponse.SERVING


async def test_ingest_refuses_to_start_without_a_credential_source(build_settings: BuildSettings) -> None:
    settings = build_settings(StackCredentials(), auth_api_keys="", auth_jwt_hs256_secret="")
    with pytest.raises(SettingsError) as err:
        await build_ingest(settings)
    for name in (
        "AUTH_API_KEYS",
        "AUTH_API_KEYS_FILE",
        "AUTH_JWT_HS256_SECRET",
        "AUTH_JWT_RS256_PUBLIC_KEY_FILE",
        "AUTH_DISABLED",
    ):
        assert name in str(err.value)


async def test_a_malformed_key_entry_stops_start_up_without_echoing_it(build_settings: BuildSettings) -> None:
    leaked = new_api_key()
    settings = build_settings(
        StackCredentials(), auth_api_keys=f"acme:{leaked}"
    )  # the key pasted where its hash belongs
    with pytest.raises(SettingsError) as err:
        await build_ingest(settings)
    assert "AUTH_API_KEYS" in str(err.value) and leaked not in str(err.value)


async def test_a_short_hs256_secret_stops_start_up(build_settings: BuildSettings) -> None:
    with pytest.raises(SettingsError) as err:
        await build_ingest(build_settings(StackCredentials(), auth_jwt_hs256_secret="short"))
    assert "AUTH_JWT_HS256_SECRET" in str(err.value) and "short" not in str(err.value).split(":", 1)[1]


async def test_formation_refuses_to_start_without_the_internal_token(build_settings: BuildSettings) -> None:
    with pytest.raises(SettingsError) as err:
        await build_formation(build_settings(StackCredentials(), internal_auth_token=""))
    assert "INTERNAL_AUTH_TOKEN" in str(err.value)


async def test_auth_disabled_is_the_only_way_to_run_open_and_says_so_loudly(
    start_ingest: StartIngest, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="athena.auth"):
        host = await start_ingest(StackCredentials(), auth_disabled=True, auth_api_keys="", auth_jwt_hs256_secret="")
    assert any("WITHOUT AUTHENTICATION" in r.getMessage() for r in caplog.records)
    assert (await _store(f"127.0.0.1:{host.bound_port}", ())).event_id
