"""OpenTelemetry: one trace per stored user message across ingest -> queue -> cognition -> formation.

Configured by the standard OTEL_* variables: spans are exported over OTLP when
OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and nowhere otherwise.
Across the queue the producer's context travels in the task envelope's trace_context map; the
consumer span *links* to it (a new trace root per attempt, never re-injected on retry), following
the messaging semantic conventions.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Mapping, MutableMapping

from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, Span, SpanKind

__all__ = ["consumer_span", "inject_context", "producer_span", "setup_tracing", "tracer"]

QUEUE_TEMPLATE = "memory_processing_queue:v1:{tenant}:{user}:{agent}"
_instrumented = False


def tracer() -> trace.Tracer:
    return trace.get_tracer("athena")


def setup_tracing(service: str, *, extra_processor: SpanProcessor | None = None) -> TracerProvider:
    """Install the tracer provider and the official instrumentations (gRPC server and client, Redis, PyMongo)."""
    global _instrumented
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", f"athena-{service}")}))
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
