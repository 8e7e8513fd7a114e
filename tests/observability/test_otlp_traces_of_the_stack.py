"""The whole local stack as real processes, configured only by the standard OTEL_* variables, exporting
to an OTLP receiver in this test: a user message that closes a topic, and a FlushWindow, are each one
trace with spans of ingest, cognition and formation, and an idle stack exports next to nothing."""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from redis.asyncio import Redis

from athena import keys
from athena.local import free_port
from athena_cli.stack import LocalStack, StackPorts
from athena_client import EventInput

pytestmark = pytest.mark.slow

IDLE_SECONDS = 30.0
MAX_IDLE_TRACES = 3
"""The target is at most 6 traces in an idle minute: at most 3 in half of one."""


@dataclass
class ReceivedSpan:
    service: str
    trace_id: str
    name: str
    attributes: dict[str, str]
    received_at: float


@dataclass
class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC trace receiver keeping every span it is sent."""

    spans: list[ReceivedSpan] = field(default_factory=list)

    async def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.aio.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        now = time.monotonic()
        for resource_spans in request.resource_spans:
            service = next(
                (a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"), ""
            )
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {a.key: a.value.string_value for a in span.attributes}
                    self.spans.append(ReceivedSpan(service, span.trace_id.hex(), span.name, attributes, now))
        return trace_service_pb2.ExportTraceServiceResponse()

    def traces_since(self, moment: float) -> set[str]:
        return {s.trace_id for s in self.spans if s.received_at >= moment}

    def trace_of_task(self, task_id: str) -> dict[str, set[str]]:
        """The span names of each service in the trace of the queued task's consumer span."""
        consumer = next(
            s
            for s in self.spans
            if s.name == "process memory_processing_queue" and s.attributes.get("messaging.message.id") == task_id
        )
        names: dict[str, set[str]] = defaultdict(set)
        for s in self.spans:
            if s.trace_id == consumer.trace_id:
                names[s.service].add(s.name)
        return names


@pytest.fixture(scope="module")
async def receiver() -> AsyncIterator[tuple[Receiver, int]]:
    server = grpc.aio.server()
    servicer = Receiver()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port(f"127.0.0.1:{free_port()}")
    await server.start()
    yield servicer, port
    await server.stop(None)


async def test_a_topic_closing_message_and_a_flush_are_each_one_trace_across_services_and_idle_is_quiet(
    receiver: tuple[Receiver, int], tmp_path: Path
) -> None:
    received, port = receiver
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_BSP_SCHEDULE_DELAY": "500",  # export every half second, so the test waits less
        "LLM_BASE_URL": "",
        "QUEUE_BACKOFF_BASE_SECONDS": "0.2",
    }
    stack = LocalStack(data_dir=tmp_path / "stack", ports=StackPorts.free(), env=env)
    with stack:
        await asyncio.sleep(5)  # what start-up itself traced is exported by then
        idle_from = time.monotonic()
        await asyncio.sleep(IDLE_SECONDS)
        idle_traces = received.traces_since(idle_from)
        assert len(idle_traces) <= MAX_IDLE_TRACES, sorted(
            {(s.service, s.name) for s in received.spans if s.trace_id in idle_traces}
        )

        async with stack.client(tenant_id="acme") as client:
            scope = client.scope("acme", "alice", "helper")
            for role, text in [
                ("user", "How do I rotate the API keys of my Stripe account?"),
                ("agent", "In the Stripe dashboard open Developers, API keys, and roll the secret key."),
                ("user", "Will rolling the Stripe secret key break my running webhooks?"),
                ("agent", "Webhooks use a separate signing secret, so they keep working; update your servers."),
            ]:
                await client.store_event(scope, EventInput(role, text))
            trigger = await client.store_event(
                scope, EventInput("user", "Totally different: what's a good recipe for banana bread?")
            )
            assert (await _result(stack, trigger.task_id)).get("decision") == "break"
            await client.store_event(scope, EventInput("agent", "Mash three ripe bananas with melted butter."))
            flush = await client.flush_window(scope)
            assert (await _result(stack, flush.task_id)).get("formation_outcome")
        await asyncio.sleep(3)  # the last spans' export

    for task_id, rpc in ((trigger.task_id, "MemoryService/StoreEvent"), (flush.task_id, "MemoryService/FlushWindow")):
        in_trace = received.trace_of_task(task_id)
        assert {"athena-ingest", "athena-cognition", "athena-formation"} <= set(in_trace), dict(in_trace)
        assert any(name.endswith(rpc) for name in in_trace["athena-ingest"])
        assert "send memory_processing_queue" in in_trace["athena-ingest"]
        assert any(name.endswith("FormationService/FormChain") for name in in_trace["athena-formation"])
        assert "formation.form_chain" in in_trace["athena-formation"]


async def _result(stack: LocalStack, task_id: str) -> dict[str, str]:
    """The task's result once it is done (or what there is after two minutes)."""
    redis = Redis.from_url(stack.redis_url)
    try:
        deadline = time.monotonic() + 120
        result: dict[str, str] = {}
        while time.monotonic() < deadline and result.get("status") != "done":
            raw = await redis.get(keys.task_result_key("acme:alice:helper", task_id))
            result = json.loads(raw) if raw else {}
            await asyncio.sleep(0.2)
        return result
    finally:
        await redis.aclose()
