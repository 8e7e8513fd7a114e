"""Helpers shared by the tests (fake_openai: an OpenAI-compatible server; VirtualClock below).

Import as `from support import ...`: pytest puts tests/ on sys.path because tests/ has no __init__.py.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

__all__ = ["VirtualClock"]


class VirtualClock:
    """A monotonic clock whose async `sleep` jumps time forward instead of waiting.

    Sleepers wake in order of their wake-up time, as with a real clock: when every task is asleep,
    time jumps to the earliest wake-up. Pass `clock` as a Clock and `clock.sleep` as a Sleep.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._sleepers: list[tuple[float, int]] = []
        self._seq = itertools.count()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        entry = (self.now + max(0.0, seconds), next(self._seq))
        heapq.heappush(self._sleepers, entry)
        try:
            while self.now < entry[0]:
                # Let every runnable task run (and register its own sleep) before time moves.
                for _ in range(5):
                    await asyncio.sleep(0)
                if self._sleepers and self._sleepers[0] == entry:
                    self.now = max(self.now, entry[0])
        finally:
            self._sleepers.remove(entry)
            heapq.heapify(self._sleepers)
