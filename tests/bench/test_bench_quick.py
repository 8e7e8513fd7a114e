"""`athena bench --quick --json` through the CLI: every stage runs and every figure is there.

The whole quick bench (its own redis-server, nx-27017, Milvus Lite and local stack), about two
minutes on 2 cores. No timing thresholds: figures are measurements, never assertions.
"""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from athena_cli.main import app
from athena_lab.bench.command import REQUIRED_KEYS, STAGES

STAGE_KEYS = {
    "queue": {"queue_vs_baseline", "queue_tasks_per_s", "queue_baseline_tasks_per_s"},
    "ingest": {
        "ingest_vs_baseline",
        "store_events_per_s",
        "store_event_per_s",
        "store_event_p50_ms",
        "store_event_p99_ms",
        "empty_handler_per_s",
        "event_log_events_per_s",
        "store_events_vs_event_log",
    },
    "search": {
        "search_p95_ms",
        "search_chains",
        "search_p95_vs_vector_step",
        "search_p95_ms_excluding_embedding",
        "search_vector_step_p95_ms",
        "search_vector_step_p95_ms_excluding_embedding",
        "search_numpy_p95_ms",
        "search_rpc_p50_ms",
        "search_concurrent_per_s",
        "search_concurrent_vs_one_caller",
        "search_concurrent_p95_ms",
        "search_concurrent_callers",
        "search_cold_user_p50_ms",
        "search_cold_user_p95_ms",
        "search_cold_users",
        "search_cold_user_after_warm_up_p95_ms",
        "search_cache_warm_up_s",
        "search_cold_user_rpc_p50_ms",
        "search_cold_user_rpc_p95_ms",
        "search_cold_user_rpc_next_p95_ms",
        "formation_warm_up_s",
        "search_open_window_p50_ms",
        "search_open_window_p95_ms",
    },
    "cognition": {
        "decisions_per_s",
        "decision_embedding_share",
        "decisions_per_s_pair_cosine",
        "decide_ms",
        "decide_ms_float_model",
        "decide_ms_cached",
        "decisions_per_s_per_process",
        "decisions_per_s_per_worker",
        "cognition_workers",
    },
    "e2e": {"e2e_p95_ms", "e2e_p50_ms", "e2e_floor_p50_ms"},
    "pipeline": {"pipeline_messages_per_s", "pipeline_chains_per_s", "embed_batched_per_s", "pipeline_vs_embed"},
}


def _numeric(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def test_bench_quick_runs_every_stage_and_reports_every_figure_beside_its_baseline() -> None:
    result = CliRunner().invoke(app, ["bench", "--quick", "--json"])

    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{") :])
    assert doc["not_run"] == {}, doc["not_run"]
    assert doc["mode"] == "quick" and _numeric(doc["seconds"])
    for key in REQUIRED_KEYS:
        assert _numeric(doc[key]) and doc[key] > 0, (key, doc[key])
    for stage in STAGES:
        for key in STAGE_KEYS[stage]:
            assert _numeric(doc[key]), (stage, key, doc[key])
        figures = doc["stages"][stage]["figures"].values()
        assert figures
        for fig in figures:
            for series in (fig["value"], fig["baseline"]):
                if series is not None:
                    assert all(_numeric(series[k]) for k in ("median", "min", "max", "n"))
                    assert series["min"] <= series["median"] <= series["max"]
    assert doc["search_chains"] == 10_000
    # Peak memory of every service of the stack, read from /proc after the e2e stage.
    assert all(_numeric(doc["peak_rss_mib"][name]) for name in ("ingest", "cognition", "formation"))
    # Every target judged on this run's own figures; the search target is at 100,000 chains, not quick's 10,000.
    verdicts = {v["key"]: v for v in doc["targets"]}
    assert verdicts["search_p95_vs_vector_step"]["verdict"] == "not measured"
    assert doc["stages"]["pipeline"]["tasks_without_result"] == 0
    for key, v in verdicts.items():
        if key == "search_p95_vs_vector_step":
            continue
        figure = doc["peak_rss_mib"]["cognition"] if key == "peak_rss_mib.cognition" else doc[key]
        assert v["value"] == figure
        met = figure >= v["bound"] if v["comparison"] == ">=" else figure <= v["bound"]
        assert v["verdict"] == ("met" if met else "missed"), v
