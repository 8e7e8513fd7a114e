"""Coalescer (group commit): concurrent submissions share batches, each caller gets its own results,
and a failed batch fails exactly the callers whose items it held."""

from __future__ import annotations

import asyncio

import pytest

from athena.batching import Coalescer


async def test_concurrent_submissions_share_batches_and_each_gets_its_own_results_in_order() -> None:
    batches: list[list[int]] = []

    async def double(items: list[int]) -> list[int]:
        batches.append(items)
        await asyncio.sleep(0.01)  # a round trip: later submissions queue meanwhile
        return [2 * i for i in items]

    coalescer: Coalescer[int, int] = Coalescer(double)
    results = await asyncio.gather(*(coalescer.submit([k, k + 100]) for k in range(20)))

    assert results == [[2 * k, 2 * (k + 100)] for k in range(20)]
    assert len(batches) < 20, "every submission ran alone"
    assert sorted(i for b in batches for i in b) == sorted(i for k in range(20) for i in (k, k + 100))


async def test_a_batch_never_exceeds_max_items_unless_one_submission_does() -> None:
    sizes: list[int] = []

    async def record(items: list[int]) -> list[None]:
        sizes.append(len(items))
        await asyncio.sleep(0.01)
        return [None] * len(items)

    coalescer: Coalescer[int, None] = Coalescer(record, max_items=5)
    await asyncio.gather(*(coalescer.submit([1, 2]) for _ in range(6)), coalescer.submit(list(range(9))))

    assert max(sizes) == 9 and all(s <= 5 for s in sizes if s != 9)


async def test_a_failed_batch_fails_its_callers_and_the_next_batch_still_runs() -> None:
    calls = 0

    async def flaky(items: list[str]) -> list[str]:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        if calls == 1:
            raise ConnectionError("store down")
        return [s.upper() for s in items]

    coalescer: Coalescer[str, str] = Coalescer(flaky)
    first = asyncio.create_task(coalescer.submit(["a"]))
    await asyncio.sleep(0)  # the first batch starts with "a" alone
    later = asyncio.create_task(coalescer.submit(["b"]))

    with pytest.raises(ConnectionError):
        await first
    assert await later == ["B"]


async def test_with_a_second_stage_the_next_batch_starts_while_this_one_finishes_and_second_stages_keep_their_order() -> (
    None
):
    log: list[str] = []
    release = asyncio.Event()

    async def first(items: list[int]) -> list[int]:
        log.append(f"first {items}")
        return [i * 10 for i in items]

    async def second(items: list[int], results: list[int]) -> None:
        log.append(f"second {items} begins")
        if items == [1]:
            await release.wait()  # batch [1] holds its second stage until batch [2] ran its first
        log.append(f"second {items} ends")

    c: Coalescer[int, int] = Coalescer(first, then=second)
    one = asyncio.create_task(c.submit([1]))
    await asyncio.sleep(0.01)
    two = asyncio.create_task(c.submit([2]))
    await asyncio.sleep(0.01)
    assert log == ["first [1]", "second [1] begins", "first [2]"]
    assert not one.done() and not two.done()  # a caller is answered once its batch's second stage is done

    release.set()
    assert await one == [10] and await two == [20]
    assert log[3:] == ["second [1] ends", "second [2] begins", "second [2] ends"]


async def test_a_failed_second_stage_fails_only_the_callers_of_its_batch() -> None:
    async def first(items: list[int]) -> list[int]:
        return items

    async def second(items: list[int], results: list[int]) -> None:
        if 13 in items:
            raise RuntimeError("unlucky batch")

    c: Coalescer[int, int] = Coalescer(first, then=second)
    with pytest.raises(RuntimeError):
        await c.submit([13])
    assert await c.submit([7]) == [7]
