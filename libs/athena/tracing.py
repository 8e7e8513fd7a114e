"""OpenTelemetry: one trace per stored user message across ingest -> queue -> cognition -> formation.

Configured by the standard OTEL_* variables: spans are exported over OTLP when
OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and nowhere otherwise.
Across the queue the producer's context travels in the task envelope's trace_context map; the
consumer span *links* to it (a new trace root per attempt, never re-injected on retry), following
the messaging semantic conventions.

Sampling is the standard OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG. Under a parent-based sampler
a consumer span (a root with a link to its producer) takes its producer's decision, as a child takes
its parent's: the work downstream of a kept producer span is kept, that of a dropped one is dropped
(docs/operations.md, "Tracing").
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
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, SamplingResult
from opentelemetry.trace import Link, Span, SpanKind, TraceState
from opentelemetry.util.types import Attributes

__all__ = [
    "FollowLinkedProducer",
    "consumer_span",
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


class FollowLinkedProducer(Sampler):
    """A root span linked to spans of other traces (our queue's consumer span, linked to its producer)
    is sampled exactly when one of them was; every other span is left to `delegate`.

    The consumer starts a new trace (a new trace id), so a ratio sampler alone would decide its half of
    a message's journey independently of ingest's half: at 10% both halves would be kept for 1% of
    messages. Following the link keeps the halves together, as ParentBased does for a parent."""

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
        linked = [link.context for link in links or () if link.context.is_valid]
        if has_parent or not linked:
            return self.delegate.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)
        if any(ctx.trace_flags.sampled for ctx in linked):
            return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes, trace_state)
        return SamplingResult(Decision.DROP, None, trace_state)

    def get_description(self) -> str:
        return f"FollowLinkedProducer{{{self.delegate.get_description()}}}"


def sampler_from_env() -> Sampler:
    """The sampler OTEL_TRACES_SAMPLER names (the SDK's own parsing; default parentbased_always_on),
    made to follow linked producers when it is parent-based. A sampler that ignores parents
    (always_on, always_off, traceidratio) is left alone: it was asked to decide every span itself."""
    # The SDK's own reader of the variables (private, but what TracerProvider() itself calls), so the
    # names, the argument and the warnings stay exactly the SDK's; tests/observability checks it.
    configured = _sdk_sampling._get_from_env_or_default()
    return FollowLinkedProducer(configured) if isinstance(configured, ParentBased) else configured


def setup_tracing(service: str, *, extra_processor: SpanProcessor | None = None) -> TracerProvider:
    """Install the tracer provider and the official instrumentations (gRPC server and client, Redis, PyMongo)."""
    global _instrumented
    provider = TracerProvider(
        sampler=sampler_from_env(),
        resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", f"athena-{service}")}),
    )
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        if os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc").startswith("http"):
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # type: ignore[assignment]
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
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
    producer = trace.get_current_span(propagate.extract(dict(trace_context))).get_span_context()
    links = [Link(producer)] if producer.is_valid else []
    # A new root (empty context): the consumer links to the producer instead of continuing its trace.
    with tracer().start_as_current_span(
        "process memory_processing_queue",
        context=trace.set_span_in_context(trace.INVALID_SPAN),
        kind=SpanKind.CONSUMER,
        links=links,
        attributes={
            "messaging.system": "redis",
            "messaging.operation.type": "process",
            "messaging.destination.template": QUEUE_TEMPLATE,
            "messaging.message.id": task_id,
            "athena.task.type": task_type,
            "athena.task.attempt": attempt + 1,
        },
    ) as span:
        yield span
