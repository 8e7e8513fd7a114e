"""The internal FormationService answers only callers holding the internal token (health stays open)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from security_support import StartServices

from athena.auth import bearer_metadata
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena_client.memory.v1 import memory_pb2

SCOPE = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="helper")
FORMATION = formation_pb2.DESCRIPTOR.services_by_name["FormationService"]


def _requests() -> dict[str, Any]:
    return {
        "FormChain": formation_pb2.FormChainRequest(segment=formation_pb2.Segment(id="seg_x", scope=SCOPE)),
        "SearchMemory": formation_pb2.SearchRequest(
            request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query="anything", limit=3)
        ),
        "GetProfile": formation_pb2.ProfileRequest(scope=SCOPE, limit=10),
        "GetChain": memory_pb2.GetChainRequest(scope=SCOPE, chain_id="ch_0"),
        "ListChains": memory_pb2.ListChainsRequest(scope=SCOPE),
        "ForgetUser": memory_pb2.ForgetUserRequest(tenant_id="acme", user_id="alice"),
        "DeleteChain": memory_pb2.DeleteChainRequest(scope=SCOPE, chain_id="ch_0"),
        "UpdateChain": memory_pb2.UpdateChainRequest(scope=SCOPE, chain_id="ch_0", pinned=True),
        "GetChainEvents": memory_pb2.GetChainEventsRequest(scope=SCOPE, chain_id="ch_0"),
        "ListRejections": memory_pb2.ListRejectionsRequest(scope=SCOPE),
        "AdmitRejection": memory_pb2.AdmitRejectionRequest(scope=SCOPE, segment_id="seg_x"),
        "RestoreChain": memory_pb2.RestoreChainRequest(scope=SCOPE, chain_id="ch_0"),
        "ExportUser": memory_pb2.ExportUserRequest(tenant_id="acme", user_id="alice"),  # server-streaming
    }


async def _call(stub: formation_pb2_grpc.FormationServiceStub, method: str, request: Any, metadata: Any) -> None:
    call = getattr(stub, method)(request, timeout=30, metadata=metadata)
    if FORMATION.methods_by_name[method].server_streaming:
        [_ async for _ in call]
    else:
        await call


async def test_formation_refuses_every_call_without_the_internal_token(start_services: StartServices) -> None:
    services = await start_services()
    requests = _requests()
    methods = {m.name for m in FORMATION.methods}
    assert set(requests) == methods, "a FormationService RPC is missing from this test"
    tenant_jwt = services.credentials.token_for("acme")
    wrong = (
        ("no credential", ()),
        ("wrong token", bearer_metadata("x" * 43)),
        ("a public credential", bearer_metadata(services.credentials.dev_api_key)),
        ("a tenant's JWT", bearer_metadata(tenant_jwt)),
    )
    async with grpc.aio.insecure_channel(services.formation_target) as channel:
        stub = formation_pb2_grpc.FormationServiceStub(channel)
        for method, request in requests.items():
            for what, metadata in wrong:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await _call(stub, method, request, metadata)
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED, f"{method} with {what}: {err.value.code()}"
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="readiness"), timeout=10
        )
        assert health.status == health_pb2.HealthCheckResponse.SERVING


async def test_formation_answers_the_internal_token(start_services: StartServices) -> None:
    services = await start_services()
    async with services.formation_channel() as channel:
        listed = await services.formation_stub(channel).ListChains(
            memory_pb2.ListChainsRequest(scope=SCOPE), timeout=30
        )
    assert list(listed.chains) == []
    # a server-streaming call through the same channel interceptor carries the token too
    async with services.formation_channel() as channel:
        exported = [
            item
            async for item in services.formation_stub(channel).ExportUser(
                memory_pb2.ExportUserRequest(tenant_id="acme", user_id="alice"), timeout=30
            )
        ]
    assert exported and exported[-1].HasField("summary") and exported[-1].summary.chains == 0
    # and ingest, which sends the token, reaches it for a tenant's SearchMemory
    async with services.client("acme") as client:
        assert await client.search_memory(SCOPE, "anything") == []
