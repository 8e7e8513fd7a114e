"""The figures of a load run: per phase, the run's totals (the JSON document), and the human table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from athena_lab.bench._report import percentile
from athena_lab.load._driver import PhaseTraffic
from athena_lab.load._verify import Decisions

__all__ = ["PhaseOutcome", "build_report", "phase_figures", "render_report"]


@dataclass(frozen=True)
class PhaseOutcome:
    traffic: PhaseTraffic
    decisions: Decisions


def _pct(values: Sequence[float], q: float) -> float | None:
    return round(percentile(values, q), 3) if values else None


def _waits(phase: PhaseOutcome, *, noisy: bool) -> list[float]:
    return [
        float(r["queue_wait_ms"])
        for a in phase.traffic.acks
        if a.task_id and a.noisy == noisy and (r := phase.decisions.results.get(a.task_id)) and "queue_wait_ms" in r
    ]


def phase_figures(phase: PhaseOutcome, in_log: set[str]) -> dict[str, Any]:
    """Counts, loss and latencies of one phase."""
    t, d = phase.traffic, phase.decisions
    checks = [a.task_id for a in t.acks if a.task_id]
    decided = sum(1 for c in checks if d.decided(c))
    dead = sum(1 for c in checks if d.status(c) == "dead_lettered")
    trimmed = sum(1 for c in checks if d.status(c) == "done" and not d.decided(c))
    logged = sum(1 for a in t.acks if a.event_id in in_log)
    paths = Counter(str(d.results[c].get("path", "")) for c in checks if d.status(c) == "done")
    latencies = [a.latency_ms for a in t.acks]
    quiet, noisy = _waits(phase, noisy=False), _waits(phase, noisy=True)
    return {
        "seconds": round(t.seconds, 2),
        "offered": t.offered,
        "acknowledged": len(t.acks),
        "errors": dict(t.errors),
        "in_log": logged,
        "user_messages": len(checks),
        "decided": decided,
        "dead_lettered": dead,
        "trimmed_before_check": trimmed,
        "undecided": len(checks) - decided - dead - trimmed,
        "lost": (len(t.acks) - logged) + (len(checks) - decided),
        "throughput_events_per_s": round(len(t.acks) / t.seconds, 2) if t.seconds else None,
        "decisions_per_s": round(decided / (t.seconds + d.seconds), 2) if decided else None,
        "drain_seconds": round(d.seconds, 2),
        "store_event_p50_ms": _pct(latencies, 50),
        "store_event_p95_ms": _pct(latencies, 95),
        "quiet_queue_wait_p50_ms": _pct(quiet, 50),
        "quiet_queue_wait_p95_ms": _pct(quiet, 95),
        "quiet_queue_wait_max_ms": round(max(quiet), 3) if quiet else None,
        "noisy_queue_wait_p50_ms": _pct(noisy, 50),
        "noisy_queue_wait_p95_ms": _pct(noisy, 95),
        "quiet_waits_measured": len(quiet),
        "decision_paths": dict(paths),
    }


def build_report(
    baseline: PhaseOutcome, noisy: PhaseOutcome, in_log: set[str], *, config: dict[str, Any]
) -> dict[str, Any]:
    """The JSON document: the run's totals first, the quiet tenants' waits with and without the noisy one, each phase."""
    b, n = phase_figures(baseline, in_log), phase_figures(noisy, in_log)
    total = lambda key: b[key] + n[key]  # noqa: E731
    seconds = baseline.traffic.seconds + noisy.traffic.seconds
    errors = Counter(b["errors"]) + Counter(n["errors"])
    return {
        "acknowledged": total("acknowledged"),
        "in_log": total("in_log"),
        "user_messages": total("user_messages"),
        "decided": total("decided"),
        "dead_lettered": total("dead_lettered"),
        "trimmed_before_check": total("trimmed_before_check"),
        "undecided": total("undecided"),
        "lost": total("lost"),
        "errors": dict(errors),
        "throughput_events_per_s": round(total("acknowledged") / seconds, 2) if seconds else None,
        "throughput_events_per_s_with_noisy": n["throughput_events_per_s"],
        "decisions_per_s_with_noisy": n["decisions_per_s"],
        "quiet_queue_wait_p50_ms": n["quiet_queue_wait_p50_ms"],
        "quiet_queue_wait_p95_ms": n["quiet_queue_wait_p95_ms"],
        "quiet_queue_wait_p50_ms_without_noisy": b["quiet_queue_wait_p50_ms"],
        "quiet_queue_wait_p95_ms_without_noisy": b["quiet_queue_wait_p95_ms"],
        "noisy_queue_wait_p95_ms": n["noisy_queue_wait_p95_ms"],
        "store_event_p95_ms": n["store_event_p95_ms"],
        "config": config,
        "phases": {"baseline": b, "noisy": n},
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "-"
    return str(value)


_ROWS = (
    ("events acknowledged", "acknowledged"),
    ("calls refused / failed", "errors"),
    ("acknowledged events in the log", "in_log"),
    ("user messages", "user_messages"),
    ("user messages decided", "decided"),
    ("dead-lettered", "dead_lettered"),
    ("trimmed off the window before their check", "trimmed_before_check"),
    ("lost (not in log + not decided)", "lost"),
    ("throughput (events/s acknowledged)", "throughput_events_per_s"),
    ("decisions/s (phase start to last decision)", "decisions_per_s"),
    ("StoreEvent p50 / p95 (ms)", ("store_event_p50_ms", "store_event_p95_ms")),
    ("quiet tenants' queue wait p50 / p95 (ms)", ("quiet_queue_wait_p50_ms", "quiet_queue_wait_p95_ms")),
    ("quiet tenants' queue wait max (ms)", "quiet_queue_wait_max_ms"),
    ("noisy tenant's queue wait p50 / p95 (ms)", ("noisy_queue_wait_p50_ms", "noisy_queue_wait_p95_ms")),
    ("decision paths", "decision_paths"),
    ("drain after sending (s)", "drain_seconds"),
)


def render_report(report: dict[str, Any], console: Console) -> None:
    cfg = report["config"]
    table = Table(
        title=f"athena load: {cfg['tenants']} tenants x {cfg['users_per_tenant']} users, "
        f"{cfg['rate']:g} events/s per quiet user, noisy x{cfg['noisy_factor']:g}, {cfg['duration']:g} s per phase"
    )
    table.add_column("figure")
    table.add_column("without the noisy tenant", justify="right")
    table.add_column("with the noisy tenant", justify="right")
    phases = report["phases"]
    for label, key in _ROWS:
        cells = []
        for phase in ("baseline", "noisy"):
            p = phases[phase]
            cells.append(" / ".join(_cell(p[k]) for k in key) if isinstance(key, tuple) else _cell(p[key]))
        table.add_row(label, *cells)
    console.print(table)
    verdict = (
        "[bold green]no loss[/bold green]" if report["lost"] == 0 else f"[bold red]{report['lost']} lost[/bold red]"
    )
    console.print(
        f"{verdict}: {report['in_log']:,}/{report['acknowledged']:,} acknowledged events in the log, "
        f"{report['decided']:,}/{report['user_messages']:,} user messages decided; "
        f"throughput {_cell(report['throughput_events_per_s'])} events/s"
    )
