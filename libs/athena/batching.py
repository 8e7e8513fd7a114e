"""Group commit: one batch call for the items of many concurrent callers.

`Coalescer.submit(items)` hands its items to a single drain task and waits for their results. While
one batch runs, new submissions queue up; the next batch takes everything queued (up to `max_items`),
so under load each round trip serves many callers and when idle a lone call runs at once (no timer).
A caller gets its results only after the batch holding its items finished, and the batch's exception
if it failed: an all-or-nothing batch gives each caller all-or-nothing semantics.

With a second stage (`then`), a batch is done once `then(items, results)` finished too, and the two
stages overlap: while batch k is in its second stage, batch k+1 runs its first (never more: batch
k+2 starts once k is done). Second stages run one at a time in batch order, so what they write lands
in the order the items were submitted (ingest: the log insert of the next batch overlaps the Redis
step of this one, and windows still grow in order).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Coalescer"]

T = TypeVar("T")
R = TypeVar("R")


_Groups = list[tuple[list[T], "asyncio.Future[list[R]]"]]


class Coalescer(Generic[T, R]):
    def __init__(
        self,
        run: Callable[[list[T]], Awaitable[Sequence[R]]],
        *,
        max_items: int = 1000,
        then: Callable[[list[T], list[R]], Awaitable[None]] | None = None,
    ) -> None:
        """`run` gets the items of one or more submissions, in submission order, and returns one result
        per item; `then`, when given, is the batch's second stage (module docstring)."""
        self._run = run
        self._then = then
        self.max_items = max_items
        self._queued: deque[tuple[list[T], asyncio.Future[list[R]]]] = deque()
        self._drainer: asyncio.Task[None] | None = None
        self._second: asyncio.Task[None] | None = None  # the latest batch's second stage

    async def submit(self, items: Sequence[T]) -> list[R]:
        if not items:
            return []
        future: asyncio.Future[list[R]] = asyncio.get_running_loop().create_future()
        self._queued.append((list(items), future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain(), name="coalescer drain")
        # A cancelled caller only stops waiting: its items may still be in a batch that commits.
        return await future

    async def _drain(self) -> None:
        while self._queued:
            groups = [self._queued.popleft()]
            size = len(groups[0][0])
            while self._queued and size + len(self._queued[0][0]) <= self.max_items:
                group = self._queued.popleft()
                groups.append(group)
                size += len(group[0])
            items = [item for items, _ in groups for item in items]
            try:
                results = list(await self._run(items))
            except Exception as exc:  # the batch failed as a whole: every caller in it sees why
                _fail(groups, exc)
                continue
            except BaseException:  # the drain itself was cancelled (shutdown): nobody is left waiting
                for _, future in [*groups, *self._queued]:
                    future.cancel()
                self._queued.clear()
                raise
            if self._then is None:
                _resolve(groups, results)
                continue
            previous = self._second
            self._second = asyncio.create_task(
                self._second_stage(previous, groups, items, results), name="coalescer second stage"
            )
            if previous is not None:
                await asyncio.wait({previous})  # the next batch's first stage overlaps this one's second only

    async def _second_stage(
        self, previous: asyncio.Task[None] | None, groups: _Groups, items: list[T], results: list[R]
    ) -> None:
        assert self._then is not None
        try:
            if previous is not None:
                await asyncio.wait({previous})  # second stages in batch order
            await self._then(items, results)
        except Exception as exc:
            _fail(groups, exc)
        except BaseException:
            for _, future in groups:
                future.cancel()
            raise
        else:
            _resolve(groups, results)


def _fail(groups: _Groups, exc: BaseException) -> None:
    for _, future in groups:
        if not future.done():
            future.set_exception(exc)


def _resolve(groups: _Groups, results: list[R]) -> None:
    start = 0
    for items, future in groups:
        if not future.done():
            future.set_result(results[start : start + len(items)])
        start += len(items)
