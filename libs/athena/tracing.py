"""OpenTelemetry: one trace per stored user message across ingest -> queue -> cognition -> formation.

Exporters are the standard OTEL_TRACES_EXPORTER (otlp, console, none; a comma-separated list). Unset,
spans go over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set and
nowhere otherwise (the SDK's default, otlp to localhost, would send every local run's spans to a
collector that is rarely there). Across the queue the producer's context travels in the task
envelope's trace_context map and the consumer span is its child, with the messaging semantic
conventions' attributes: a message's trace goes on through cognition and formation.

Sampling is the standard OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, behind one rule of Athena's
(QuietBackground): a span that starts a trace as a client or internal span (a Redis poll, a lease
renewal, the reaper, a readiness ping, the archiver's MongoDB reads; an outgoing gRPC call excepted)
is not recorded, so an idle
stack exports next to nothing; requests (server spans) and queue work (producer and consumer spans)
start traces as before (docs/operations.md, "Tracing").
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace import sampling as _sdk_sampling
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, Span, SpanKind, TraceState
from opentelemetry.util.types import Attributes

__all__ = [
    "EXPORTERS",
    "QuietBackground",
    "consumer_span",
    "exporter_names",
    "inject_context",
    "producer_span",
    "sampler_from_env",
    "setup_tracing",
    "tracer",
]

QUEUE_TEMPLATE = "memory_processing_queue:v1:{tenant}:{user}:{agent}"
_instrumented = False


def tracer() -> trace.Tracer:
    return trace.get_tracer("athena")


_BACKGROUND_KINDS = frozenset({SpanKind.CLIENT, SpanKind.INTERNAL})


class QuietBackground(Sampler):
    """Drops a span that would start a trace as a client or internal span: work no request or queued
    task asked for (background polling, leases, reaping, health pings). An outgoing gRPC call still
    starts one (a caller's request, traced from its side; health checks are not instrumented). Every
    other span is left to `delegate`. Without it an idle stack exported a trace for each Redis poll and probe (about 13 a
    second), burying the traces of real messages."""

    def __init__(self, delegate: Sampler) -> None:
        self.delegate = delegate

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        has_parent = trace.get_current_span(parent_context).get_span_context().is_valid
        outgoing_rpc = bool(attributes) and attributes.get("rpc.system") == "grpc"  # type: ignore[union-attr]
        if not has_parent and (kind is None or kind in _BACKGROUND_KINDS) and not outgoing_rpc:
            return SamplingResult(Decision.DROP, None, trace_state)
        return self.delegate.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        return f"QuietBackground{{{self.delegate.get_description()}}}"


def sampler_from_env() -> Sampler:
    """The sampler OTEL_TRACES_SAMPLER names (the SDK's own parsing; default parentbased_always_on),
    behind QuietBackground."""
    # The SDK's own reader of the variables (private, but what TracerProvider() itself calls), so the
    # names, the argument and the warnings stay exactly the SDK's; tests/observability checks it.
    return QuietBackground(_sdk_sampling._get_from_env_or_default())


EXPORTERS = ("otlp", "console", "none")
"""The values of OTEL_TRACES_EXPORTER Athena honours."""


def exporter_names() -> list[str]:
    """OTEL_TRACES_EXPORTER as a list (unset: otlp when an OTLP endpoint is set, else none); an unknown
    name is a ValueError naming the variable."""
    raw = os.environ.get("OTEL_TRACES_EXPORTER", "").strip()
    if not raw:
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        return ["otlp"] if endpoint else []
    names = [n.strip().lower() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in EXPORTERS]
    if unknown:
        raise ValueError(f"OTEL_TRACES_EXPORTER: {', '.join(unknown)} is not one of {', '.join(EXPORTERS)}")
    return [n for n in names if n != "none"]


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter()
    if os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc").startswith("http"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # type: ignore[assignment]
    return OTLPSpanExporter()


def setup_tracing(service: str, *, extra_processor: SpanProcessor | None = None) -> TracerProvider:
    """Install the tracer provider and the official instrumentations (gRPC server and client, Redis, PyMongo)."""
    global _instrumented
    provider = TracerProvider(
        sampler=sampler_from_env(),
        resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", f"athena-{service}")}),
    )
    for name in exporter_names():
        provider.add_span_processor(BatchSpanProcessor(_exporter(name)))
    if extra_processor is not None:
        provider.add_span_processor(extra_processor)
    trace.set_tracer_provider(provider)
    if not _instrumented:
        from opentelemetry.instrumentation.grpc import GrpcAioInstrumentorClient, GrpcAioInstrumentorServer, filters
        from opentelemetry.instrumentation.pymongo import PymongoInstrumentor
        from opentelemetry.instrumentation.redis import RedisInstrumentor

        GrpcAioInstrumentorServer().instrument(filter_=filters.negate(filters.health_check()))
        GrpcAioInstrumentorClient().instrument(filter_=filters.negate(filters.health_check()))
        RedisInstrumentor().instrument()
        PymongoInstrumentor().instrument()
        _instrumented = True
    return provider


def inject_context(carrier: MutableMapping[str, str]) -> None:
    propagate.inject(carrier)


@contextmanager
def producer_span(*, count: int) -> Iterator[Span]:
    with tracer().start_as_current_span(
        "send memory_processing_queue",
        kind=SpanKind.PRODUCER,
        attributes={
            "messaging.system": "redis",
            "messaging.operation.type": "send",
            "messaging.destination.template": QUEUE_TEMPLATE,
            "messaging.batch.message_count": count,
        },
    ) as span:
        yield span


@contextmanager
def consumer_span(*, trace_context: Mapping[str, str], task_id: str, task_type: str, attempt: int) -> Iterator[Span]:
    """The span of one attempt of a queued task: a child of the producer span whose context the task
    carries (each attempt another child of it), so the message's trace goes on here."""
    with tracer().start_as_current_span(
        "process memory_processing_queue",
        context=propagate.extract(dict(trace_context)),
        kind=SpanKind.CONSUMER,
        attributes={
            "messaging.system": "redis",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.template": QUEUE_TEMPLATE,
            "messaging.message.id": task_id,
            "athena.task.type": task_type,
            "athena.task.attempt": attempt + 1,
        },
    ) as span:
        yield span
