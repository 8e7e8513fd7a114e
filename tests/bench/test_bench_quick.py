"""`athena bench --quick --json` through the CLI: every key present, numeric where its stage ran.

Runs the fastest stages only (queue: its own redis-server; cognition: the local embedding model),
about half a minute on 2 cores. The other stages must then be null with a reason. No timing
thresholds: figures are measurements, never assertions.
"""

from __future__ import annotations

import json
import math

from typer.testing import CliRunner

from athena_cli.bench.command import REQUIRED_KEYS
from athena_cli.main import app

RUN = ("queue", "cognition")
RUN_KEYS = {"queue_vs_baseline", "queue_tasks_per_s", "queue_baseline_tasks_per_s", "decisions_per_s",
            "decision_embedding_share", "decisions_per_s_pair_cosine"}


def _numeric(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def test_bench_quick_json_has_every_key() -> None:
    result = CliRunner().invoke(app, ["bench", "--quick", "--json", "--stages", ",".join(RUN)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{"):])
    for key in REQUIRED_KEYS:
        assert key in doc, key
    for key in RUN_KEYS:
        assert _numeric(doc[key]), (key, doc[key])
    assert doc["queue_vs_baseline"] > 0 and doc["decisions_per_s"] > 0
    for key in ("ingest_vs_baseline", "store_events_per_s", "search_p95_ms", "search_chains", "e2e_p95_ms"):
        assert doc[key] is None, key
    assert set(doc["not_run"]) == {"ingest", "search", "e2e"}
    for stage in RUN:
        for fig in doc["stages"][stage]["figures"].values():
            for series in (fig["value"], fig["baseline"]):
                if series is not None:
                    assert all(_numeric(series[k]) for k in ("median", "min", "max", "n"))
                    assert series["min"] <= series["median"] <= series["max"]
