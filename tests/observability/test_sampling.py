"""Sampling keeps a message's journey whole and an idle stack quiet: the queue's consumer span is a
child of its producer, so a parent-based sampler decides a message once for every service; a span that
would start a trace as background work (a client or internal span) is not recorded.

Each side here is its own real SDK TracerProvider (as ingest and cognition are separate processes),
driven through Athena's own producer_span / inject_context / consumer_span.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, DEFAULT_OFF, DEFAULT_ON, ParentBasedTraceIdRatio, Sampler
from opentelemetry.trace import SpanKind

from athena import tracing
from athena.tracing import QuietBackground, exporter_names, sampler_from_env


class Side:
    """One process's tracer provider with an in-memory exporter."""

    def __init__(self, sampler: Sampler) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(sampler=sampler)
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("athena")

    @contextmanager
    def active(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        with monkeypatch.context() as m:
            m.setattr(tracing, "tracer", lambda: self.tracer)
            yield

    def names(self) -> list[str]:
        return [s.name for s in self.exporter.get_finished_spans()]


def journey(ingest: Side, cognition: Side, monkeypatch: pytest.MonkeyPatch) -> tuple[bool, bool]:
    """One message: StoreEvent with its producer span on ingest's side, the consumer span and a child
    of it on cognition's. Returns (ingest's half exported, cognition's half exported)."""
    ingest.exporter.clear()
    cognition.exporter.clear()
    carrier: dict[str, str] = {}
    with (
        ingest.active(monkeypatch),
        ingest.tracer.start_as_current_span("StoreEvent", kind=SpanKind.SERVER),
        tracing.producer_span(count=1),
    ):
        tracing.inject_context(carrier)
    with (
        cognition.active(monkeypatch),
        tracing.consumer_span(trace_context=carrier, task_id="t1", task_type="chain_check", attempt=0),
        cognition.tracer.start_as_current_span("chain_break.decide"),
    ):
        pass
    ingest_names, cognition_names = ingest.names(), cognition.names()
    # Within each side the parent-based sampler already keeps a trace whole.
    assert len(ingest_names) in (0, 2) and len(cognition_names) in (0, 2), (ingest_names, cognition_names)
    return bool(ingest_names), bool(cognition_names)


def test_at_a_ratio_each_journey_is_kept_or_dropped_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    ingest = Side(QuietBackground(ParentBasedTraceIdRatio(0.5)))
    cognition = Side(QuietBackground(ParentBasedTraceIdRatio(0.5)))
    halves = [journey(ingest, cognition, monkeypatch) for _ in range(200)]
    assert all(kept_ingest == kept_cognition for kept_ingest, kept_cognition in halves)
    kept = sum(kept_ingest for kept_ingest, _ in halves)
    assert 50 < kept < 150, kept  # about half: the ratio still applies, to whole journeys


def test_the_consumer_span_continues_the_producers_trace_as_its_child(monkeypatch: pytest.MonkeyPatch) -> None:
    ingest, cognition = Side(QuietBackground(DEFAULT_ON)), Side(QuietBackground(DEFAULT_ON))
    journey(ingest, cognition, monkeypatch)
    producer = next(s for s in ingest.exporter.get_finished_spans() if s.kind == SpanKind.PRODUCER)
    consumer = next(s for s in cognition.exporter.get_finished_spans() if s.kind == SpanKind.CONSUMER)
    assert consumer.context.trace_id == producer.context.trace_id
    assert consumer.parent is not None and consumer.parent.span_id == producer.context.span_id
    assert consumer.attributes["messaging.operation.type"] == "process"
    assert consumer.attributes["messaging.message.id"] == "t1"


def test_a_consumer_follows_a_sampled_producer_even_where_its_own_roots_are_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ingest, cognition = Side(QuietBackground(DEFAULT_ON)), Side(QuietBackground(DEFAULT_OFF))
    assert journey(ingest, cognition, monkeypatch) == (True, True)


def test_a_consumer_drops_what_its_producer_dropped_even_where_its_own_roots_are_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ingest, cognition = Side(QuietBackground(DEFAULT_OFF)), Side(QuietBackground(DEFAULT_ON))
    assert journey(ingest, cognition, monkeypatch) == (False, False)


def test_background_work_starts_no_trace_while_requests_and_their_calls_do() -> None:
    side = Side(QuietBackground(ALWAYS_ON))
    with side.tracer.start_as_current_span("BLPOP", kind=SpanKind.CLIENT):  # a poll outside any request
        pass
    with side.tracer.start_as_current_span("archiver pass"):  # internal work of a timer
        pass
    with (
        side.tracer.start_as_current_span("MemoryService/StoreEvent", kind=SpanKind.SERVER),
        side.tracer.start_as_current_span("EVALSHA", kind=SpanKind.CLIENT),
    ):
        pass
    with side.tracer.start_as_current_span("send memory_processing_queue", kind=SpanKind.PRODUCER):
        pass
    with side.tracer.start_as_current_span("/Svc/Call", kind=SpanKind.CLIENT, attributes={"rpc.system": "grpc"}):
        pass  # a caller's request, traced from its side
    assert sorted(side.names()) == ["/Svc/Call", "EVALSHA", "MemoryService/StoreEvent", "send memory_processing_queue"]


def test_the_standard_variables_choose_the_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)
    monkeypatch.delenv("OTEL_TRACES_SAMPLER_ARG", raising=False)
    default = sampler_from_env()
    assert isinstance(default, QuietBackground) and default.delegate is DEFAULT_ON

    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.25")
    ratio = sampler_from_env()
    assert isinstance(ratio, QuietBackground) and "TraceIdRatioBased{0.25}" in ratio.get_description()

    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_on")
    assert sampler_from_env().get_description() == "QuietBackground{AlwaysOnSampler}"


def test_the_standard_exporter_variable_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert exporter_names() == []  # nothing configured: nothing exported
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    assert exporter_names() == ["otlp"]
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert exporter_names() == ["console"]
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp,console")
    assert exporter_names() == ["otlp", "console"]
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert exporter_names() == []
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    with pytest.raises(ValueError, match="OTEL_TRACES_EXPORTER"):
        exporter_names()
