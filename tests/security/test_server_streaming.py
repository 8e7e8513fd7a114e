"""Server-streaming RPCs (MemoryService.ExportUser) pass through the same interceptors as unary ones.

A real grpc.aio server in this process serves MemoryService with a servicer of the test's own that
implements ExportUser only, behind the production interceptors (metrics, error mapping, the public
API's authentication): the credential and its tenant are checked before the first response, an
Athena error ends the stream with its status and rich details whether it comes before the first
response or mid-stream, and the call is counted by its final code.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
from prometheus_client import REGISTRY
from security_support import StartGateway

from athena.auth import ADMIN, ApiKeyEntry, bearer_metadata, hash_api_key, new_api_key
from athena.errors import FieldViolation, InvalidArgument, NotFound
from athena.grpc_util import ServiceHost, bad_request_violations
from athena_cli.stack import StackCredentials
from athena_client.memory.v1 import memory_pb2, memory_pb2_grpc

SERVICE = "athena.memory.v1.MemoryService"
ADMIN_KEY = new_api_key()  # acme, memory:admin
READ_WRITE_KEY = new_api_key()  # acme, no scopes named: read and write
KEYS = ",".join(
    (
        ApiKeyEntry("acme", hash_api_key(ADMIN_KEY), scopes=frozenset({ADMIN})).render(),
        ApiKeyEntry("acme", hash_api_key(READ_WRITE_KEY)).render(),
    )
)
EVENTS = 3


class ExportOnly(memory_pb2_grpc.MemoryServiceServicer):
    """ExportUser alone; what it does is chosen by the request's user_id."""

    def __init__(self) -> None:
        self.seen: list[memory_pb2.ExportUserRequest] = []

    async def ExportUser(
        self, request: memory_pb2.ExportUserRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[memory_pb2.ExportUserResponse]:
        self.seen.append(memory_pb2.ExportUserRequest(tenant_id=request.tenant_id, user_id=request.user_id))
        if request.user_id == "nobody":
            raise NotFound("no such user")
        for i in range(EVENTS):
            if i == 2 and request.user_id == "fails-mid-stream":
                raise InvalidArgument([FieldViolation("user_id", "changed while exporting")])
            if i == 2 and request.user_id == "crashes-mid-stream":
                raise RuntimeError("a detail that must stay on the server")
            yield memory_pb2.ExportUserResponse(event=memory_pb2.Event(id=f"ev_{i}", content=f"event {i}"))
        yield memory_pb2.ExportUserResponse(summary=memory_pb2.ExportSummary(events=EVENTS))


def _upload_handler(received: list[bytes]) -> Callable[[Any, grpc.aio.ServicerContext], Any]:
    async def upload(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> bytes:
        async for raw in requests:
            received.append(raw)
        return b"stored"

    return upload


def _upload_service(service: str, received: list[bytes]) -> grpc.GenericRpcHandler:
    """A client-streaming method `Upload` of `service` (bytes in and out)."""
    return grpc.method_handlers_generic_handler(
        service, {"Upload": grpc.stream_unary_rpc_method_handler(_upload_handler(received))}
    )


async def _export(
    host: ServiceHost, user_id: str, *, tenant_id: str = "acme", key: str | None = ADMIN_KEY
) -> tuple[list[memory_pb2.ExportUserResponse], grpc.aio.AioRpcError | None]:
    """What the stream delivered before it ended, and the error it ended with (None: OK)."""
    metadata = bearer_metadata(key) if key else ()
    items: list[memory_pb2.ExportUserResponse] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{host.bound_port}") as channel:
        call = memory_pb2_grpc.MemoryServiceStub(channel).ExportUser(
            memory_pb2.ExportUserRequest(tenant_id=tenant_id, user_id=user_id), metadata=metadata, timeout=10
        )
        try:
            async for item in call:
                items.append(item)
        except grpc.aio.AioRpcError as err:
            return items, err
    return items, None


def _handled(code: str) -> float:
    value = REGISTRY.get_sample_value(
        "memos_grpc_server_handled_total", {"grpc_service": SERVICE, "grpc_method": "ExportUser", "grpc_code": code}
    )
    return value or 0.0


def _sample(name: str) -> float:
    return REGISTRY.get_sample_value(name, {"grpc_service": SERVICE, "grpc_method": "ExportUser"}) or 0.0


async def _eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    """The server counts a call as its handler ends, which may be just after the client saw the status."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


@pytest.fixture
async def gateway(start_gateway: StartGateway) -> tuple[ServiceHost, ExportOnly]:
    servicer = ExportOnly()
    return await start_gateway(servicer, StackCredentials(), auth_api_keys=KEYS), servicer


async def test_a_stream_with_a_valid_credential_delivers_every_item_and_the_empty_tenant_is_the_credentials(
    gateway: tuple[ServiceHost, ExportOnly],
) -> None:
    host, servicer = gateway
    items, error = await _export(host, "alice", tenant_id="")
    assert error is None
    assert [i.event.id for i in items[:EVENTS]] == ["ev_0", "ev_1", "ev_2"] and items[-1].summary.events == EVENTS
    assert [(r.tenant_id, r.user_id) for r in servicer.seen] == [("acme", "alice")]


@pytest.mark.parametrize(
    ("what", "key"),
    [("no credential", None), ("an unknown key", new_api_key()), ("a key's hash", "0" * 64)],
    ids=["no credential", "an unknown key", "a key's hash"],
)
async def test_a_stream_without_a_valid_credential_is_unauthenticated_before_its_first_item(
    gateway: tuple[ServiceHost, ExportOnly], what: str, key: str | None
) -> None:
    host, servicer = gateway
    items, error = await _export(host, "alice", key=key)
    assert error is not None and error.code() == grpc.StatusCode.UNAUTHENTICATED, what
    assert error.details() == "missing or invalid credential"
    assert items == [] and servicer.seen == []  # refused before the handler ran


async def test_a_stream_naming_another_tenant_is_permission_denied_before_its_first_item(
    gateway: tuple[ServiceHost, ExportOnly],
) -> None:
    host, servicer = gateway
    items, error = await _export(host, "alice", tenant_id="globex")
    assert error is not None and error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "globex" not in (error.details() or "")
    assert items == [] and servicer.seen == []


async def test_a_stream_needing_a_scope_the_credential_lacks_is_permission_denied_naming_it(
    gateway: tuple[ServiceHost, ExportOnly],
) -> None:
    host, servicer = gateway
    items, error = await _export(host, "alice", key=READ_WRITE_KEY)
    assert error is not None and error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert error.details() == "the credential lacks the memory:admin scope"
    assert items == [] and servicer.seen == []


async def test_an_athena_error_before_the_first_item_ends_the_stream_with_its_status(
    gateway: tuple[ServiceHost, ExportOnly],
) -> None:
    host, _ = gateway
    items, error = await _export(host, "nobody")
    assert items == []
    assert error is not None and error.code() == grpc.StatusCode.NOT_FOUND and error.details() == "no such user"


async def test_an_athena_error_mid_stream_keeps_the_items_sent_and_ends_with_its_status_and_rich_details(
    gateway: tuple[ServiceHost, ExportOnly],
) -> None:
    host, _ = gateway
    items, error = await _export(host, "fails-mid-stream")
    assert [i.event.id for i in items] == ["ev_0", "ev_1"]
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_request_violations(error) == [("user_id", "changed while exporting")]  # the BadRequest detail


async def test_an_unexpected_exception_mid_stream_is_a_bare_internal_error(
    gateway: tuple[ServiceHost, ExportOnly],
) -> None:
    host, _ = gateway
    items, error = await _export(host, "crashes-mid-stream")
    assert [i.event.id for i in items] == ["ev_0", "ev_1"]
    assert error is not None and error.code() == grpc.StatusCode.INTERNAL and error.details() == "internal error"


async def test_a_stream_is_counted_and_timed_once_by_its_final_code(gateway: tuple[ServiceHost, ExportOnly]) -> None:
    host, _ = gateway
    codes = ("OK", "NOT_FOUND", "INVALID_ARGUMENT", "PERMISSION_DENIED", "UNAUTHENTICATED")
    before = {code: _handled(code) for code in codes}
    started, timed = _sample("memos_grpc_server_started_total"), _sample("memos_grpc_server_handling_seconds_count")
    await _export(host, "alice")
    await _export(host, "nobody")
    await _export(host, "fails-mid-stream")
    await _export(host, "alice", key=READ_WRITE_KEY)
    await _export(host, "alice", key=None)
    assert await _eventually(lambda: all(_handled(code) == before[code] + 1 for code in codes)), {
        code: _handled(code) - before[code] for code in codes
    }
    assert _sample("memos_grpc_server_started_total") == started + len(codes)
    assert _sample("memos_grpc_server_handling_seconds_count") == timed + len(codes)


async def test_a_client_streaming_method_of_the_guarded_service_is_refused_even_with_a_valid_credential(
    start_gateway: StartGateway,
) -> None:
    guarded: list[bytes] = []
    unguarded: list[bytes] = []
    host = await start_gateway(
        ExportOnly(),
        StackCredentials(),
        auth_api_keys=KEYS,
        generic_handlers=[_upload_service(SERVICE, guarded), _upload_service("test.Unguarded", unguarded)],
    )
    async with grpc.aio.insecure_channel(f"127.0.0.1:{host.bound_port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await channel.stream_unary(f"/{SERVICE}/Upload")(
                iter([b"one", b"two"]), metadata=bearer_metadata(ADMIN_KEY), timeout=10
            )
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert guarded == []
        # the same method of a service the interceptor does not guard is served (so the refusal is auth's)
        assert await channel.stream_unary("/test.Unguarded/Upload")(iter([b"one", b"two"]), timeout=10) == b"stored"
        assert unguarded == [b"one", b"two"]
