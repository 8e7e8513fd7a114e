"""Statistics of repeated runs, and the two outputs: a rich table and the JSON document."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["Figure", "StageResult", "percentile", "render_table", "render_targets", "summary"]


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty sample."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of an empty sample")
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median of the repeats with its spread (min, max) and the number of repeats."""
    xs = [float(v) for v in values]
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


@dataclass
class Figure:
    """One measured figure beside its baseline (both summaries of repeats)."""

    name: str
    unit: str
    value: dict[str, float]
    baseline_name: str = ""
    baseline: dict[str, float] | None = None

    def ratio(self) -> float | None:
        if not self.baseline or not self.baseline["median"]:
            return None
        return self.value["median"] / self.baseline["median"]


@dataclass
class StageResult:
    stage: str
    figures: list[Figure] = field(default_factory=list)
    keys: dict[str, Any] = field(default_factory=dict)
    """Top-level JSON keys this stage contributes (e.g. queue_vs_baseline)."""
    detail: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _number(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _fmt(s: dict[str, float] | None) -> str:
    if not s:
        return ""
    return f"{_number(s['median'])} [{_number(s['min'])}..{_number(s['max'])}]"


def render_table(results: Sequence[StageResult], console: Console) -> None:
    table = Table(title="athena bench (median [min..max] of repeats)")
    for col in ("stage", "figure", "unit", "value", "baseline", "baseline value", "ratio"):
        table.add_column(col, overflow="fold")
    for r in results:
        for f in r.figures:
            ratio = f.ratio()
            table.add_row(
                r.stage,
                f.name,
                f.unit,
                _fmt(f.value),
                f.baseline_name,
                _fmt(f.baseline),
                f"{ratio:.3f}" if ratio is not None else "",
            )
        for note in r.notes:
            table.add_row(r.stage, "[dim]note[/dim]", "", f"[dim]{note}[/dim]", "", "", "")
    console.print(table)


_VERDICT_STYLE = {"met": "green", "missed": "red", "not measured": "yellow"}


def render_targets(verdicts: Sequence[dict[str, Any]], console: Console) -> None:
    """The targets' verdicts (_targets.judge) as a table, each with why when there is a reason to give."""
    table = Table(title="targets")
    for col in ("target", "figure", "bound", "verdict", "why"):
        table.add_column(col, overflow="fold")
    for v in verdicts:
        value = "" if v["value"] is None else _number(v["value"])
        style = _VERDICT_STYLE[v["verdict"]]
        table.add_row(
            v["target"],
            f"{value} {v['unit']}".strip(),
            f"{v['comparison']} {_number(v['bound'])} {v['unit']}".strip(),
            f"[{style}]{v['verdict']}[/{style}]",
            v.get("why", ""),
        )
    console.print(table)
