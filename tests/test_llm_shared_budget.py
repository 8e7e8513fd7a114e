"""The LLM rate limit and circuit breaker shared through Redis (athena.llm._shared), against a real Redis.

Each "process" is its own limiter or breaker object with its own Redis connection. Nothing here
asserts a duration: limiter time is a VirtualClock advanced by hand (the script then takes its time
from that clock), and the breaker's reset is stood in for by deleting its OPEN key (what its expiry
does).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis
from support import VirtualClock
from support.fake_openai import FakeOpenAI, fake_openai_server

from athena import keys
from athena.config import load_settings
from athena.llm import (
    BreakerState,
    LLMClient,
    LLMOutcome,
    SharedCircuitBreaker,
    SharedRateLimiter,
    TenantRateLimiter,
    connect_budget_redis,
    make_llm,
)
from athena.local import RedisServer
from athena.metrics import instrument_llm


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    yield from fake_openai_server()


@pytest.fixture
async def processes(redis: Redis, redis_server: RedisServer) -> AsyncIterator[tuple[Redis, Redis]]:
    """Two Redis connections to the (flushed) test Redis: one per simulated process."""
    a, b = connect_budget_redis(redis_server.url), connect_budget_redis(redis_server.url)
    yield a, b
    await a.aclose()
    await b.aclose()


def max_in_any_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max((sum(1 for u in times if t <= u < t + window) for t in times), default=0)


# --- rate limit ------------------------------------------------------------------------------------------


async def test_two_processes_sharing_the_total_budget_never_exceed_it_together(processes: tuple[Redis, Redis]) -> None:
    clock = VirtualClock()
    a, b = (SharedRateLimiter(r, 5, 100, 60.0, clock=clock, sleep=clock.sleep) for r in processes)
    granted: list[float] = []

    # Both processes ask for a slot every 1.3 s of limiter time for about six minutes, taking only free ones.
    for i in range(280):
        if await (a if i % 2 else b).acquire(0, tenant_id=f"t{i % 7}"):
            granted.append(clock())
        clock.advance(1.3)

    assert max_in_any_window(granted, 60.0) == 5  # each alone would have let 5 a minute through
    assert len(granted) >= 5 * 6  # and the budget is used: a full 5 in each of the ~six minutes
    assert a.grants + b.grants == len(granted)
    assert a.rejected_by["total"] + b.rejected_by["total"] == 280 - len(granted)
    assert a.fallbacks == b.fallbacks == 0


async def test_a_concurrent_burst_from_two_processes_gets_exactly_the_budget(processes: tuple[Redis, Redis]) -> None:
    # Server time this once: the script alone keeps the count, whatever the interleaving.
    a, b = (SharedRateLimiter(r, 7, 100, 60.0) for r in processes)

    results = await asyncio.gather(*((a, b)[i % 2].acquire(0, tenant_id="acme") for i in range(40)))

    assert sum(results) == 7
    assert a.rejections + b.rejections == 33


async def test_a_noisy_tenant_is_refused_while_other_tenants_still_get_slots(processes: tuple[Redis, Redis]) -> None:
    clock = VirtualClock()
    a, b = (SharedRateLimiter(r, 10, 3, 60.0, clock=clock, sleep=clock.sleep) for r in processes)

    noisy = [await (a, b)[i % 2].acquire(0, tenant_id="noisy") for i in range(12)]
    quiet = [await b.acquire(0, tenant_id="quiet") for _ in range(3)]

    assert noisy.count(True) == 3  # its own budget, over both processes
    assert quiet == [True, True, True]
    assert a.rejected_by["tenant"] + b.rejected_by["tenant"] == 9
    # The total budget (10) still binds across tenants: 6 taken, 4 left for everyone else.
    more = [await a.acquire(0, tenant_id=f"other{i}") for i in range(6)]
    assert more == [True, True, True, True, False, False]
    assert a.rejected_by["total"] == 2


async def test_a_caller_waits_for_the_earliest_slot_of_the_shared_budget_else_is_refused_at_once(
    processes: tuple[Redis, Redis],
) -> None:
    clock = VirtualClock()
    a, b = (SharedRateLimiter(r, 2, 100, 60.0, clock=clock, sleep=clock.sleep) for r in processes)
    assert await a.acquire(0, tenant_id="acme")
    clock.advance(10)
    assert await a.acquire(0, tenant_id="acme")

    started = clock()
    assert not await b.acquire(49.0, tenant_id="other")  # the next slot is 50 s away
    assert clock() == started  # refused without sleeping
    assert await b.acquire(50.0, tenant_id="other")  # the first grant leaves the window at +50 s

    assert clock() == started + 50.0
    assert (b.waits, b.waited_for["total"], b.rejected_by["total"]) == (1, 1, 1)


async def test_the_tenant_budget_also_makes_callers_wait_and_says_so(processes: tuple[Redis, Redis]) -> None:
    clock = VirtualClock()
    a = SharedRateLimiter(processes[0], 100, 1, 60.0, clock=clock, sleep=clock.sleep)
    assert await a.acquire(0, tenant_id="acme")

    assert await a.acquire(60.0, tenant_id="acme")

    assert a.waited_for == {"tenant": 1}


async def test_the_budget_keys_expire_and_trimmed_slots_leave_the_logs(
    redis: Redis, processes: tuple[Redis, Redis]
) -> None:
    clock = VirtualClock()
    a = SharedRateLimiter(processes[0], 5, 3, 60.0, clock=clock, sleep=clock.sleep)
    await a.acquire(0, tenant_id="acme")
    clock.advance(61)
    await a.acquire(0, tenant_id="acme")

    for key in (keys.LLM_RATE_TOTAL, keys.llm_rate_tenant_key("acme")):
        assert await redis.zcard(key) == 1  # the first slot left the window and the log
        assert 0 < await redis.pttl(key) <= 60_000


# --- breaker -------------------------------------------------------------------------------------------


def breakers(processes: tuple[Redis, Redis], failures: int = 3) -> tuple[SharedCircuitBreaker, SharedCircuitBreaker]:
    a, b = (SharedCircuitBreaker(r, failures, 30.0) for r in processes)
    return a, b


async def reset_elapses(redis: Redis) -> None:
    """What LLM_BREAKER_RESET_SECONDS passing does: the OPEN key expires."""
    await redis.delete(keys.LLM_BREAKER_OPEN)


async def test_failures_in_two_processes_add_up_and_the_open_breaker_refuses_calls_in_both(
    redis: Redis, processes: tuple[Redis, Redis]
) -> None:
    a, b = breakers(processes)
    await a.arecord_failure()
    await a.arecord_failure()
    assert await b.acheck()  # two failures of three: still closed
    await b.arecord_failure()

    assert (a.opens, b.opens) == (0, 1)
    for breaker in (a, b):
        assert not await breaker.acheck()
        assert await breaker.aadmit() is None
        assert breaker.state is BreakerState.OPEN
    assert 0 < await redis.pttl(keys.LLM_BREAKER_OPEN) <= 30_000
    assert await redis.pttl(keys.LLM_BREAKER_TRIPPED) > 30_000


async def test_a_success_in_any_process_resets_the_consecutive_failures(processes: tuple[Redis, Redis]) -> None:
    a, b = breakers(processes)
    await a.arecord_failure()
    await a.arecord_failure()
    await b.arecord_success()
    await a.arecord_failure()
    await a.arecord_failure()

    assert await b.acheck()
    assert b.consecutive_failures == 2


async def test_after_the_reset_only_one_trial_goes_out_across_processes_and_its_success_closes_for_all(
    redis: Redis, processes: tuple[Redis, Redis]
) -> None:
    a, b = breakers(processes, failures=1)
    await a.arecord_failure()
    await reset_elapses(redis)

    admitted = await asyncio.gather(*(x.aadmit() for x in (a, b, a, b, a, b)))

    assert admitted.count(BreakerState.HALF_OPEN) == 1
    assert admitted.count(None) == 5
    assert 0 < await redis.pttl(keys.LLM_BREAKER_TRIAL) <= 30_000  # a lost trial frees itself
    holder = (a, b)[admitted.index(BreakerState.HALF_OPEN) % 2]
    await holder.arecord_success()
    for breaker in (a, b):
        assert await breaker.aadmit() is BreakerState.CLOSED
    assert await redis.exists(keys.LLM_BREAKER_TRIPPED, keys.LLM_BREAKER_TRIAL) == 0


async def test_a_failed_trial_reopens_the_breaker_for_every_process(
    redis: Redis, processes: tuple[Redis, Redis]
) -> None:
    a, b = breakers(processes, failures=1)
    await a.arecord_failure()
    await reset_elapses(redis)
    assert await b.aadmit() is BreakerState.HALF_OPEN

    await b.arecord_failure()

    assert not await a.acheck()
    assert await a.aadmit() is None
    assert b.opens == 1 and a.opens == 1


async def test_a_released_trial_lets_another_process_probe(redis: Redis, processes: tuple[Redis, Redis]) -> None:
    a, b = breakers(processes, failures=1)
    await a.arecord_failure()
    await reset_elapses(redis)
    assert await a.aadmit() is BreakerState.HALF_OPEN
    assert await b.aadmit() is None

    await a.arelease()

    assert await b.aadmit() is BreakerState.HALF_OPEN


async def test_a_late_failure_does_not_extend_an_open_breaker(redis: Redis, processes: tuple[Redis, Redis]) -> None:
    a, b = breakers(processes, failures=1)
    await a.arecord_failure()
    await redis.pexpire(keys.LLM_BREAKER_OPEN, 5_000)

    await b.arecord_failure()

    assert await redis.pttl(keys.LLM_BREAKER_OPEN) <= 5_000
    assert b.opens == 0


# --- through LLMClient ------------------------------------------------------------------------------------


def shared_client(
    server: FakeOpenAI, redis: Redis, *, failures: int = 2, limit: int = 60, tenant: int = 20
) -> LLMClient:
    return LLMClient(
        base_url=server.base_url,
        model="m",
        timeout=2.0,
        limiter=SharedRateLimiter(redis, limit, tenant, 60.0),
        breaker=SharedCircuitBreaker(redis, failures, 30.0),
    )


async def test_failures_seen_by_one_client_open_the_breaker_for_another_without_a_request(
    server: FakeOpenAI, processes: tuple[Redis, Redis]
) -> None:
    server.error(500, times=2)
    async with shared_client(server, processes[0]) as cognition, shared_client(server, processes[1]) as formation:
        assert await cognition.complete("s", "u") is None
        assert await formation.complete_json("s", "u", tenant_id="acme") is None
        sent = len(server.chat_requests)

        assert await cognition.complete("s", "u", tenant_id="acme") is None

        assert len(server.chat_requests) == sent == 2
        assert cognition.stats.skipped == {LLMOutcome.BREAKER_OPEN.value: 1}
        assert cognition.breaker_state is BreakerState.OPEN


async def test_a_tenant_over_its_budget_is_skipped_by_the_client_while_another_tenant_is_served(
    server: FakeOpenAI, processes: tuple[Redis, Redis]
) -> None:
    server.reply("true", times=4)
    async with shared_client(server, processes[0], tenant=2) as a, shared_client(server, processes[1], tenant=2) as b:
        outcomes = [await c.complete("s", "u", tenant_id="noisy", max_wait=0) for c in (a, b, a)]
        quiet = await b.complete("s", "u", tenant_id="quiet", max_wait=0)

    assert [o is not None for o in outcomes] == [True, True, False]
    assert quiet is not None
    assert len(server.chat_requests) == 3
    assert a.stats.skipped == {LLMOutcome.RATE_LIMITED.value: 1}


# --- Redis unreachable: the per-process fallback ------------------------------------------------------


async def test_with_redis_down_the_limiter_and_breaker_fall_back_to_this_process_alone(
    own_redis_server: RedisServer,
) -> None:
    budget = connect_budget_redis(own_redis_server.url)
    clock = VirtualClock()
    limiter = SharedRateLimiter(budget, 3, 2, 60.0, clock=clock, sleep=clock.sleep, retry_seconds=0.0)
    breaker = SharedCircuitBreaker(budget, 2, 30.0, retry_seconds=0.0)
    own_redis_server.stop()
    try:
        # Per-process budgets, same limits: 2 for the tenant, 3 in total.
        assert [await limiter.acquire(0, tenant_id="acme") for _ in range(3)] == [True, True, False]
        assert await limiter.acquire(0, tenant_id="other")
        assert not await limiter.acquire(0, tenant_id="third")
        assert limiter.fallback.rejected_by == {"tenant": 1, "total": 1}
        assert limiter.fallbacks == 5 and limiter.grants == 3

        assert await breaker.acheck()
        await breaker.arecord_failure()
        await breaker.arecord_failure()
        assert not await breaker.acheck()  # the local breaker opened
        assert await breaker.aadmit() is None
        assert breaker.state is BreakerState.OPEN and breaker.local.opens == 1
        assert breaker.fallbacks == 5
    finally:
        await budget.aclose()


async def test_with_redis_down_llm_calls_still_go_out_and_never_raise(
    server: FakeOpenAI, own_redis_server: RedisServer
) -> None:
    budget = connect_budget_redis(own_redis_server.url)
    own_redis_server.stop()
    server.reply("true", times=2)
    llm = make_llm(load_settings(llm_base_url=server.base_url, llm_rate_limit_per_minute=5), redis=budget)
    assert llm is not None
    try:
        async with llm:
            first = await llm.complete("s", "u", tenant_id="acme")
            second = await llm.complete_json("s", "u", tenant_id="acme")  # "true" is no object: None
        assert first is not None and first.text == "true"
        assert second is None and llm.stats.errors == {}
        assert llm.stats.malformed == {"analysis": 1}
    finally:
        await budget.aclose()


async def test_the_budget_is_shared_again_once_redis_is_back(own_redis_server: RedisServer) -> None:
    budget = connect_budget_redis(own_redis_server.url)
    limiter = SharedRateLimiter(budget, 10, 10, 60.0, retry_seconds=0.0)
    try:
        own_redis_server.stop()
        assert await limiter.acquire(0, tenant_id="acme")
        assert limiter.fallbacks == 1
        own_redis_server.start()

        assert await limiter.acquire(0, tenant_id="acme")

        assert limiter.fallbacks == 1
        assert await budget.zcard(keys.LLM_RATE_TOTAL) == 1
    finally:
        await budget.aclose()


# --- configuration, metrics, the tenant on the call paths ---------------------------------------------


async def test_make_llm_with_redis_shares_the_budget_with_the_configured_limits(
    server: FakeOpenAI, processes: tuple[Redis, Redis]
) -> None:
    settings = load_settings(
        llm_base_url=server.base_url,
        llm_rate_limit_per_minute=30,
        llm_tenant_rate_limit_per_minute=4,
        llm_breaker_failures=6,
        llm_breaker_reset_seconds=12.0,
    )
    assert load_settings().llm_tenant_rate_limit_per_minute == 20
    llm = make_llm(settings, redis=processes[0])
    assert llm is not None
    async with llm:
        assert isinstance(llm.limiter, SharedRateLimiter)
        assert (llm.limiter.limit, llm.limiter.tenant_limit) == (30, 4)
        assert isinstance(llm.limiter.fallback, TenantRateLimiter)
        assert isinstance(llm.breaker, SharedCircuitBreaker)
        assert (llm.breaker.failure_threshold, llm.breaker.reset_seconds) == (6, 12.0)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_metrics_count_grants_waits_rejections_by_budget_opens_and_fallbacks(
    server: FakeOpenAI, processes: tuple[Redis, Redis], own_redis_server: RedisServer
) -> None:
    before = {
        "granted": sample("memos_llm_rate_limit_grants_total", store="redis"),
        "tenant": sample("memos_llm_rate_limit_rejections_total", budget="tenant"),
        "opens": sample("memos_llm_breaker_opens_total"),
        "fallback": sample("memos_llm_budget_fallbacks_total", part="limiter"),
        "local": sample("memos_llm_rate_limit_grants_total", store="local"),
    }
    server.error(500)
    llm = instrument_llm(shared_client(server, processes[0], failures=1, tenant=1))
    assert llm is not None
    async with llm:
        await llm.complete("s", "u", tenant_id="acme")  # granted, fails: opens the breaker
        await processes[0].delete(keys.LLM_BREAKER_OPEN, keys.LLM_BREAKER_TRIPPED)
        await llm.complete("s", "u", tenant_id="acme", max_wait=0)  # refused by acme's budget

    down = connect_budget_redis(own_redis_server.url)
    own_redis_server.stop()
    limiter = SharedRateLimiter(down, 5, 5, 60.0)
    client: Any = LLMClient(base_url=server.base_url, model="m", limiter=limiter)
    instrument_llm(client)
    assert await limiter.acquire(0, tenant_id="acme")
    await down.aclose()

    assert sample("memos_llm_rate_limit_grants_total", store="redis") == before["granted"] + 1
    assert sample("memos_llm_rate_limit_rejections_total", budget="tenant") == before["tenant"] + 1
    assert sample("memos_llm_breaker_opens_total") == before["opens"] + 1
    assert sample("memos_llm_budget_fallbacks_total", part="limiter") == before["fallback"] + 1
    assert sample("memos_llm_rate_limit_grants_total", store="local") == before["local"] + 1
    await client.aclose()


async def test_the_tenant_reaches_the_llm_from_the_gray_zone_arbiter_and_from_topic_analysis() -> None:
    from athena.llm import LLMArbiter
    from athena_client.memory.v1 import memory_pb2
    from athena_formation.forming.analysis import analyze

    class Recorder:
        def __init__(self) -> None:
            self.tenants: list[str | None] = []

        async def complete(self, *_: object, tenant_id: str | None = None, **__: object) -> None:
            self.tenants.append(tenant_id)

        async def complete_json(self, *_: object, tenant_id: str | None = None, **__: object) -> None:
            self.tenants.append(tenant_id)

        def record_malformed(self, *_: object) -> None:
            pass

    recorder: Any = Recorder()
    assert await LLMArbiter(recorder).same_topic("a", "b", tenant_id="acme") is None
    scope = memory_pb2.Scope(tenant_id="globex", user_id="u", agent_id="a")
    events = [
        memory_pb2.Event(
            scope=scope,
            role=memory_pb2.ROLE_USER,
            type=memory_pb2.EVENT_TYPE_MESSAGE,
            content="my invoice shows the wrong VAT number",
        )
    ]
    analysis = await analyze(events, llm=recorder, tenant_id="globex")

    assert analysis.path == "heuristic"
    assert recorder.tenants == ["acme", "globex"]


async def test_a_gray_zone_decision_asks_the_arbiter_with_the_tasks_tenant() -> None:
    from collections.abc import Mapping, Sequence

    import numpy as np

    from athena_cognition.detector import Thresholds, Turn, decide

    class GrayScorer:
        name = "gray"

        def needed_indices(self, window: Sequence[Turn], new_index: int) -> list[int]:
            return []

        def score(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float:
            return 0.65  # between low and high: the arbiter decides

    class Embedder:
        dim = 4

        async def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.zeros((len(texts), 4), dtype=np.float32)

    class TenantArbiter:
        def __init__(self) -> None:
            self.tenants: list[str | None] = []

        async def same_topic(self, previous: str, current: str, *, tenant_id: str | None = None) -> bool | None:
            self.tenants.append(tenant_id)
            return True

    arbiter = TenantArbiter()
    window = [Turn(role="user", type="message", content="a"), Turn(role="user", type="message", content="b")]
    common: dict[str, Any] = {
        "new_index": 1,
        "scorer": GrayScorer(),
        "embedder": Embedder(),
        "thresholds": Thresholds(high=0.8, low=0.5),
        "arbiter": arbiter,
        "max_events_before_flush": 20,
    }
    assert (await decide(window, **common, tenant_id="acme")).path == "llm_true"
    await decide(window, **common)  # no tenant (evaluation, replay): the arbiter is asked as before

    assert arbiter.tenants == ["acme", None]
