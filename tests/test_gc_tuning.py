"""Freezing a service's long-lived heap out of the collector's walks, and timing its pauses.

Each test runs in a fresh interpreter: a freeze is process-wide and would otherwise change the
collector of the test run itself. The services' own use is checked in tests/e2e (every service
reports its frozen objects and its pauses on /metrics).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _run(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_freezing_takes_the_long_lived_heap_out_of_the_collectors_walks_and_reports_its_size() -> None:
    result = _run(
        """
        import gc, json
        from prometheus_client import REGISTRY
        from athena.gc_tuning import freeze_long_lived
        kept = [[i] for i in range(200_000)]  # 200,000 tracked containers that live on
        walked_before = len(gc.get_objects())
        frozen = freeze_long_lived(full_collection_first=True, reason="test")
        print(json.dumps({"walked_before": walked_before, "walked_after": len(gc.get_objects()), "frozen": frozen,
                          "gauge": REGISTRY.get_sample_value("memos_gc_frozen_objects")}))
        """
    )

    assert result["frozen"] >= 200_000
    assert result["walked_after"] <= result["walked_before"] - 200_000  # gc.get_objects: what collections walk
    assert result["gauge"] == result["frozen"]


def test_a_frozen_object_is_still_freed_when_its_last_reference_goes() -> None:
    result = _run(
        """
        import gc, json, weakref
        from athena.gc_tuning import freeze_long_lived
        class Chain: pass
        chain = Chain()
        ref = weakref.ref(chain)
        freeze_long_lived(full_collection_first=False, reason="test")
        del chain
        print(json.dumps({"freed": ref() is None}))
        """
    )

    assert result["freed"] is True


def test_every_collection_is_timed_by_its_generation_once_however_often_watching_starts() -> None:
    result = _run(
        """
        import gc, json
        from prometheus_client import REGISTRY
        from athena.gc_tuning import watch_gc_pauses
        watch_gc_pauses()
        watch_gc_pauses()
        gc.collect(0); gc.collect(2); gc.collect(2)
        count = lambda g: REGISTRY.get_sample_value("memos_gc_pause_seconds_count", {"generation": g}) or 0
        print(json.dumps({"callbacks": len(gc.callbacks), "gen0": count("0"), "gen2": count("2"),
                          "gen2_seconds": REGISTRY.get_sample_value("memos_gc_pause_seconds_sum", {"generation": "2"})}))
        """
    )

    assert result["callbacks"] == 1
    assert result["gen0"] >= 1
    assert result["gen2"] >= 2  # the two full collections asked for
    assert result["gen2_seconds"] > 0
