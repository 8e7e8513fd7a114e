"""The synchronous client against the whole local stack as real processes, and the client distribution
installed alone in a fresh virtualenv (no server dependencies) doing the same."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from athena_cli.stack import LocalStack, StackPorts
from athena_client import AthenaClient, ClientOptions, EventInput, field_violations
from athena_client.memory.v1 import memory_pb2

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FACT = "Please remember that I'm allergic to peanuts."
ACK = "Noted: no peanuts in anything I suggest."
# Server packages none of which the client may pull in (pip list names, normalised).
SERVER_ONLY = {"torch", "redis", "pymongo", "pymilvus", "prometheus-client", "opentelemetry-sdk"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    s = LocalStack(
        data_dir=tmp_path_factory.mktemp("client-stack"),
        ports=StackPorts.free(),
        env={"QUEUE_BACKOFF_BASE_SECONDS": "0.2", "QUEUE_BACKOFF_MAX_SECONDS": "2", "LLM_BASE_URL": ""},
    )
    with s:
        yield s


@pytest.fixture
def client(stack: LocalStack) -> Iterator[AthenaClient]:
    with AthenaClient(
        stack.ingest_target, api_key=stack.credentials.dev_api_key, options=ClientOptions(timeout=30)
    ) as c:
        yield c


def _chain_holding(client: AthenaClient, scope: memory_pb2.Scope, event_id: str, *, timeout: float = 120.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for chain in client.list_chains(scope):
            if event_id in chain.event_ids:
                return chain
        time.sleep(0.5)
    raise AssertionError(f"no chain holds {event_id} after {timeout} s")


def test_the_sync_client_stores_openai_roles_and_reads_the_window(stack: LocalStack, client: AthenaClient) -> None:
    scope = client.scope(stack.credentials.dev_tenant, "sync-window", "helper")
    first = client.store_event(scope, EventInput("user", "Which hiking boots suit wet weather?"))
    batch = client.store_events(
        scope,
        [
            EventInput("assistant", "Let me look that up."),
            EventInput("tool", '{"results": ["Alpine GTX", "Trail Dry"]}', metadata={"tool": "search"}),
            EventInput("assistant", "Alpine GTX and Trail Dry are both waterproof."),
        ],
    )
    ids = [first.event_id, *(r.event_id for r in batch.results)]

    page = client.get_context(scope)
    assert [e.id for e in page] == ids and page.next_page_token == "" and page.relevant_chains == []
    assert [(e.role, e.type) for e in page] == [
        (memory_pb2.ROLE_USER, memory_pb2.EVENT_TYPE_MESSAGE),
        (memory_pb2.ROLE_AGENT, memory_pb2.EVENT_TYPE_MESSAGE),
        (memory_pb2.ROLE_AGENT, memory_pb2.EVENT_TYPE_OBSERVATION),
        (memory_pb2.ROLE_AGENT, memory_pb2.EVENT_TYPE_MESSAGE),
    ]
    assert page[2].metadata == {"tool": "search"}
    assert [e.id for e in client.get_context(scope, limit=2)] == ids[2:]
    assert [e.id for e in client.get_full_context(scope)] == ids
    assert [len(p) for p in client.context_pages(scope)] == [4]


def test_the_sync_client_raises_the_refusal_with_its_fields(stack: LocalStack, client: AthenaClient) -> None:
    scope = client.scope(stack.credentials.dev_tenant, "sync-refused", "helper")
    with pytest.raises(grpc.RpcError) as err:
        client.store_events(scope, [EventInput("user", "fine"), EventInput("assistant", "   ")])
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in field_violations(err.value)] == ["events[1].content"]
    with pytest.raises(grpc.RpcError) as err:
        client.get_context(client.scope("another-tenant", "u", "a"))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_get_context_with_a_query_returns_the_relevant_chains_beside_the_window(
    stack: LocalStack, client: AthenaClient
) -> None:
    scope = client.scope(stack.credentials.dev_tenant, "sync-chains", "helper")
    fact = client.store_event(scope, EventInput("user", FACT))
    client.store_event(scope, EventInput("assistant", ACK))
    flush = client.flush_window(scope)
    assert flush.task_id and flush.events == 2 and not flush.duplicate

    chain = _chain_holding(client, scope, fact.event_id)
    assert [c.id for c in client.list_chains(scope, status=memory_pb2.CHAIN_STATUS_ACTIVE)] == [chain.id]
    assert client.get_chain(scope, chain.id).event_ids == chain.event_ids

    later = client.store_event(scope, EventInput("user", "What should I cook tonight?"))
    page = client.get_context(scope, query="What am I allergic to?", chain_limit=2)
    assert [e.id for e in page] == [later.event_id]
    assert 1 <= len(page.relevant_chains) <= 2
    assert page.relevant_chains[0].source == memory_pb2.HIT_SOURCE_CHAIN
    assert page.relevant_chains[0].chain.id == chain.id and fact.event_id in page.relevant_chains[0].event_ids
    assert client.get_context(scope).relevant_chains == []  # no query, no chains

    # what the flush task did, read back by its id: the segment it cut and the chain formation made
    result = client.get_task_result(scope, flush.task_id)
    assert (result.task_id, result.status, result.decision, result.trigger) == (flush.task_id, "done", "flush", "api")
    assert result.segment_events == 2 and result.formation_outcome == "CREATED" and result.chain_id == chain.id
    with pytest.raises(grpc.RpcError) as unknown:
        client.get_task_result(scope, "flush-ev_never_queued")
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as other_agent:  # a result is read in its own scope only
        client.get_task_result(client.scope(scope.tenant_id, scope.user_id, "another-agent"), flush.task_id)
    assert other_agent.value.code() == grpc.StatusCode.NOT_FOUND


CLIENT_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time

    from athena_client import AthenaClient, EventInput

    with AthenaClient(os.environ["ATHENA_TARGET"], api_key=os.environ["ATHENA_API_KEY"]) as client:
        scope = client.scope(os.environ["ATHENA_TENANT"], "fresh-venv-user", "helper")
        stored = client.store_event(scope, EventInput("user", sys.argv[1]))
        client.store_event(scope, EventInput("assistant", sys.argv[2]))
        flush = client.flush_window(scope)
        deadline = time.monotonic() + 120
        while True:  # the flushed window is formed into a chain: then search finds the message in it
            hits = client.search_memory(scope, "What am I allergic to?", limit=5)
            found = [h for h in hits if stored.event_id in h.event_ids]
            if (found and found[0].chain.id) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    print(json.dumps({"flushed": flush.events, "found": [h.chain.id for h in found], "modules": sorted(
        m for m in sys.modules if m.split(".")[0] in {"athena", "redis", "torch", "prometheus_client"})}))
    """
)


