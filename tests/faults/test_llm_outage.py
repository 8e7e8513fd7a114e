"""The LLM endpoint fails (500s, 429s with Retry-After, timeouts) for the whole run.

Both LLM users (cognition's gray-zone arbiter, formation's topic analysis) must stay within the rate
limit and the circuit breaker, never loop, and fall back to their heuristics so chains still form.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable

import pytest
from support.fake_openai import FakeOpenAI, RecordedRequest, Scripted
from support.pipeline_ledger import StackFactory, conversation, drive, patient_options, read_ledger, wait_decided

pytestmark = pytest.mark.slow

TENANT = "faults-llm"
USERS = 3
LLM_TIMEOUT = 0.5
LLM_PROCESSES = 2  # cognition and formation, each with its own limiter and breaker


def _outage() -> Callable[[RecordedRequest], Scripted]:
    """500, 429 with Retry-After, and answers slower than the timeout, in turn."""
    kinds = itertools.cycle(
        [
            Scripted(status=500, message="upstream exploded"),
            Scripted(status=429, headers={"Retry-After": "1"}, message="slow down"),
            Scripted(content="true", delay=LLM_TIMEOUT * 4),
        ]
    )
    lock = threading.Lock()

    def answer(_: RecordedRequest) -> Scripted:
        with lock:
            return next(kinds)

    return answer


def _max_in_any_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


@pytest.mark.parametrize(
    ("rate_limit", "breaker_failures", "breaker_reset"),
    [(8, 3, 4.0), (4, 1000, 60.0)],
    ids=["breaker-binds", "rate-limit-binds"],
)
async def test_llm_outage_stays_within_rate_limit_and_breaker_and_chains_form_through_the_fallback(
    fault_stack: StackFactory, fake_openai: FakeOpenAI, rate_limit: int, breaker_failures: int, breaker_reset: float
) -> None:
    fake_openai.default = _outage()  # type: ignore[assignment]
    env = {
        "LLM_BASE_URL": fake_openai.base_url,
        "LLM_API_KEY": "test",
        "LLM_RATE_LIMIT_PER_MINUTE": str(rate_limit),
        "LLM_BREAKER_FAILURES": str(breaker_failures),
        "LLM_BREAKER_RESET_SECONDS": str(breaker_reset),
        "LLM_TIMEOUT_SECONDS": str(LLM_TIMEOUT),
        "TOPIC_ANALYSIS_LLM_TIMEOUT": str(LLM_TIMEOUT),
        # Every message after a user's first lands in the gray zone, so every decision wants the LLM.
        "CHAIN_SIM_HIGH": "0.99",
        "CHAIN_SIM_LOW": "0.01",
    }
    with fault_stack(**env) as stack:
        talks = {f"user{i}": conversation(user_index=i, topics=4) for i in range(USERS)}
        acked, errors = await drive(stack, tenant_id=TENANT, conversations=talks, pace=0.1, options=patient_options())
        await wait_decided(f"redis://127.0.0.1:{stack.ports.redis}/0", acked, timeout=120)
        ledger = await read_ledger(stack, tenant_id=TENANT, acked=acked)

    calls = fake_openai.chat_requests
    times = [r.received_at for r in calls]
    span = (max(times) - min(times)) if times else 0.0
    wanted = sum(1 for r in ledger.results.values() if r.get("path") not in ("first_message", None)) + len(
        ledger.outcomes
    )
    per_minute = _max_in_any_window(times, 60.0)
    # Per process: `breaker_failures` failures open the breaker; then one trial per `breaker_reset` seconds.
    breaker_bound = LLM_PROCESSES * (breaker_failures + math.ceil(span / breaker_reset) + 1)
    print(
        f"\ninjected: every chat completion fails in turn with 500, 429 (Retry-After 1 s), or a {LLM_TIMEOUT * 4}s answer past the {LLM_TIMEOUT}s timeout"
    )
    print(
        f"counted: {len(calls)} chat requests received over {span:.1f}s for {wanted} decisions/analyses that wanted the LLM; "
        f"most in any 60 s: {per_minute} (limit {rate_limit} per process x {LLM_PROCESSES}); most in any 1 s: {_max_in_any_window(times, 1.0)}; "
        f"breaker bound {breaker_bound}"
    )
    print("counted:", ledger.summary())
    chains_by_path = {c.get("analysis_path") for c in ledger.chains}
    print(f"counted: chain analysis paths {chains_by_path}")
    assert not errors
    assert calls, "the LLM was never called: the test exercised nothing"
    assert per_minute <= rate_limit * LLM_PROCESSES
    assert len(calls) <= breaker_bound
    assert len(calls) < wanted, "every decision called the LLM: no breaker"
    assert ledger.problems() == []
    assert ledger.chains and chains_by_path == {"heuristic"}
    assert any(r.get("path") == "llm_fallback" for r in ledger.results.values())
