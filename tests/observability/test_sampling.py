"""Sampling keeps a message's journey whole: the queue's consumer span follows its producer's decision.

The consumer span starts a new trace that links to the producer (tracing.py), so a ratio sampler alone
would decide ingest's half and cognition's half of a journey independently. Each side here is its own
real SDK TracerProvider (as ingest and cognition are separate processes), driven through Athena's own
producer_span / inject_context / consumer_span.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, DEFAULT_OFF, DEFAULT_ON, ParentBasedTraceIdRatio, Sampler

from athena import tracing
from athena.tracing import FollowLinkedProducer, sampler_from_env


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
        ingest.tracer.start_as_current_span("StoreEvent"),
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
    ingest = Side(FollowLinkedProducer(ParentBasedTraceIdRatio(0.5)))
    cognition = Side(FollowLinkedProducer(ParentBasedTraceIdRatio(0.5)))
    halves = [journey(ingest, cognition, monkeypatch) for _ in range(200)]
    assert all(kept_ingest == kept_cognition for kept_ingest, kept_cognition in halves)
    kept = sum(kept_ingest for kept_ingest, _ in halves)
    assert 50 < kept < 150, kept  # about half: the ratio still applies, to whole journeys


def test_without_following_the_link_the_two_halves_are_sampled_independently(monkeypatch: pytest.MonkeyPatch) -> None:
    # The flaw FollowLinkedProducer exists for: the plain SDK sampler splits journeys.
    ingest, cognition = Side(ParentBasedTraceIdRatio(0.5)), Side(ParentBasedTraceIdRatio(0.5))
    halves = [journey(ingest, cognition, monkeypatch) for _ in range(200)]
    split = sum(a != b for a, b in halves)
    assert split > 40, split  # about half of them


def test_a_consumer_follows_a_sampled_producer_even_where_its_own_roots_are_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ingest, cognition = Side(FollowLinkedProducer(DEFAULT_ON)), Side(FollowLinkedProducer(DEFAULT_OFF))
    assert journey(ingest, cognition, monkeypatch) == (True, True)


def test_a_consumer_drops_what_its_producer_dropped_even_where_its_own_roots_are_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ingest, cognition = Side(FollowLinkedProducer(DEFAULT_OFF)), Side(FollowLinkedProducer(DEFAULT_ON))
    assert journey(ingest, cognition, monkeypatch) == (False, False)


def test_the_standard_variables_choose_the_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)
    monkeypatch.delenv("OTEL_TRACES_SAMPLER_ARG", raising=False)
    default = sampler_from_env()
    assert isinstance(default, FollowLinkedProducer) and default.delegate is DEFAULT_ON

    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.25")
    ratio = sampler_from_env()
    assert isinstance(ratio, FollowLinkedProducer) and "TraceIdRatioBased{0.25}" in ratio.get_description()

    # A sampler that ignores parents was asked to decide every span itself: not wrapped.
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    assert sampler_from_env() is ALWAYS_OFF
