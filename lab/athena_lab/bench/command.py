"""`athena bench [--quick] [--json]`: run the stages in order, print a table (or JSON)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from athena_lab.bench._report import StageResult, render_table, render_targets
from athena_lab.bench._stores import BenchStores, BenchStoresError
from athena_lab.bench._targets import judge

if TYPE_CHECKING:
    from athena_cli.stack import LocalStack

__all__ = ["REQUIRED_KEYS", "STAGES", "run_bench"]

STAGES = ("queue", "ingest", "search", "cognition", "e2e", "pipeline")
REQUIRED_KEYS = (
    "queue_vs_baseline",
    "ingest_vs_baseline",
    "store_events_per_s",
    "search_p95_ms",
    "search_chains",
    "decisions_per_s",
    "e2e_p95_ms",
    "pipeline_vs_embed",
)
KEY_STAGE = {
    "queue_vs_baseline": "queue",
    "ingest_vs_baseline": "ingest",
    "store_events_per_s": "ingest",
    "search_p95_ms": "search",
    "search_chains": "search",
    "decisions_per_s": "cognition",
    "e2e_p95_ms": "e2e",
    "pipeline_vs_embed": "pipeline",
}


def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as meminfo:
            mem = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:"))
    except (OSError, StopIteration):
        mem = 0
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "mem_gib": round(mem / 1024 / 1024, 1),
        "python": platform.python_version(),
    }


class _SharedStack:
    """The local stack the ingest and e2e stages share, started when the first of them runs: formation
    and ingest only, so that cognition does not compete for the cores during the ingest stage; cognition
    joins (after Redis is flushed of the ingest stage's queued chain checks) for the e2e stage."""

    _ENV: ClassVar[Mapping[str, str]] = {
        "LLM_BASE_URL": "",
        "QUEUE_BACKOFF_BASE_SECONDS": "0.2",
        "QUEUE_BACKOFF_MAX_SECONDS": "2",
    }

    def __init__(self, stores: BenchStores, exits: ExitStack, on_status: Callable[[str], None]) -> None:
        self._stores, self._exits, self._on_status = stores, exits, on_status
        self._stack: LocalStack | None = None

    def get(self) -> LocalStack:
        if self._stack is None:
            self._on_status("starting the local stack")
            data_dir = tempfile.mkdtemp(prefix="athena-bench-stack-")
            self._exits.callback(shutil.rmtree, data_dir, ignore_errors=True)  # after the stack stopped (LIFO)
            stack = self._exits.enter_context(
                self._stores.stack(data_dir, services=("formation", "ingest"), env=self._ENV)
            )
            self._exits.callback(self._on_status, "stopping the local stack")
            stack.start()
            self._stack = stack
        return self._stack

    def with_cognition(self) -> LocalStack:
        import asyncio

        from athena.redis_util import connect_redis
        from athena_cli.stack import SERVICES

        stack = self.get()
        if "cognition" not in stack.procs:

            async def flush() -> None:
                r = connect_redis(stack.redis_url)
                await r.flushdb()
                await r.aclose()

            asyncio.run(flush())
            stack.services = SERVICES
            stack.start_service("cognition")
            stack.wait_serving("cognition", timeout=180)
        return stack


def _run_stage(
    name: str,
    *,
    quick: bool,
    tick: Callable[[], None],
    status: Callable[[str], None],
    stores: BenchStores,
    shared: _SharedStack,
) -> StageResult:
    status(name)
    if name == "queue":
        from athena_lab.bench._queue import run_queue_stage

        return run_queue_stage(quick=quick, tick=tick)
    if name == "search":
        from athena_lab.bench._search import run_search_stage

        return run_search_stage(quick=quick, tick=tick, stores=stores)
    if name == "cognition":
        from athena_lab.bench._cognition import run_cognition_stage

        return run_cognition_stage(quick=quick, tick=tick)
    if name == "ingest":
        from athena_lab.bench._ingest import run_ingest_stage

        stack = shared.get()
        status(name)
        pids = {n: p.pid for n, p in stack.procs.items()}
        for server_name, server in (("redis", stack.redis), ("mongo", stack.mongo)):
            if server is not None and server.pid:
                pids[server_name] = server.pid
        creds = stack.credentials
        return run_ingest_stage(
            stack.ingest_target,
            quick=quick,
            tick=tick,
            tenant=creds.dev_tenant,
            credential=creds.dev_api_key,
            event_log=(stack.mongodb_uri, stack.mongodb_database),
            pids=pids,
        )
    if name == "e2e":
        from athena_lab.bench._e2e import peak_rss_mb, run_e2e_stage

        stack = shared.with_cognition()
        status(name)
        result = run_e2e_stage(stack, quick=quick, tick=tick)
        result.keys["peak_rss_mib"] = peak_rss_mb(stack)  # every process of the stack has run by now
        return result
    if name == "pipeline":
        from athena_lab.bench._pipeline import run_pipeline_stage

        stack = shared.with_cognition()
        status(name)
        return run_pipeline_stage(stack, quick=quick, tick=tick)
    raise ValueError(f"unknown stage {name!r}")


def run_bench(
    *,
    quick: bool,
    stages: tuple[str, ...] = STAGES,
    console: Console,
    err_console: Console,
    stores: BenchStores = BenchStores(),
) -> dict[str, Any]:
    mongodb = stores.check()
    ticks = {s: 3 for s in STAGES} if quick else {s: 5 for s in STAGES}
    results: list[StageResult] = []
    skipped: dict[str, str] = {s: "not selected" for s in STAGES if s not in stages}
    t_start = time.perf_counter()
    with (
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=err_console,
            transient=False,
        ) as progress,
        ExitStack() as exits,
    ):
        bar = progress.add_task("athena bench", total=sum(ticks[s] for s in stages))

        def status(text: str) -> None:
            progress.update(bar, description=f"athena bench: {text}")

        shared = _SharedStack(stores, exits, status)
        for name in stages:
            try:
                results.append(
                    _run_stage(
                        name,
                        quick=quick,
                        tick=lambda: progress.advance(bar),
                        status=status,
                        stores=stores,
                        shared=shared,
                    )
                )
            except Exception as exc:  # a failed stage is reported as not run, the others go on
                skipped[name] = f"failed: {type(exc).__name__}: {exc}"[:500]
                err_console.print(f"[red]stage {name} failed: {exc}[/red]")
    doc: dict[str, Any] = {k: None for k in REQUIRED_KEYS}
    doc["peak_rss_mib"] = None  # the e2e stage's, when it ran
    for r in results:
        doc.update(r.keys)
    doc["mode"] = "quick" if quick else "full"
    doc["machine"] = _machine()
    doc["mongodb"] = mongodb
    doc["seconds"] = round(time.perf_counter() - t_start, 1)
    doc["stages"] = {r.stage: {"seconds": round(r.seconds, 1), **r.detail} for r in results}
    doc["not_run"] = skipped
    doc["targets"] = judge(doc)
    doc["_results"] = results
    return doc


