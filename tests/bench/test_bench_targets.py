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
        "store_events_vs_event_log": 0.8,
        "queue_vs_baseline": 0.5,
        "search_p95_vs_vector_step": 1.5,
        "search_chains": 100_000,
        "e2e_p95_ms": 80.0,
        "pipeline_vs_embed": 0.2,
        "decide_ms": 15.0,
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
    assert verdicts["search_p95_vs_vector_step"]["verdict"] == "met"  # <= 1.5 at 1.5
    assert all(v["verdict"] == "met" for v in verdicts.values()), verdicts


def test_a_figure_past_its_bound_is_missed() -> None:
    verdicts = _by_key(
        _full_run(
            store_events_vs_event_log=0.66,
            search_p95_vs_vector_step=2.2,
            e2e_p95_ms=1000.5,
            pipeline_vs_embed=0.013,
            decide_ms=15.2,
            peak_rss_mib={"cognition": 1500.0},
        )
    )

    assert verdicts["store_events_vs_event_log"]["verdict"] == "missed"
    assert verdicts["search_p95_vs_vector_step"]["verdict"] == "missed"
    assert verdicts["e2e_p95_ms"]["verdict"] == "missed"
    assert verdicts["pipeline_vs_embed"]["verdict"] == "missed"
    assert verdicts["decide_ms"]["verdict"] == "missed"
    # 1.5 GB is 1,430.5 MiB: 1,500 MiB is over it.
    assert verdicts["peak_rss_mib.cognition"]["verdict"] == "missed"


def test_ingest_against_the_empty_handler_is_reported_without_a_bound() -> None:
    assert "ingest_vs_baseline" not in _by_key(_full_run(ingest_vs_baseline=0.24))


def test_the_search_target_is_not_judged_on_the_quick_runs_ten_thousand_chains() -> None:
    verdict = _by_key(_full_run(search_chains=10_000, search_p95_vs_vector_step=1.2))["search_p95_vs_vector_step"]

    assert verdict["verdict"] == "not measured"
    assert "100,000" in verdict["why"] and "10,000" in verdict["why"]


def test_a_stage_that_did_not_run_leaves_its_targets_not_measured() -> None:
    verdicts = _by_key(_full_run(store_events_vs_event_log=None, pipeline_vs_embed=None, peak_rss_mib=None))

    assert verdicts["store_events_vs_event_log"]["verdict"] == "not measured"
    assert verdicts["pipeline_vs_embed"]["verdict"] == "not measured"
    assert verdicts["peak_rss_mib.cognition"]["verdict"] == "not measured"
    assert verdicts["queue_vs_baseline"]["verdict"] == "met"
