"""Short garbage-collector pauses in the long-running services, and a measure of them.

CPython's full (generation 2) collection walks every container object it tracks, and the process
stops meanwhile: every call in flight waits. The imports of torch, transformers and pymilvus alone
are hundreds of thousands of them, and formation's search caches and chain documents add more, so
a full collection stops formation for a noticeable fraction of a second at 100,000 chains
(docs/benchmarks.md, "Profiles"). Those objects live as long as the process: walking them again and
again frees nothing.

`freeze_long_lived` moves everything tracked at that moment into the permanent generation
(`gc.freeze`), which collections skip. Frozen objects are still freed by reference counting when
their last reference goes; only a reference cycle among them that becomes garbage later is never
collected, so freeze what is meant to live: once start-up has built the service (after a full
collection, before anything is served: `ServiceHost.run`), and in formation again once its search
caches are warm. `watch_gc_pauses` times every collection into `memos_gc_pause_seconds`.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

from athena.metrics import GC_FROZEN_OBJECTS, GC_PAUSE_SECONDS

__all__ = ["freeze_long_lived", "watch_gc_pauses"]

log = logging.getLogger("athena.gc")

_by_generation = [GC_PAUSE_SECONDS.labels(str(g)) for g in range(3)]
_started = 0.0


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    global _started
    if phase == "start":
        _started = time.perf_counter()
    else:
        _by_generation[info["generation"]].observe(time.perf_counter() - _started)


def watch_gc_pauses() -> None:
    """Time every collection of this process into memos_gc_pause_seconds{generation} (once per process)."""
    if _on_collection not in gc.callbacks:
        gc.callbacks.append(_on_collection)


def freeze_long_lived(*, full_collection_first: bool, reason: str) -> int:
    """Freeze every object tracked now; returns how many are frozen in all.

    With `full_collection_first`, garbage is collected before (a pause as long as a full collection:
    only where nothing is being served); without it, only the young generations are (milliseconds),
    and cyclic garbage already in the oldest one stays frozen with the rest."""
    t0 = time.perf_counter()
    gc.collect(2 if full_collection_first else 1)
    gc.freeze()
    frozen = gc.get_freeze_count()
    GC_FROZEN_OBJECTS.set(frozen)
    log.info(
        "froze %d long-lived objects after %s (%.0f ms): full collections no longer walk them",
        frozen,
        reason,
        (time.perf_counter() - t0) * 1000,
    )
    return frozen
