"""Recall warm-ups written behind the answers: gathered per chain, flushed in one bulk write.

A SearchMemory hit warms its chain (recall_count, recall_strength, last_accessed_at, heat: heat.py).
The answer already carries the warmed chain; the write is bookkeeping for heat and the archiver,
so it does not hold the answer. Warm-ups are gathered for `interval` seconds: a chain recalled five
times meanwhile gets one update (`recall_count` + 5, the latest fields), and all of them go out in
one bulk write. A crash loses at most that interval's warm-ups (heat a little lower than it should
be), never a chain or an event. `settle()` writes what is gathered now (shutdown, tests).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from athena.errors import DependencyUnavailable

__all__ = ["WarmUps"]

log = logging.getLogger("athena.formation.recall")


class RecallSink(Protocol):
    async def record_recalls(self, recalls: list[tuple[str, int, Mapping[str, Any]]]) -> None: ...


class WarmUps:
    def __init__(self, sink: RecallSink, *, interval: float = 0.5) -> None:
        self.sink = sink
        self.interval = interval
        self._pending: dict[str, tuple[int, dict[str, Any]]] = {}
        self._in_flight: dict[str, int] = {}  # counts of the bulk write under way
        self._flusher: asyncio.Task[None] | None = None
        self._sleeping = False  # the flusher is waiting out the interval (safe to cancel), not writing
        self._writing: asyncio.Lock | None = None

    @property
    def pending(self) -> int:
        return len(self._pending)

    def unwritten(self, chain_id: str) -> int:
        """Recalls of the chain not yet in MongoDB (gathered, or in the write under way)."""
        return self._pending.get(chain_id, (0, {}))[0] + self._in_flight.get(chain_id, 0)

    def record(self, chain_id: str, fields: Mapping[str, Any]) -> None:
        """One recall of the chain, with its warmed fields (the latest recall's fields win)."""
        count, _ = self._pending.get(chain_id, (0, {}))
        self._pending[chain_id] = (count + 1, dict(fields))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later(), name="recall warm-ups")

    async def _flush_later(self) -> None:
        self._sleeping = True
        try:
            await asyncio.sleep(self.interval)
        finally:
            self._sleeping = False
        await self._write()

    async def _write(self) -> None:
        if self._writing is None:
            self._writing = asyncio.Lock()
        async with self._writing:  # one bulk write at a time: counts are never applied twice
            batch, self._pending = self._pending, {}
            if not batch:
                return
            self._in_flight = {chain_id: count for chain_id, (count, _) in batch.items()}
            try:
                await self.sink.record_recalls(
                    [(chain_id, count, fields) for chain_id, (count, fields) in batch.items()]
                )
            except DependencyUnavailable as exc:
                log.warning("recall warm-ups of %d chains not written: %s", len(batch), exc)
            finally:
                self._in_flight = {}

    async def settle(self) -> None:
        """Write every warm-up gathered so far (after a write already under way)."""
        if self._flusher is not None and not self._flusher.done() and self._sleeping:
            self._flusher.cancel()  # only while it sleeps: a write in flight is never cut short
        await self._write()
