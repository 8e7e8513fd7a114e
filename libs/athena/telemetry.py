"""Structured JSON logs (with trace and span ids) and the Prometheus endpoint every service starts."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from prometheus_client import start_http_server

__all__ = ["run_service", "setup_logging", "start_metrics"]


class _JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            entry["trace_id"] = format(ctx.trace_id, "032x")
            entry["span_id"] = format(ctx.span_id, "016x")
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def setup_logging(service: str, level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("grpc", "pymongo", "httpx", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def start_metrics(port: int) -> None:
    """Serve /metrics on `port` (0: do not serve)."""
    if port:
        start_http_server(port)


def run_service(name: str, serve: Callable[[Settings], Coroutine[Any, Any, None]]) -> None:
    """A service process's entry point: settings (a bad value stops here), logs, tracing, metrics, then serve."""
    from athena.config import SettingsError, load_settings
    from athena.gc_tuning import watch_gc_pauses
    from athena.tracing import setup_tracing

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise SystemExit(f"athena-{name}: {exc}") from None
    setup_logging(name, settings.log_level)
    setup_tracing(name)
    start_metrics(getattr(settings, f"{name}_metrics_port"))
    watch_gc_pauses()
    import uvloop

    # uvloop: a faster event loop (socket I/O, callbacks) for every service.
    try:
        uvloop.run(serve(settings))
    except SettingsError as exc:  # found while building the service (e.g. no credential source)
        raise SystemExit(f"athena-{name}: {exc}") from None


if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from athena.config import Settings
