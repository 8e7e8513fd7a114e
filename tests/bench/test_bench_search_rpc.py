"""The search stage's public-API measurement over a pre-filled stack: formation opens the Milvus Lite
file the bench filled, finds the chain documents it wrote and answers SearchMemory with full hit lists.

A small size (500 chains) keeps it to about half a minute on 2 cores. No timing thresholds: the
figures are only checked to be measured (finite, positive, ordered).
"""

from __future__ import annotations

import math

from athena_lab.bench._search import measure_search_at


def _positive(v: object) -> bool:
    return isinstance(v, float) and math.isfinite(v) and v > 0


def test_search_rpc_answers_every_query_from_the_prefilled_chains() -> None:
    # measure_search_at raises when a SearchMemory call, one caller or several at once, returns fewer than LIMIT hits.
    in_process, rpc = measure_search_at(500, 4, 1, lambda: None)
    assert in_process["top10_agreement"] == 1.0
    series = rpc["series"]
    for key in (
        "incl_p50",
        "incl_p95",
        "excl_p50",
        "excl_p95",
        "incl_per_s",
        "concurrent_per_s",
        "concurrent_p50",
        "concurrent_p95",
        "open_p50",
        "open_p95",
    ):
        assert len(series[key]) == 1 and _positive(series[key][0]), key
    assert series["incl_p50"][0] <= series["incl_p95"][0]
    assert series["concurrent_p50"][0] <= series["concurrent_p95"][0]
    steps = dict(rpc["steps"])
    assert set(steps.pop("formation_step_mean_ms")) == {"words", "embedding", "scan", "rank", "documents", "answer"}
    assert all(_positive(v) for v in rpc["steps"]["formation_step_mean_ms"].values())
    assert all(_positive(v) for v in steps.values())
    assert _positive(rpc["doc_fill_s"]) and _positive(rpc["first_call_s"])