def bench_command(
    quick: bool, as_json: bool, stages: str, console: Console, err_console: Console, *, mongodb_uri: str | None = None
) -> None:
    import typer

    chosen = tuple(s.strip() for s in stages.split(",") if s.strip()) if stages else STAGES
    bad = [s for s in chosen if s not in STAGES]
    if bad:
        raise typer.BadParameter(f"unknown stage(s) {bad}; choose from {', '.join(STAGES)}", param_hint="--stages")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        doc = run_bench(
            quick=quick,
            stages=chosen,
            console=console,
            err_console=err_console,
            stores=BenchStores(mongodb_uri=mongodb_uri),
        )
    except BenchStoresError as exc:
        raise typer.BadParameter(str(exc), param_hint="--mongodb-uri") from exc
    results = doc.pop("_results")
    if as_json:
        print(json.dumps(doc, indent=2, default=float))
        return
    render_table(results, console)
    for k in REQUIRED_KEYS:
        v = doc[k]
        stage = KEY_STAGE[k]
        console.print(
            f"{k}: {v if v is not None else f'null (stage {stage} not run: ' + doc['not_run'].get(stage, '?') + ')'}"
        )
    if doc["peak_rss_mib"]:
        console.print(
            "peak RSS (VmHWM, MiB): "
            + ", ".join(f"{n}={v:.0f}" for n, v in doc["peak_rss_mib"].items() if v is not None)
        )
    render_targets(doc["targets"], console)
    console.print(f"machine: {doc['machine']}; MongoDB: {doc['mongodb']}; {doc['seconds']} s")
