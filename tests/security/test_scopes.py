"""Credential scopes: memory:read, memory:write and memory:admin decide which methods a credential may call.

Ingest and formation run in this process against real redis-server, nx-27017 and Milvus Lite, with API
keys of one tenant holding different scopes (and the stack's HS256 secret for JWTs). A call whose
credential lacks the method's scope is PERMISSION_DENIED naming the scope, and does nothing. Every
method of MemoryService is also called with every kind of credential against the security layer alone
(a servicer of the test's own answering every method), which proves the whole table; a method without
an entry fails the server's build.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from security_support import MEMORY_SERVICE, BuildSettings, Services, StartGateway, StartServices

from athena.auth import (
    ADMIN,
    ALL_SCOPES,
    DEFAULT_SCOPES,
    METHOD_SCOPES,
    READ,
    WRITE,
    ApiKeyEntry,
    ApiKeyVerifier,
    AuthInterceptor,
    JwtPolicy,
    JwtVerifier,
    PublicAuthenticator,
    bearer_metadata,
    hash_api_key,
    mint_hs256,
    new_api_key,
    parse_api_key_entries,
)
from athena.config import SettingsError
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions, EventInput
from athena_client.memory.v1 import memory_pb2, memory_pb2_grpc
from athena_ingest.server import build_ingest

ROOT = Path(__file__).resolve().parents[2]
SCOPE = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="helper")
SERVICE = MEMORY_SERVICE.full_name
SECRET = "s" * 40

READ_KEY, WRITE_KEY, ADMIN_KEY, UNSCOPED_KEY = (new_api_key() for _ in range(4))
KEYS = ",".join(
    (
        ApiKeyEntry("acme", hash_api_key(READ_KEY), scopes=frozenset({READ})).render(),
        ApiKeyEntry("acme", hash_api_key(WRITE_KEY), scopes=frozenset({WRITE})).render(),
        ApiKeyEntry("acme", hash_api_key(ADMIN_KEY), scopes=frozenset({ADMIN})).render(),
        f"acme:{hash_api_key(UNSCOPED_KEY)}",  # an entry written before scopes existed
    )
)


def _client(services: Services, *, key: str | None = None, token: str | None = None) -> AsyncAthenaClient:
    return AsyncAthenaClient(
        services.target, options=ClientOptions(timeout=30, max_attempts=1), api_key=key, bearer_token=token
    )


def _lacks(error: grpc.aio.AioRpcError, scope: str) -> bool:
    return error.code() == grpc.StatusCode.PERMISSION_DENIED and error.details() == (
        f"the credential lacks the {scope} scope"
    )


async def _export(target: str, credential: str) -> list[memory_pb2.ExportUserResponse]:
    async with grpc.aio.insecure_channel(target) as channel:
        call = memory_pb2_grpc.MemoryServiceStub(channel).ExportUser(
            memory_pb2.ExportUserRequest(tenant_id="acme", user_id="alice"),
            metadata=bearer_metadata(credential),
            timeout=30,
        )
        return [item async for item in call]


async def _delete_chain(target: str, credential: str) -> memory_pb2.DeleteChainResponse:
    async with grpc.aio.insecure_channel(target) as channel:
        return await memory_pb2_grpc.MemoryServiceStub(channel).DeleteChain(
            memory_pb2.DeleteChainRequest(scope=SCOPE, chain_id="ch_0"),
            metadata=bearer_metadata(credential),
            timeout=30,
        )


@pytest.fixture
async def services(start_services: StartServices) -> Services:
    return await start_services(auth_api_keys=KEYS)


# --- against ingest and formation ----------------------------------------------------------------------


async def test_a_read_only_key_can_read_and_search_but_storing_is_permission_denied_naming_memory_write(
    services: Services,
) -> None:
    async with _client(services, key=READ_KEY) as reader:
        assert await reader.get_context(SCOPE) == []
        assert await reader.search_memory(SCOPE, "the invoice I asked about") == []
        assert await reader.list_chains(SCOPE) == []
        for write in (
            lambda: reader.store_event(SCOPE, EventInput("user", "remember my aisle seat")),
            lambda: reader.store_events(SCOPE, [EventInput("user", "remember my aisle seat")]),
            lambda: reader.flush_window(SCOPE),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await write()
            assert _lacks(err.value, WRITE), f"{err.value.code()}: {err.value.details()}"
    async with _client(services, key=UNSCOPED_KEY) as other:
        assert await other.get_context(SCOPE) == []  # nothing was stored


async def test_an_unscoped_key_keeps_read_and_write_and_forget_export_and_delete_need_memory_admin(
    services: Services,
) -> None:
    async with _client(services, key=UNSCOPED_KEY) as client:
        stored = await client.store_event(SCOPE, EventInput("user", "my invoice shows the wrong VAT number"))
        assert [e.id for e in await client.get_context(SCOPE)] == [stored.event_id]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.forget_user("acme", "alice")
        assert _lacks(err.value, ADMIN), f"{err.value.code()}: {err.value.details()}"
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _export(services.target, UNSCOPED_KEY)
        assert _lacks(err.value, ADMIN), f"{err.value.code()}: {err.value.details()}"
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _delete_chain(services.target, UNSCOPED_KEY)
        assert _lacks(err.value, ADMIN), f"{err.value.code()}: {err.value.details()}"
        assert [e.id for e in await client.get_context(SCOPE)] == [stored.event_id]  # nothing was erased


async def test_an_admin_key_can_forget_a_user_and_admin_implies_read_and_write(services: Services) -> None:
    async with _client(services, key=ADMIN_KEY) as admin:
        await admin.store_event(SCOPE, EventInput("user", "my invoice shows the wrong VAT number"))
        assert len(await admin.get_context(SCOPE)) == 1
        receipt = await admin.forget_user("acme", "alice")
        assert receipt.events == 1
        assert await admin.get_context(SCOPE) == []


async def test_jwt_scopes_come_from_the_scope_or_scp_claim(services: Services) -> None:
    secret, audience = services.credentials.jwt_secret, services.credentials.audience

    def token(**claims: Any) -> str:
        now = int(time.time())
        return jwt.encode({"tenant_id": "acme", "aud": audience, "exp": now + 600, **claims}, secret, "HS256")

    store = EventInput("user", "my seat preference is the aisle")
    async with _client(services, token=mint_hs256(secret, "acme", audience=audience, scopes=[READ])) as reader:
        assert await reader.get_context(SCOPE) == []
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await reader.store_event(SCOPE, store)
        assert _lacks(err.value, WRITE), f"{err.value.code()}: {err.value.details()}"
    async with _client(services, token=token(scp=[WRITE])) as writer:  # scp: a list of strings
        assert (await writer.store_event(SCOPE, store)).event_id
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await writer.get_context(SCOPE)
        assert _lacks(err.value, READ)
    async with _client(services, token=token(scope="openid profile")) as foreign:  # none of Athena's scopes
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await foreign.get_context(SCOPE)
        assert _lacks(err.value, READ)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await foreign.store_event(SCOPE, store)
        assert _lacks(err.value, WRITE)
    async with _client(services, token=token()) as unscoped:  # no scope claim: read and write, not admin
        assert len(await unscoped.get_context(SCOPE)) == 1
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await unscoped.forget_user("acme", "alice")
        assert _lacks(err.value, ADMIN)


# --- every method, against the security layer alone ------------------------------------------------------


def _answering_servicer() -> memory_pb2_grpc.MemoryServiceServicer:
    """A servicer answering every MemoryService method with an empty response."""
    methods: dict[str, Any] = {}
    for method in MEMORY_SERVICE.methods:
        response = getattr(memory_pb2, method.output_type.name)
        if method.server_streaming:

            async def stream(self: Any, request: Any, context: Any, response: Any = response) -> AsyncIterator[Any]:
                yield response()

            methods[method.name] = stream
        else:

            async def unary(self: Any, request: Any, context: Any, response: Any = response) -> Any:
                return response()

            methods[method.name] = unary
    return type("Answering", (memory_pb2_grpc.MemoryServiceServicer,), methods)()


def _request(method: Any) -> Any:
    request = getattr(memory_pb2, method.input_type.name)()
    if "scope" in method.input_type.fields_by_name:
        request.scope.CopyFrom(SCOPE)
    else:
        request.tenant_id, request.user_id = "acme", "alice"
    return request


async def _call(channel: grpc.aio.Channel, method: Any, credential: str) -> None:
    path = f"/{SERVICE}/{method.name}"
    response = getattr(memory_pb2, method.output_type.name)
    kwargs: dict[str, Any] = {
        "request_serializer": lambda m: m.SerializeToString(),
        "response_deserializer": response.FromString,
    }
    metadata = bearer_metadata(credential)
    if method.server_streaming:
        [_ async for _ in channel.unary_stream(path, **kwargs)(_request(method), metadata=metadata, timeout=10)]
    else:
        await channel.unary_unary(path, **kwargs)(_request(method), metadata=metadata, timeout=10)


async def test_every_public_method_answers_exactly_the_credentials_holding_its_scope(
    start_gateway: StartGateway,
) -> None:
    credentials = StackCredentials()
    host = await start_gateway(_answering_servicer(), credentials, auth_api_keys=KEYS)
    held: dict[str, frozenset[str]] = {
        READ_KEY: frozenset({READ}),
        WRITE_KEY: frozenset({WRITE}),
        ADMIN_KEY: frozenset(ALL_SCOPES),  # admin implies read and write
        UNSCOPED_KEY: DEFAULT_SCOPES,
        mint_hs256(credentials.jwt_secret, "acme", audience=credentials.audience, scopes=[READ, WRITE]): DEFAULT_SCOPES,
        mint_hs256(credentials.jwt_secret, "acme", audience=credentials.audience, scopes=[]): frozenset(),
    }
    async with grpc.aio.insecure_channel(f"127.0.0.1:{host.bound_port}") as channel:
        for method in MEMORY_SERVICE.methods:
            needed = METHOD_SCOPES[SERVICE][method.name]
            for credential, scopes in held.items():
                if needed in scopes:
                    await _call(channel, method, credential)
                    continue
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await _call(channel, method, credential)
                assert _lacks(err.value, needed), f"{method.name} with {sorted(scopes)}: {err.value.details()}"


def test_the_scope_table_is_the_documented_one_and_covers_exactly_the_public_methods() -> None:
    table = METHOD_SCOPES[SERVICE]
    assert set(table) == {m.name for m in MEMORY_SERVICE.methods}, "a method without a scope (or a stale entry)"
    assert {name for name, scope in table.items() if scope == ADMIN} == {"ForgetUser", "ExportUser", "DeleteChain"}
    # docs/security.md shows the table: one row per scope, the methods comma-separated
    documented: dict[str, str] = {}
    for scope, names in re.findall(
        r"^\| `(memory:\w+)` \| ([A-Za-z, ]+) \|", (ROOT / "docs/security.md").read_text(), re.M
    ):
        documented |= {name.strip(): scope for name in names.split(",")}
    assert documented == dict(table)


def test_a_tenant_bound_server_whose_scope_table_misses_a_method_fails_to_build() -> None:
    table = {SERVICE: {name: scope for name, scope in METHOD_SCOPES[SERVICE].items() if name != "ExportUser"}}
    authenticator = PublicAuthenticator(api_keys=ApiKeyVerifier([]), jwts=JwtVerifier(JwtPolicy(audience="athena")))
    with pytest.raises(TypeError, match="ExportUser"):
        AuthInterceptor(authenticator, [MEMORY_SERVICE], tenant_bound=True, method_scopes=table)
    AuthInterceptor(authenticator, [MEMORY_SERVICE], tenant_bound=True)  # the real table builds


# --- API key entries and JWT claims ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scopes",
    [DEFAULT_SCOPES, frozenset({READ}), frozenset({WRITE}), frozenset({ADMIN}), frozenset({ADMIN, READ})],
    ids=lambda s: "+".join(sorted(s)),
)
def test_api_key_entries_round_trip_with_their_scopes(scopes: frozenset[str]) -> None:
    entry = ApiKeyEntry("acme", hash_api_key(new_api_key()), scopes=scopes)
    assert parse_api_key_entries(entry.render(), where="test") == [entry]
    assert parse_api_key_entries(f"# a comment\n{entry.render()}  # issued today\n", where="f", separator="\n") == [
        entry
    ]


def test_an_entry_renders_its_scopes_in_a_fixed_order_and_the_default_as_before() -> None:
    digest = hash_api_key(new_api_key())
    assert ApiKeyEntry("acme", digest).render() == f"acme:{digest}"
    assert ApiKeyEntry("acme", digest, scopes=frozenset({READ, WRITE})).render() == f"acme:{digest}"
    assert ApiKeyEntry("acme", digest, scopes=frozenset({ADMIN, READ})).render() == (
        f"acme:{digest}:memory:read+memory:admin"
    )
    (spaced,) = parse_api_key_entries(f" acme : {digest.upper()} : memory:admin + memory:read ", where="test")
    assert spaced == ApiKeyEntry("acme", digest, scopes=frozenset({READ, ADMIN}))


def test_an_unscoped_entry_keeps_read_and_write() -> None:
    key = new_api_key()
    (entry,) = parse_api_key_entries(f"acme:{hash_api_key(key)}", where="test")
    principal = ApiKeyVerifier([entry]).verify(key)
    assert principal is not None and principal.scopes == DEFAULT_SCOPES
    assert principal.allows(READ) and principal.allows(WRITE) and not principal.allows(ADMIN)


@pytest.mark.parametrize(
    "scope_text",
    ["memory:delete", "memory:read+", "", "MEMORY:READ", new_api_key()],
    ids=["unknown", "suffixed", "empty", "upper-case", "an-api-key"],
)
def test_an_entry_with_an_unknown_or_empty_scope_is_refused_naming_its_position_not_its_text(scope_text: str) -> None:
    digest = hash_api_key(new_api_key())
    good = f"acme:{digest}"
    with pytest.raises(ValueError) as err:
        parse_api_key_entries(f"{good},{good}:{scope_text}", where="AUTH_API_KEYS")
    message = str(err.value)
    assert message.startswith("AUTH_API_KEYS entry 2:") and "memory:read, memory:write, memory:admin" in message
    assert digest not in message and (not scope_text or scope_text not in message)


async def test_a_bad_scope_in_the_keys_file_stops_start_up_naming_the_line(
    build_settings: BuildSettings, tmp_path: Path
) -> None:
    leaked = new_api_key()
    keys_file = tmp_path / "api-keys"
    keys_file.write_text(
        f"# acme\nacme:{hash_api_key(new_api_key())}:memory:read\nacme:{hash_api_key(new_api_key())}:{leaked}\n"
    )
    with pytest.raises(SettingsError) as err:
        await build_ingest(build_settings(StackCredentials(), auth_api_keys_file=str(keys_file)))
    assert "AUTH_API_KEYS_FILE line 3" in str(err.value) and leaked not in str(err.value)


@pytest.mark.parametrize(
    ("claims", "scopes"),
    [
        ({}, DEFAULT_SCOPES),
        ({"scope": "memory:read"}, {READ}),
        ({"scope": "openid memory:admin profile"}, {ADMIN}),
        ({"scp": ["memory:write", "memory:read"]}, {READ, WRITE}),
        ({"scp": "memory:write"}, {WRITE}),
        ({"scope": "memory:read", "scp": ["memory:admin"]}, {READ}),  # the standard claim wins
        ({"scope": "openid profile"}, set()),
        ({"scope": ""}, set()),
        ({"scope": 7}, set()),
        ({"scp": [7, "memory:read"]}, {READ}),
    ],
    ids=lambda v: repr(sorted(v)) if isinstance(v, (set, frozenset)) else repr(v),  # the same ids in every process
)
def test_a_tokens_scopes_are_athenas_names_in_its_scope_claim(claims: dict[str, Any], scopes: set[str]) -> None:
    now = int(time.time())
    token = jwt.encode({"tenant_id": "acme", "aud": "athena", "exp": now + 60, **claims}, SECRET, "HS256")
    principal = JwtVerifier(JwtPolicy(audience="athena"), hs256_secret=SECRET).verify(token)
    assert principal is not None and principal.scopes == frozenset(scopes)


def test_mint_hs256_writes_the_scope_claim_and_refuses_unknown_names() -> None:
    token = mint_hs256(SECRET, "acme", audience="athena", scopes=[ADMIN, READ])
    assert jwt.decode(token, options={"verify_signature": False})["scope"] == "memory:read memory:admin"
    assert "scope" not in jwt.decode(mint_hs256(SECRET, "acme", audience="athena"), options={"verify_signature": False})
    with pytest.raises(ValueError):
        mint_hs256(SECRET, "acme", audience="athena", scopes=["memory:everything"])
