"""The bench's verdicts on its targets (`targets` in `athena bench --json`), judged from a run's figures.

These feed `judge` documents shaped like the bench's JSON; the quick bench test checks the verdicts
of a real run against its own figures.
"""

from __future__ import annotations

from typing import Any

from athena_lab.bench._targets import TARGETS, judge


def _full_run(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "ingest_vs_baseline": 0.61,
        "store_events_per_s": 21_000.0,
        "event_log_events_per_s": 60_000.0,
        "queue_vs_baseline": 0.5,
        "search_p95_ms": 30.0,
        "search_chains": 100_000,
        "e2e_p95_ms": 80.0,
        "peak_rss_mib": {"formation": 900.0, "cognition": 700.0, "ingest": 90.0},
    }
    doc.update(overrides)
    return doc


def _by_key(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["key"]: v for v in judge(doc)}


def test_every_target_is_judged_once_in_a_fixed_order() -> None:
    assert [v["key"] for v in judge(_full_run())] == [t.key for t in TARGETS]


def test_a_figure_exactly_at_its_bound_meets_it_from_either_side() -> None:
    verdicts = _by_key(_full_run())

    assert verdicts["queue_vs_baseline"]["verdict"] == "met"  # >= 0.5 at 0.5
    assert verdicts["search_p95_ms"]["verdict"] == "met"  # <= 30 ms at 30 ms
    assert all(v["verdict"] == "met" for v in verdicts.values()), verdicts


def test_a_figure_past_its_bound_is_missed() -> None:
    verdicts = _by_key(
        _full_run(ingest_vs_baseline=0.24, search_p95_ms=31.3, e2e_p95_ms=1000.5, peak_rss_mib={"cognition": 1500.0})
    )

    assert verdicts["ingest_vs_baseline"]["verdict"] == "missed"
    assert verdicts["search_p95_ms"]["verdict"] == "missed"
    assert verdicts["e2e_p95_ms"]["verdict"] == "missed"
    # 1.5 GB is 1,430.5 MiB: 1,500 MiB is over it.
    assert verdicts["peak_rss_mib.cognition"]["verdict"] == "missed"


def test_the_search_target_is_not_judged_on_the_quick_runs_ten_thousand_chains() -> None:
    verdict = _by_key(_full_run(search_chains=10_000, search_p95_ms=12.0))["search_p95_ms"]

    assert verdict["verdict"] == "not measured"
    assert "100,000" in verdict["why"] and "10,000" in verdict["why"]


def test_a_stage_that_did_not_run_leaves_its_targets_not_measured() -> None:
    verdicts = _by_key(_full_run(store_events_per_s=None, event_log_events_per_s=None, peak_rss_mib=None))

    assert verdicts["store_events_per_s"]["verdict"] == "not measured"
    assert verdicts["peak_rss_mib.cognition"]["verdict"] == "not measured"
    assert verdicts["queue_vs_baseline"]["verdict"] == "met"


def test_store_events_below_a_bound_above_the_stores_own_ceiling_is_called_out_of_reach() -> None:
    verdict = _by_key(_full_run(store_events_per_s=3_513.0, event_log_events_per_s=5_063.0))["store_events_per_s"]

    assert verdict["verdict"] == "missed"
    assert verdict["ceiling"] == 5_063.0
    assert "out of reach" in verdict["why"] and "4.0x" in verdict["why"]


def test_store_events_missed_under_a_ceiling_above_the_bound_is_a_plain_miss() -> None:
    verdict = _by_key(_full_run(store_events_per_s=15_000.0, event_log_events_per_s=60_000.0))["store_events_per_s"]

    assert verdict["verdict"] == "missed"
    assert "why" not in verdict
