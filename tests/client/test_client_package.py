"""The client distribution (clients/python, athena_client) on its own: role names, requests, retries,
and that it carries nothing of the server (no import of athena.*, no metrics registered)."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import typing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import grpc
import pytest

import athena_client
from athena.auth import AUTHORIZATION, bearer_metadata, bearer_token
from athena.local import free_port
from athena_client import (
    AsyncAthenaClient,
    AthenaClient,
    ClientOptions,
    ContextPage,
    EventInput,
    ExponentialFullJitter,
    credentials,
)
from athena_client.memory.v1 import memory_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python" / "athena_client"
# What the client's code may import: the standard library and its three dependencies.
ALLOWED_ROOTS = {"athena_client", "grpc", "google"}


@pytest.mark.parametrize(
    ("role", "type_", "expected"),
    [
        ("user", None, (pb.ROLE_USER, pb.EVENT_TYPE_MESSAGE)),
        ("agent", None, (pb.ROLE_AGENT, pb.EVENT_TYPE_MESSAGE)),
        ("assistant", None, (pb.ROLE_AGENT, pb.EVENT_TYPE_MESSAGE)),  # OpenAI's name of the agent
        ("system", None, (pb.ROLE_SYSTEM, pb.EVENT_TYPE_MESSAGE)),
        ("tool", None, (pb.ROLE_AGENT, pb.EVENT_TYPE_OBSERVATION)),  # a tool result the agent observed
        ("agent", "thought", (pb.ROLE_AGENT, pb.EVENT_TYPE_THOUGHT)),
        ("assistant", "action", (pb.ROLE_AGENT, pb.EVENT_TYPE_ACTION)),
        ("user", "message", (pb.ROLE_USER, pb.EVENT_TYPE_MESSAGE)),
        ("tool", "observation", (pb.ROLE_AGENT, pb.EVENT_TYPE_OBSERVATION)),
    ],
)
def test_role_and_type_names_map_to_the_api_enums(role: str, type_: str | None, expected: tuple[int, int]) -> None:
    event = EventInput(role, "text", type=type_).to_proto()
    assert (event.role, event.type) == expected


@pytest.mark.parametrize(("role", "type_"), [("bot", None), ("User", None), ("", None), ("user", "chat")])
def test_an_unknown_role_or_type_name_is_refused_before_anything_is_sent(role: str, type_: str | None) -> None:
    with pytest.raises(ValueError, match="unknown"):
        EventInput(role, "text", type=type_)


def test_an_event_gets_its_id_once_and_a_naive_timestamp_is_utc() -> None:
    naive = datetime(2025, 3, 1, 12, 0, 0)
    event = EventInput("user", "hi", timestamp=naive, metadata={"workflow_id": "w"}).to_proto()
    assert len(event.event_id) == 32 and event.metadata == {"workflow_id": "w"}
    assert event.timestamp.ToDatetime(tzinfo=UTC) == naive.replace(tzinfo=UTC)
    aware = datetime(2025, 3, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    assert EventInput("user", "hi", timestamp=aware).to_proto().timestamp == event.timestamp
    assert EventInput("user", "hi", event_id="mine").to_proto().event_id == "mine"


def test_dataclass_field_types_evaluate() -> None:
    """get_type_hints evaluates the annotations: Optional/Union, never `X | None`, so Python 3.9 can too."""
    assert typing.get_type_hints(EventInput)["timestamp"] == datetime | None
    assert set(typing.get_type_hints(ClientOptions)) == {"timeout", "max_attempts", "backoff", "metadata"}


def test_context_page_is_the_list_of_its_events_with_the_chains_and_the_token() -> None:
    response = pb.GetContextResponse(
        events=[pb.Event(id="e1"), pb.Event(id="e2")],
        relevant_chains=[pb.SearchHit(chain=pb.Chain(id="c1"), source=pb.HIT_SOURCE_CHAIN)],
        profile=[pb.ProfileFact(text="I'm vegan.", event_id="e0", chain_id="c1")],
        next_page_token="next",
    )
    page = ContextPage.of(response)
    assert [e.id for e in page] == ["e1", "e2"] == [e.id for e in page.events]
    assert [h.chain.id for h in page.relevant_chains] == ["c1"] and page.next_page_token == "next"
    assert [f.text for f in page.profile] == ["I'm vegan."]
    assert ContextPage() == [] and ContextPage().next_page_token == "" and ContextPage().relevant_chains == []
    assert ContextPage().profile == []


def test_the_credential_travels_as_the_server_reads_it() -> None:
    assert AUTHORIZATION is credentials.AUTHORIZATION and bearer_metadata is credentials.bearer_metadata
    client = AthenaClient(
        "127.0.0.1:1", api_key="k-123", options=ClientOptions(metadata=(("Authorization", "Bearer old"), ("x", "y")))
    )
    with client:
        assert list(client.options.metadata) == [("x", "y"), ("authorization", "Bearer k-123")]
        assert bearer_token(client.options.metadata) == "k-123"
    with pytest.raises(ValueError, match="not both"):
        AthenaClient("127.0.0.1:1", api_key="a", bearer_token="b")


def test_the_sync_and_async_clients_have_the_same_methods_and_arguments() -> None:
    def surface(cls: type) -> dict[str, list[tuple[str, object, object]]]:
        return {
            name: [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
            for name, fn in vars(cls).items()
            if not name.startswith("_") and (callable(fn) or isinstance(fn, staticmethod))
        }

    sync, asynchronous = surface(AthenaClient), surface(AsyncAthenaClient)
    assert sync == asynchronous
    assert {"scope", "store_event", "store_events", "get_context", "search_memory", "get_chain", "list_chains"} <= set(
        sync
    )
    assert {"flush_window", "forget_user", "context_pages", "get_full_context", "close"} <= set(sync)
    for name in sync:
        if name != "scope":
            assert not inspect.iscoroutinefunction(getattr(AthenaClient, name)), name
    assert [p for p in inspect.signature(AthenaClient.get_context).parameters][1:] == [
        "scope",
        "query",
        "chain_limit",
        "profile_limit",
        "limit",
        "page_token",
    ]


class CountingBackoff:
    def __init__(self) -> None:
        self.failures: list[int] = []

    def compute(self, failures: int) -> float:
        self.failures.append(failures)
        return 0.01


def test_the_sync_client_retries_unavailable_with_backoff_then_raises() -> None:
    backoff = CountingBackoff()
    options = ClientOptions(timeout=2, max_attempts=3, backoff=backoff)
    with AthenaClient(f"127.0.0.1:{free_port()}", options=options) as client, pytest.raises(grpc.RpcError) as err:
        client.store_event(client.scope("t", "u", "a"), EventInput("user", "nobody listens"))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert backoff.failures == [1, 2]


async def test_the_async_client_retries_unavailable_with_backoff_then_raises() -> None:
    backoff = CountingBackoff()
    options = ClientOptions(timeout=2, max_attempts=3, backoff=backoff)
    async with AsyncAthenaClient(f"127.0.0.1:{free_port()}", options=options) as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.get_context(client.scope("t", "u", "a"), query="anything")
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert backoff.failures == [1, 2]


def test_full_jitter_stays_under_its_ceiling() -> None:
    backoff = ExponentialFullJitter(base=0.2, cap=1.0)
    for failures, ceiling in [(1, 0.2), (2, 0.4), (3, 0.8), (4, 1.0), (30, 1.0)]:
        assert all(0.0 <= backoff.compute(failures) <= ceiling for _ in range(50))


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_client_code_imports_only_the_standard_library_grpc_and_protobuf() -> None:
    stdlib = set(sys.stdlib_module_names)
    foreign = {
        str(path.relative_to(CLIENT)): sorted(roots)
        for path in CLIENT.rglob("*.py")
        if (roots := _imported_roots(path) - stdlib - ALLOWED_ROOTS)
    }
    assert foreign == {}


def test_importing_the_client_registers_no_metrics_and_loads_nothing_of_the_server() -> None:
    """In a fresh interpreter of the server's venv (where prometheus_client and athena are installed)."""
    code = """
import json, sys
from prometheus_client import REGISTRY
before = set(REGISTRY._names_to_collectors)
import athena_client
from athena_client import AthenaClient, AsyncAthenaClient
AthenaClient("127.0.0.1:1").close()
after = set(REGISTRY._names_to_collectors)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in
    {"athena", "athena_cli", "athena_ingest", "athena_cognition", "athena_formation", "athena_lab",
     "redis", "pymongo", "pymilvus", "torch", "opentelemetry", "numpy"})
print(json.dumps({"new_metrics": sorted(after - before), "loaded": loaded}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == {"new_metrics": [], "loaded": []}


def test_the_distribution_declares_only_grpc_and_protobuf_and_ships_its_types() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text())["project"]
    assert project["name"] == "athena-client" and project["version"] == athena_client.__version__
    names = {
        d.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip() for d in project["dependencies"]
    }
    assert names == {"grpcio", "protobuf", "googleapis-common-protos"}
    assert (CLIENT / "py.typed").is_file()
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"athena-client=={project['version']}" in server  # exact: PyPI's athena-client is another project
