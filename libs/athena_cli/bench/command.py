"""`athena bench [--quick] [--json]`: run the stages in order, print a table (or JSON)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import time
from contextlib import ExitStack
from typing import Any, Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from athena_cli.bench._report import StageResult, render_table
from athena_cli.bench._stores import BenchStores, BenchStoresError

__all__ = ["REQUIRED_KEYS", "STAGES", "run_bench"]

STAGES = ("queue", "ingest", "search", "cognition", "e2e")
REQUIRED_KEYS = ("queue_vs_baseline", "ingest_vs_baseline", "store_events_per_s", "search_p95_ms", "search_chains",
                 "decisions_per_s", "e2e_p95_ms")
_STACK_STAGES = {"ingest", "e2e"}
KEY_STAGE = {"queue_vs_baseline": "queue", "ingest_vs_baseline": "ingest", "store_events_per_s": "ingest",
             "search_p95_ms": "search", "search_chains": "search", "decisions_per_s": "cognition", "e2e_p95_ms": "e2e"}


def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal:"))
    except (OSError, StopIteration):
        mem = 0
    return {"nproc": os.cpu_count(), "cpu": cpu, "mem_gib": round(mem / 1024 / 1024, 1), "python": platform.python_version()}


def run_bench(*, quick: bool, stages: tuple[str, ...] = STAGES, console: Console, err_console: Console,
              stores: BenchStores = BenchStores()) -> dict[str, Any]:
    from athena_cli.stack import SERVICES

    mongodb = stores.check()
    ticks = {"queue": 3, "ingest": 3, "search": 3, "cognition": 3, "e2e": 3} if quick else {s: 5 for s in STAGES}
    results: list[StageResult] = []
    skipped: dict[str, str] = {s: "not selected" for s in STAGES if s not in stages}
    rss: dict[str, float | None] | None = None
    t_start = time.perf_counter()
    stack = None
    data_dir = None
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=err_console, transient=False) as progress, ExitStack() as stacks:
        bar = progress.add_task("athena bench", total=sum(ticks[s] for s in stages))

        def stage_tick(name: str) -> Callable[[], None]:
            progress.update(bar, description=f"athena bench: {name}")
            return lambda: progress.advance(bar)

        try:
            for name in stages:
                tick = stage_tick(name)
                try:
                    if name == "queue":
                        from athena_cli.bench._queue import run_queue_stage

                        results.append(run_queue_stage(quick=quick, tick=tick))
                    elif name == "search":
                        from athena_cli.bench._search import run_search_stage

                        results.append(run_search_stage(quick=quick, tick=tick, stores=stores))
                    elif name == "cognition":
                        from athena_cli.bench._cognition import run_cognition_stage

                        results.append(run_cognition_stage(quick=quick, tick=tick))
                    elif name in _STACK_STAGES:
                        if stack is None:
                            progress.update(bar, description="athena bench: starting the local stack")
                            data_dir = tempfile.mkdtemp(prefix="athena-bench-stack-")
                            # Cognition starts after the ingest stage, so that it does not compete for the cores.
                            stack = stacks.enter_context(stores.stack(
                                data_dir, services=("formation", "ingest"),
                                env={"LLM_BASE_URL": "", "QUEUE_BACKOFF_BASE_SECONDS": "0.2", "QUEUE_BACKOFF_MAX_SECONDS": "2"}))
                            stack.start()
                            tick = stage_tick(name)
                        if name == "ingest":
                            from athena_cli.bench._ingest import run_ingest_stage

                            creds = stack.credentials
                            results.append(run_ingest_stage(stack.ingest_target, quick=quick, tick=tick, tenant=creds.dev_tenant, credential=creds.dev_api_key,
                                                            event_log=(stack.mongodb_uri, stack.mongodb_database), pids={
                                **{n: p.pid for n, p in stack.procs.items()},
                                **({"redis": stack.redis.pid} if stack.redis and stack.redis.pid else {}),
                                **({"mongo": stack.mongo.pid} if stack.mongo and stack.mongo.pid else {}),
                            }))
                        else:
                            from athena_cli.bench._e2e import peak_rss_mb, run_e2e_stage
                            from athena.redis_util import connect_redis
                            import asyncio

                            async def _flush() -> None:  # drop the ingest stage's queued chain checks
                                r = connect_redis(f"redis://127.0.0.1:{stack.ports.redis}/0")
                                await r.flushdb()
                                await r.aclose()

                            if "cognition" not in stack.procs:
                                asyncio.run(_flush())
                                stack.services = SERVICES
                                stack.start_service("cognition")
                                stack.wait_serving("cognition", timeout=180)
                            results.append(run_e2e_stage(stack, quick=quick, tick=tick))
                            rss = peak_rss_mb(stack)
                except Exception as exc:  # a failed stage is reported as not run, the others go on
                    skipped[name] = f"failed: {type(exc).__name__}: {exc}"[:500]
                    err_console.print(f"[red]stage {name} failed: {exc}[/red]")
        finally:
            if stack is not None:
                progress.update(bar, description="athena bench: stopping the local stack")
                stacks.close()
                shutil.rmtree(data_dir, ignore_errors=True)

    doc: dict[str, Any] = {k: None for k in REQUIRED_KEYS}
    for r in results:
        doc.update(r.keys)
    doc["peak_rss_mib"] = rss
    doc["mode"] = "quick" if quick else "full"
    doc["machine"] = _machine()
    doc["mongodb"] = mongodb
    doc["seconds"] = round(time.perf_counter() - t_start, 1)
    doc["stages"] = {r.stage: {"seconds": round(r.seconds, 1), **r.detail} for r in results}
    doc["not_run"] = skipped
    doc["_results"] = results
    return doc


def bench_command(quick: bool, as_json: bool, stages: str, console: Console, err_console: Console, *, mongodb_uri: str | None = None) -> None:
    import typer

    chosen = tuple(s.strip() for s in stages.split(",") if s.strip()) if stages else STAGES
    bad = [s for s in chosen if s not in STAGES]
    if bad:
        raise typer.BadParameter(f"unknown stage(s) {bad}; choose from {', '.join(STAGES)}", param_hint="--stages")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        doc = run_bench(quick=quick, stages=chosen, console=console, err_console=err_console, stores=BenchStores(mongodb_uri=mongodb_uri))
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
        console.print(f"{k}: {v if v is not None else f'null (stage {stage} not run: ' + doc['not_run'].get(stage, '?') + ')'}")
    if doc["peak_rss_mib"]:
        console.print("peak RSS (VmHWM, MiB): " + ", ".join(f"{n}={v:.0f}" for n, v in doc["peak_rss_mib"].items() if v is not None))
    console.print(f"machine: {doc['machine']}; MongoDB: {doc['mongodb']}; {doc['seconds']} s")
