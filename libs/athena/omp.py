"""OpenMP's wait policy for torch's threads, chosen before torch loads.

By default OpenMP threads spin for a while after each parallel region, waiting for the next one. In
formation, torch runs in two OS threads in turn (the embedding model in a worker thread, the search's
vector scan on the event loop's): each has its own team of threads, and a team spinning on the cores
the other one needs slowed both (docs/benchmarks.md, "Measured choices in the code"). PASSIVE makes idle threads sleep instead. Set only where no one chose
otherwise (an operator's OMP_WAIT_POLICY wins), and only by processes' entry points: OpenMP reads it once.
"""

from __future__ import annotations

import os

__all__ = ["prefer_passive_omp_wait"]


def prefer_passive_omp_wait() -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
