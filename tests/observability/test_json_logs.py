"""Service logs are JSON lines that carry the trace and span ids of the work they describe."""

from __future__ import annotations

import json
import logging

from opentelemetry.sdk.trace import TracerProvider

from athena.telemetry import _JsonFormatter


def test_a_log_line_inside_a_span_carries_its_trace_and_span_ids() -> None:
    formatter = _JsonFormatter("cognition")
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("process memory_processing_queue") as span:
        record = logging.LogRecord("athena.cognition", logging.INFO, __file__, 1, "cut segment %s", ("seg_1",), None)
        line = json.loads(formatter.format(record))

    ctx = span.get_span_context()
    assert line["msg"] == "cut segment seg_1" and line["service"] == "cognition" and line["level"] == "info"
    assert line["trace_id"] == format(ctx.trace_id, "032x") and line["span_id"] == format(ctx.span_id, "016x")


def test_a_log_line_outside_any_span_has_no_trace_fields() -> None:
    record = logging.LogRecord("athena.ingest", logging.WARNING, __file__, 1, "redis unavailable", (), None)
    line = json.loads(_JsonFormatter("ingest").format(record))
    assert "trace_id" not in line and line["level"] == "warning"
