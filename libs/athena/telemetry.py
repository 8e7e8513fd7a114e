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


_QUIET_LIBRARIES = ("grpc", "pymongo", "httpx", "urllib3", "faiss")
"""Libraries logged from WARNING up only (faiss: which CPU build it loads, six lines at every start)."""


_SELF_HANDLING_LIBRARIES = ("transformers",)
"""Libraries that give their root logger a stderr handler of their own, in plain text. transformers does
on import: `[transformers] ...` (one line at every start of cognition and formation, when the embedding
model loads), with propagation off (with CI set: on as well, so each line came twice)."""


def setup_logging(service: str, level: str = "INFO") -> None:
    """Every log line of the process as one JSON object on stderr, whoever writes it."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in _QUIET_LIBRARIES:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # Python warnings (warnings.warn by any library) are printed to stderr as plain text otherwise;
    # captured, they are records of the `py.warnings` logger and so JSON like the rest.
    logging.captureWarnings(True)
    for name in _SELF_HANDLING_LIBRARIES:
        _route_to_root(logging.getLogger(name))


class _RootRoutedLogger(logging.Logger):
    """A library's logger that keeps no handler of its own and always propagates, whatever the library
    sets when it is imported later: its records reach the root's JSON handler, once. The library itself
    is not imported here (ingest never imports transformers, and its image has none)."""

    def addHandler(self, hdlr: logging.Handler) -> None:
        return

    @property
    def propagate(self) -> bool:
        return True

    @propagate.setter
    def propagate(self, value: bool) -> None:
        return


def _route_to_root(logger: logging.Logger) -> None:
    logger.handlers.clear()
    logger.__class__ = _RootRoutedLogger


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
    try:
        setup_tracing(name)
    except ValueError as exc:  # an OTEL_* value Athena does not honour
        raise SystemExit(f"athena-{name}: {exc}") from None
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
