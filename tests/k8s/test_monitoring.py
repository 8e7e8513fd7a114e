"""The alerts (k8s/monitoring/prometheusrule.yaml), the ServiceMonitor and the Grafana dashboard, against the
metrics the code really exports (athena.metrics) and the runbook in docs/operations.md.

Where promtool is installed (on PATH, or named by ATHENA_PROMTOOL; Debian's `prometheus` package has
it), the rules are also parsed by it and their unit tests (k8s/monitoring/alerts.test.yaml) run, and the
dashboard's queries are parsed as recording rules.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from athena import metrics
from athena.queue import CHAIN_CHECK, WINDOW_FLUSH, QueueDepth

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "k8s" / "monitoring"
SERVICES = ("ingest", "cognition", "formation")

# Series from other exporters that the rules and the dashboard may use.
FOREIGN_SERIES = {
    "up",  # Prometheus itself
    "kube_pod_container_status_restarts_total",  # kube-state-metrics
    "kube_deployment_status_replicas_available",
}
SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum", "_created")}
# Values a matcher on these labels may name, from the code.
LABEL_VALUES = {
    "state": {f.name for f in dataclasses.fields(QueueDepth)},
    "type": {CHAIN_CHECK, WINDOW_FLUSH},
    "grpc_code": {code.name for code in grpc.StatusCode},
    "job": set(SERVICES),
    "container": set(SERVICES),
    "deployment": set(SERVICES),
    "namespace": {"athena", "$namespace"},
    "generation": {"0", "1", "2"},
}


@cache
def exported_series() -> dict[str, str]:
    """Every sample name Athena's processes export -> its metric type."""
    out: dict[str, str] = {}
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            for family in value.describe():
                for suffix in SUFFIXES[family.type]:
                    out[family.name + suffix] = family.type
    return out


def prometheus_rule() -> dict[str, Any]:
    return yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())


def alerts() -> list[dict[str, Any]]:
    return [r for g in prometheus_rule()["spec"]["groups"] for r in g["rules"] if "alert" in r]


def dashboard() -> dict[str, Any]:
    return json.loads((MONITORING / "athena-dashboard.json").read_text())


def dashboard_queries() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]


def selectors(expr: str) -> list[tuple[str, str]]:
    """(series name, matcher text) of every series selector in a PromQL expression."""
    out = []
    for match in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?", expr):
        name, braces = match.group(1), match.group(2) or ""
        if name.startswith(("memos_", "kube_")) or name == "up":
            out.append((name, braces))
    return out


def check_query(expr: str) -> list[str]:
    problems = []
    series = selectors(expr)
    if not series:
        problems.append(f"no series in {expr!r}")
    for name, braces in series:
        if name not in exported_series() and name not in FOREIGN_SERIES:
            problems.append(f"{name}: not exported by athena.metrics")
        if name.endswith("_bucket") and "histogram_quantile" not in expr:
            problems.append(f"{name} outside histogram_quantile")
        if exported_series().get(name) == "counter" and not re.search(rf"(rate|increase)\(\s*{name}", expr):
            problems.append(f"{name}: a counter read without rate() or increase()")
        for label, op, value in re.findall(r'(\w+)\s*(=~|!~|=|!=)\s*"([^"]*)"', braces):
            allowed = LABEL_VALUES.get(label)
            if allowed is None:
                continue
            values = value.split("|") if op in ("=~", "!~") else [value]
            unknown = [v for v in values if v not in allowed and not (label == "grpc_code" and v == "OK")]
            if unknown:
                problems.append(f"{name}{{{label}{op}...}}: {unknown} are no values of {label}")
    return problems


# --- the alerts --------------------------------------------------------------------------------------------


def test_every_alert_reads_series_that_athena_or_kubernetes_exports() -> None:
    problems = {rule["alert"]: check_query(rule["expr"]) for rule in alerts()}
    assert {name: p for name, p in problems.items() if p} == {}


def test_the_alerts_cover_queue_dead_letters_errors_latency_llm_and_pods() -> None:
    by_series: dict[str, set[str]] = {}
    for rule in alerts():
        for name, braces in selectors(rule["expr"]):
            by_series.setdefault(name + braces.replace(" ", ""), set()).add(rule["alert"])
    watched = " ".join(by_series)
    for needed in (
        'memos_queue_depth{state="ready"}',  # queue depth
        "memos_queue_wait_seconds_bucket",  # queue age
        'memos_queue_depth{state="dead_lettered"}',  # dead letters
        "memos_grpc_server_handled_total",  # error ratio per RPC
        f'memos_task_seconds_bucket{{type="{CHAIN_CHECK}"}}',  # chain-check latency
        "memos_llm_breaker_open",  # LLM breaker
        "kube_pod_container_status_restarts_total",  # pods restarting
    ):
        assert needed in watched, needed
    error_ratio = next(r for r in alerts() if "memos_grpc_server_handled_total" in r["expr"])
    assert "grpc_method" in error_ratio["expr"] and "grpc_service" in error_ratio["expr"], "per RPC"


