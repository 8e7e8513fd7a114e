"""`athena bench`: the benchmark suite (docs/benchmarks.md); the stages are in athena_lab.bench."""

from __future__ import annotations

import typer
from rich.console import Console

__all__ = ["bench"]


def bench(
    quick: bool = typer.Option(False, "--quick", help="Smaller sizes and fewer repeats (under 3 minutes on 2 cores)."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON (null for a stage not run)."),
    stages: str = typer.Option(
        "", "--stages", help="Comma-separated subset of: queue, ingest, search, cognition, e2e."
    ),
    mongodb_uri: str = typer.Option(
        "",
        "--mongodb-uri",
        help="A running MongoDB for the stacks instead of nx-27017 "
        "(each stack uses a database athena_bench_<random>, dropped after it).",
    ),
) -> None:
    """Benchmark the pipeline: each figure the median of repeats with min/max, beside a baseline of the same run."""
    from athena_lab.bench.command import bench_command

    bench_command(quick, as_json, stages, Console(), Console(stderr=True), mongodb_uri=mongodb_uri or None)
