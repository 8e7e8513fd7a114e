"""TLS on the gRPC listeners and mTLS on the internal hop, with certificates made by a test CA."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from security_support import BuildSettings, ScratchCA, StartIngest, StartServices

from athena.auth import bearer_metadata
from athena.config import SettingsError
from athena.internal.v1 import formation_pb2_grpc
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_ingest.server import build_ingest

SCOPE = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="helper")
FAIL_FAST = ClientOptions(timeout=5, max_attempts=1)


async def test_a_tls_listener_serves_clients_trusting_its_ca_and_refuses_plaintext(
    start_ingest: StartIngest, scratch_ca: ScratchCA, tmp_path
) -> None:
    server = scratch_ca.issue("ingest", server=True)
    credentials = StackCredentials()
    host = await start_ingest(
        credentials, grpc_tls_cert_file=str(server.cert_file), grpc_tls_key_file=str(server.key_file)
    )
    target = f"127.0.0.1:{host.bound_port}"
    token = credentials.token_for("acme")

    async with AsyncAthenaClient(
        target, options=FAIL_FAST, bearer_token=token, root_certificates=scratch_ca.ca
    ) as client:
        stored = await client.store_event(SCOPE, EventInput("user", "over TLS"))
        assert [e.id for e in await client.get_context(SCOPE)] == [stored.event_id]

    async with AsyncAthenaClient(target, options=FAIL_FAST, bearer_token=token) as plaintext:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await plaintext.get_context(SCOPE)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE

    stranger = ScratchCA(tmp_path / "other-pki", name="someone-elses-ca")
    async with AsyncAthenaClient(
        target, options=FAIL_FAST, bearer_token=token, root_certificates=stranger.ca
    ) as untrusting:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await untrusting.get_context(SCOPE)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE

    # probes over TLS need no client certificate and no credential
    async with grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(scratch_ca.ca)) as channel:
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="readiness"), timeout=10
        )
        assert health.status == health_pb2.HealthCheckResponse.SERVING


async def test_the_internal_hop_is_mutual_tls_and_refuses_clients_without_a_certificate(
    start_services: StartServices, scratch_ca: ScratchCA, tmp_path
) -> None:
    own = scratch_ca.issue("athena-service", server=True)
    services = await start_services(
        grpc_tls_cert_file=str(own.cert_file),
        grpc_tls_key_file=str(own.key_file),
        internal_tls_ca_file=str(scratch_ca.ca_file),
    )
    internal = bearer_metadata(services.credentials.internal_token)
    request = memory_pb2.ListChainsRequest(scope=SCOPE)

    # ingest -> formation over mTLS: a public SearchMemory goes through
    async with services.client("acme", root_certificates=scratch_ca.ca) as client:
        assert await client.search_memory(SCOPE, "anything") == []

    async def list_chains(credentials: grpc.ChannelCredentials | None) -> memory_pb2.ListChainsResponse:
        channel = (
            grpc.aio.secure_channel(services.formation_target, credentials)
            if credentials is not None
            else grpc.aio.insecure_channel(services.formation_target)
        )
        async with channel:
            return await formation_pb2_grpc.FormationServiceStub(channel).ListChains(
                request, timeout=5, metadata=internal
            )

    client_cert = scratch_ca.issue("cognition", server=False)
    assert (
        list((await list_chains(grpc.ssl_channel_credentials(scratch_ca.ca, client_cert.key, client_cert.cert))).chains)
        == []
    )

    stranger = ScratchCA(tmp_path / "other-pki", name="someone-elses-ca").issue("intruder", server=False)
    refused = {
        "no client certificate": grpc.ssl_channel_credentials(scratch_ca.ca),
        "a certificate of another CA": grpc.ssl_channel_credentials(scratch_ca.ca, stranger.key, stranger.cert),
        "plaintext": None,
    }
    for what, credentials in refused.items():
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await list_chains(credentials)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE, f"{what}: {err.value.code()}"


async def test_a_client_ca_without_an_own_certificate_stops_start_up(
    build_settings: BuildSettings, scratch_ca: ScratchCA
) -> None:
    with pytest.raises(SettingsError) as err:
        await build_ingest(build_settings(StackCredentials(), internal_tls_ca_file=str(scratch_ca.ca_file)))
    assert "GRPC_TLS_CERT_FILE" in str(err.value)


def test_the_local_stack_probes_and_serves_over_tls(scratch_ca: ScratchCA, tmp_path) -> None:
    import asyncio

    from athena_cli.stack import LocalStack, StackPorts

    own = scratch_ca.issue("athena-service", server=True)
    env = {
        "GRPC_TLS_CERT_FILE": str(own.cert_file),
        "GRPC_TLS_KEY_FILE": str(own.key_file),
        "INTERNAL_TLS_CA_FILE": str(scratch_ca.ca_file),
    }
    with LocalStack(
        data_dir=tmp_path / "stack", ports=StackPorts.free(), services=("ingest",), env=env
    ) as stack:  # wait_serving probed over TLS

        async def roundtrip() -> list[str]:
            async with stack.client(tenant_id="acme", options=FAIL_FAST) as client:
                stored = await client.store_event(SCOPE, EventInput("user", "through the stack's TLS"))
                return [stored.event_id, *(e.id for e in await client.get_context(SCOPE))]

        stored_id, *window = asyncio.run(roundtrip())
        assert window == [stored_id]
