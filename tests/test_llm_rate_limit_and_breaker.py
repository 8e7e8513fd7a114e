"""The LLM layer's protection against outages and overuse: the rate limiter, the circuit breaker, and
how LLMClient applies both (against a real HTTP server and the real openai SDK).

Limiter and breaker run on a VirtualClock, so minutes of limiter time pass in milliseconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from support import VirtualClock
from support.fake_openai import FakeOpenAI, RecordedRequest, Scripted, fake_openai_server

from athena.llm import BreakerState, CircuitBreaker, LLMClient, SlidingWindowRateLimiter


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    yield from fake_openai_server()


def max_in_any_window(times: list[float], window: float) -> int:
    """Most timestamps inside one half-open interval [t, t + window)."""
    times = sorted(times)
    return max((sum(1 for u in times if t <= u < t + window) for t in times), default=0)


# --- rate limiter -----------------------------------------------------------------------------------


async def test_a_concurrent_burst_never_exceeds_the_limit_in_any_window() -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(5, 60.0, clock=clock, sleep=clock.sleep)
    granted_at: list[float] = []

    async def call() -> None:
        assert await limiter.acquire(max_wait=3600)
        granted_at.append(clock())

    await asyncio.gather(*(call() for _ in range(23)))

    assert len(granted_at) == 23
    assert max_in_any_window(granted_at, 60.0) == 5
    # And no slower than the limit allows: 23 calls at 5/min need just over four minutes.
    assert max(granted_at) - min(granted_at) == pytest.approx(240.0)


async def test_calls_under_the_limit_are_granted_without_waiting() -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(3, 60.0, clock=clock, sleep=clock.sleep)

    for _ in range(3):
        assert await limiter.acquire(max_wait=0)

    assert clock() == 1000.0
    assert limiter.waits == 0


async def test_a_caller_is_refused_at_once_when_the_next_slot_is_beyond_its_max_wait() -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(2, 60.0, clock=clock, sleep=clock.sleep)
    await limiter.acquire(max_wait=0)
    await limiter.acquire(max_wait=0)

    assert not await limiter.acquire(max_wait=59.0)

    assert clock() == 1000.0  # refused without sleeping
    assert limiter.rejections == 1
    assert not limiter.try_acquire()


async def test_a_caller_waits_for_the_oldest_grant_to_leave_the_window_and_the_wait_is_counted() -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(2, 60.0, clock=clock, sleep=clock.sleep)
    await limiter.acquire(max_wait=0)
    clock.advance(10)
    await limiter.acquire(max_wait=0)

    assert await limiter.acquire(max_wait=60.0)

    assert clock() == 1060.0  # the first grant (at 1000) has left the window
    assert limiter.waits == 1
    assert limiter.wait_seconds == pytest.approx(50.0)


async def test_waiting_callers_are_served_in_arrival_order() -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(1, 60.0, clock=clock, sleep=clock.sleep)
    order: list[int] = []

    async def call(i: int) -> None:
        await limiter.acquire(max_wait=3600)
        order.append(i)

    await asyncio.gather(*(call(i) for i in range(5)))

    assert order == [0, 1, 2, 3, 4]


async def test_a_cancelled_waiter_never_lets_the_limit_be_exceeded() -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(2, 60.0, clock=clock, sleep=clock.sleep)
    granted_at: list[float] = []

    async def call() -> None:
        await limiter.acquire(max_wait=3600)
        granted_at.append(clock())

    first = [asyncio.create_task(call()) for _ in range(3)]
    await asyncio.sleep(0)
    first[2].cancel()  # the third was waiting for a slot
    await asyncio.gather(*first, return_exceptions=True)
    await asyncio.gather(*(call() for _ in range(4)))

    assert max_in_any_window(granted_at, 60.0) <= 2


# --- circuit breaker ----------------------------------------------------------------------------------


def test_breaker_opens_after_the_configured_number_of_consecutive_failures() -> None:
    breaker = CircuitBreaker(3, 30.0, clock=VirtualClock())
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.allow()

    breaker.record_failure()

    assert breaker.state is BreakerState.OPEN
    assert not breaker.allow()
    assert breaker.opens == 1


def test_a_success_resets_the_consecutive_failure_count() -> None:
    breaker = CircuitBreaker(3, 30.0, clock=VirtualClock())
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    breaker.record_failure()

    assert breaker.state is BreakerState.CLOSED


def test_breaker_half_opens_after_the_reset_time_and_allows_exactly_one_trial() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    breaker.record_failure()
    clock.advance(29.9)
    assert not breaker.allow()

    clock.advance(0.1)

    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.allow()
    assert not breaker.allow()


def test_a_successful_trial_closes_the_breaker() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    breaker.record_failure()
    clock.advance(30)
    assert breaker.allow()

    breaker.record_success()

    assert breaker.state is BreakerState.CLOSED
    assert breaker.allow() and breaker.allow()


def test_a_failed_trial_reopens_the_breaker_for_another_full_reset_period() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    breaker.record_failure()
    clock.advance(30)
    assert breaker.allow()

    breaker.record_failure()

    assert breaker.state is BreakerState.OPEN
    clock.advance(29)
    assert not breaker.allow()
    clock.advance(1)
    assert breaker.allow()
    assert breaker.opens == 2


def test_a_released_trial_lets_the_next_caller_probe() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    breaker.record_failure()
    clock.advance(30)
    assert breaker.allow()

    breaker.release()

    assert breaker.allow()


def test_a_trial_whose_outcome_never_arrives_does_not_block_the_breaker_forever() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    breaker.record_failure()
    clock.advance(30)
    assert breaker.allow()

    clock.advance(30)

    assert breaker.allow()


# --- LLMClient: breaker --------------------------------------------------------------------------------


async def test_an_open_breaker_answers_none_immediately_without_any_network_call(server: FakeOpenAI) -> None:
    breaker = CircuitBreaker(3, 30.0, clock=VirtualClock())
    server.error(500, times=3)
    async with LLMClient(base_url=server.base_url, model="m", breaker=breaker) as client:
        for _ in range(3):
            assert await client.complete("s", "u") is None
        assert client.breaker_state is BreakerState.OPEN

        started = time.monotonic()
        results = [await client.complete("s", "u") for _ in range(20)]

        assert results == [None] * 20
        assert time.monotonic() - started < 0.5
        assert len(server.chat_requests) == 3
        assert client.stats.skipped["breaker_open"] == 20
        assert client.stats.errors["http_5xx"] == 3


async def test_after_the_reset_time_one_trial_call_goes_out_and_its_success_closes_the_breaker(
    server: FakeOpenAI,
) -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(2, 30.0, clock=clock)
    server.error(500, times=2)
    async with LLMClient(base_url=server.base_url, model="m", breaker=breaker) as client:
        await client.complete("s", "u")
        await client.complete("s", "u")
        assert await client.complete("s", "u") is None
        assert len(server.chat_requests) == 2

        clock.advance(30)
        server.reply("back", times=2)

        first = await client.complete("s", "u")
        assert first is not None and first.text == "back"
        assert client.breaker_state is BreakerState.CLOSED
        second = await client.complete("s", "u")
        assert second is not None
        assert len(server.chat_requests) == 4


async def test_a_failed_trial_reopens_the_breaker_and_no_further_calls_go_out(server: FakeOpenAI) -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    server.error(503, times=2)
    async with LLMClient(base_url=server.base_url, model="m", breaker=breaker) as client:
        await client.complete("s", "u")
        clock.advance(30)

        assert await client.complete("s", "u") is None  # the trial, failing
        for _ in range(5):
            assert await client.complete("s", "u") is None

        assert client.breaker_state is BreakerState.OPEN
        assert len(server.chat_requests) == 2
        assert breaker.opens == 2


async def test_concurrent_callers_while_half_open_send_a_single_trial(server: FakeOpenAI) -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    server.error(500)
    server.reply("ok", delay=0.2)
    async with LLMClient(base_url=server.base_url, model="m", breaker=breaker) as client:
        await client.complete("s", "u")
        clock.advance(30)

        results = await asyncio.gather(*(client.complete("s", "u") for _ in range(5)))

        assert sum(r is not None for r in results) == 1
        assert len(server.chat_requests) == 2
        assert client.stats.skipped["breaker_open"] == 4


async def test_a_cancelled_trial_gives_the_trial_back(server: FakeOpenAI) -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    server.error(500)
    server.reply("slow", delay=5.0)
    server.reply("ok")
    async with LLMClient(base_url=server.base_url, model="m", breaker=breaker) as client:
        await client.complete("s", "u")
        clock.advance(30)
        trial = asyncio.create_task(client.complete("s", "u"))
        await server.wait_for_requests(2)
        trial.cancel()
        with pytest.raises(asyncio.CancelledError):
            await trial

        result = await client.complete("s", "u")

        assert result is not None and result.text == "ok"
        assert client.breaker_state is BreakerState.CLOSED


async def test_timeouts_and_429s_count_as_breaker_failures(server: FakeOpenAI) -> None:
    breaker = CircuitBreaker(3, 30.0, clock=VirtualClock())
    server.reply("late", delay=2.0)
    server.error(429)
    server.reply("late", delay=2.0)
    async with LLMClient(base_url=server.base_url, model="m", breaker=breaker, timeout=0.2) as client:
        for _ in range(3):
            assert await client.complete("s", "u") is None

        assert client.breaker_state is BreakerState.OPEN
        assert client.stats.errors == {"timeout": 2, "http_429": 1}


async def test_unusable_answers_do_not_open_the_breaker(server: FakeOpenAI) -> None:
    breaker = CircuitBreaker(2, 30.0, clock=VirtualClock())
    server.reply("¯\\_(ツ)_/¯", times=4)
    async with LLMClient(base_url=server.base_url, model="m", breaker=breaker) as client:
        for _ in range(4):
            assert await client.complete_json("s", "u") is None

        assert client.breaker_state is BreakerState.CLOSED
        assert client.stats.malformed["analysis"] == 4


# --- LLMClient: rate limit -------------------------------------------------------------------------------


async def test_calls_beyond_the_rate_limit_are_skipped_without_a_request_when_no_slot_comes_in_time(
    server: FakeOpenAI,
) -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(3, 60.0, clock=clock, sleep=clock.sleep)
    server.reply("ok", times=3)
    async with LLMClient(base_url=server.base_url, model="m", limiter=limiter, max_wait=5.0) as client:
        results = [await client.complete("s", "u") for _ in range(5)]

        assert [r is not None for r in results] == [True, True, True, False, False]
        assert len(server.chat_requests) == 3
        assert client.stats.skipped["rate_limited"] == 2
        assert client.snapshot()["rate_limit_rejections"] == 2


async def test_calls_wait_for_a_rate_limit_slot_and_never_exceed_the_limit_per_window(server: FakeOpenAI) -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(2, 60.0, clock=clock, sleep=clock.sleep)
    sent_at: list[float] = []

    def answer_and_note_the_virtual_time(request: RecordedRequest) -> Scripted:
        sent_at.append(clock())
        return Scripted(content="ok")

    server.push(*[answer_and_note_the_virtual_time] * 7)
    async with LLMClient(base_url=server.base_url, model="m", limiter=limiter, max_wait=600.0) as client:
        # One at a time, so the virtual time seen by the server is the time each request went out.
        results = [await client.complete("s", "u") for _ in range(7)]

        assert all(r is not None for r in results)
        assert len(server.chat_requests) == 7
        assert max_in_any_window(sent_at, 60.0) == 2
        # Pairs go out together: the 3rd, 5th and 7th call each waited for a window to pass.
        assert client.snapshot()["rate_limit_waits"] == 3
        assert sent_at == [1000.0, 1000.0, 1060.0, 1060.0, 1120.0, 1120.0, 1180.0]


async def test_an_open_breaker_does_not_consume_or_wait_for_rate_limit_slots(server: FakeOpenAI) -> None:
    clock = VirtualClock()
    limiter = SlidingWindowRateLimiter(2, 60.0, clock=clock, sleep=clock.sleep)
    breaker = CircuitBreaker(1, 30.0, clock=clock)
    server.error(500)
    async with LLMClient(base_url=server.base_url, model="m", limiter=limiter, breaker=breaker) as client:
        await client.complete("s", "u")
        for _ in range(10):
            assert await client.complete("s", "u") is None

        assert limiter.grants == 1
        assert limiter.waits == 0
        assert clock() == 1000.0