def test_every_alert_has_a_severity_a_summary_and_a_runbook_section_in_operations_md() -> None:
    docs = (ROOT / "docs" / "operations.md").read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in docs.splitlines()
        if line.startswith("#")
    }
    names = [rule["alert"] for rule in alerts()]
    assert len(names) == len(set(names))
    for rule in alerts():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        runbook = rule["annotations"]["runbook"]
        assert runbook == f"docs/operations.md#{rule['alert'].lower()}", rule["alert"]
        assert rule["alert"].lower() in anchors, f"docs/operations.md has no section {rule['alert']}"


def test_the_alerts_jobs_are_the_service_monitors_jobs() -> None:
    """job="..." in the rules is the Service's app.kubernetes.io/name: the ServiceMonitor's jobLabel."""
    monitor = yaml.safe_load((MONITORING / "servicemonitor.yaml").read_text())
    assert monitor["spec"]["jobLabel"] == "app.kubernetes.io/name"
    (names,) = [
        e["values"] for e in monitor["spec"]["selector"]["matchExpressions"] if e["key"] == monitor["spec"]["jobLabel"]
    ]
    assert sorted(names) == sorted(SERVICES)
    for rule in alerts():
        for jobs in re.findall(r'job=~?"([^"]+)"', rule["expr"]):
            assert set(jobs.split("|")) <= set(SERVICES), rule["alert"]


def test_the_service_monitor_scrapes_the_metrics_port_of_each_service() -> None:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("render_manifests", ROOT / "scripts" / "render_manifests.py")
    assert spec is not None and spec.loader is not None
    rm = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("render_manifests", rm)
    spec.loader.exec_module(rm)
    docs = rm.render(ROOT / "k8s" / "overlays" / "prod")
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    selector = monitor["spec"]["selector"]

    def selected(labels: dict[str, str]) -> bool:
        if not selector.get("matchLabels", {}).items() <= labels.items():
            return False
        return all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", []))

    scraped = {
        s["metadata"]["name"]
        for s in docs
        if s["kind"] == "Service"
        and selected(s["metadata"]["labels"])
        and endpoint["port"] in {p["name"] for p in s["spec"]["ports"]}
    }
    assert scraped == set(SERVICES)
    assert monitor["metadata"]["namespace"] == "athena"


# --- the dashboard -----------------------------------------------------------------------------------------


def test_the_dashboard_queries_read_exported_series() -> None:
    queries = dashboard_queries()
    assert len(queries) >= 15
    problems = {q: check_query(q) for q in queries}
    assert {q: p for q, p in problems.items() if p} == {}


def test_the_dashboard_is_importable_grafana_json() -> None:
    board = dashboard()
    assert board["uid"] and board["title"] and isinstance(board["schemaVersion"], int)
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert "namespace" in variables
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert 'namespace="$namespace"' in target["expr"], panel["title"]


# --- promtool (optional) -------------------------------------------------------------------------------------


def _promtool() -> str | None:
    return os.environ.get("ATHENA_PROMTOOL") or shutil.which("promtool")


@pytest.mark.skipif(_promtool() is None, reason="no promtool here: the queries are checked by the tests above")
def test_promtool_parses_the_rules_and_their_unit_tests_pass(tmp_path: Path) -> None:
    promtool = _promtool()
    assert promtool is not None
    (tmp_path / "athena-rules.yaml").write_text(yaml.safe_dump(prometheus_rule()["spec"]))
    shutil.copy(MONITORING / "alerts.test.yaml", tmp_path / "alerts.test.yaml")
    for command in (["check", "rules", "athena-rules.yaml"], ["test", "rules", "alerts.test.yaml"]):
        result = subprocess.run([promtool, *command], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
    # Every alert has at least one unit test that expects it to fire.
    tested = yaml.safe_load((MONITORING / "alerts.test.yaml").read_text())
    fired = {
        case["alertname"] for test in tested["tests"] for case in test["alert_rule_test"] if case.get("exp_alerts")
    }
    assert {rule["alert"] for rule in alerts()} <= fired


@pytest.mark.skipif(_promtool() is None, reason="no promtool here: the queries are checked by the tests above")
def test_promtool_parses_the_dashboard_queries(tmp_path: Path) -> None:
    promtool = _promtool()
    assert promtool is not None
    rules = [
        {
            "record": f"athena_dashboard:query_{i}",
            "expr": q.replace("$namespace", "athena").replace("$__rate_interval", "5m"),
        }
        for i, q in enumerate(dashboard_queries())
    ]
    (tmp_path / "dashboard.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run(
        [promtool, "check", "rules", "dashboard.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