def test_the_client_installs_alone_in_a_fresh_venv_and_remembers_through_a_stack(
    stack: LocalStack, tmp_path: Path
) -> None:
    # Built from a copy: pip builds in the source tree, which stays clean this way.
    source = tmp_path / "athena-client"
    shutil.copytree(
        ROOT / "clients" / "python",
        source,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", ".ruff_cache"),
    )
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}}
    env["PYTHONNOUSERSITE"] = "1"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=120)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    python = str(venv / "bin" / "python")
    # The machine's package index, as scripts/setup.sh uses it: pip's own configuration and PIP_* variables.
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(source)],
        check=True,
        env=env,
        timeout=240,
        capture_output=True,
    )
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=json"], check=True, env=env, capture_output=True, text=True
    ).stdout
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed)}
    assert "athena-client" in installed and {"grpcio", "protobuf"} <= installed
    assert installed & SERVER_ONLY == set()

    run_env = {
        **env,
        "ATHENA_TARGET": stack.ingest_target,
        "ATHENA_API_KEY": stack.credentials.dev_api_key,
        "ATHENA_TENANT": stack.credentials.dev_tenant,
    }
    script = tmp_path / "remember.py"
    script.write_text(CLIENT_SCRIPT)
    done = subprocess.run(
        [python, str(script), FACT, ACK], env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["flushed"] == 2 and result["modules"] == []
    assert result["found"] and result["found"][0], f"the message was not found in a chain: {result}"
