"""Athena's access to an OpenAI-compatible LLM: gray-zone topic arbitration and JSON analysis.

Everything here answers None when the LLM is unavailable (not configured, breaker open, rate limit,
timeout, error, unusable answer); callers then apply their documented fallback. Nothing raises for LLM
trouble, and nothing retries a failure on its own.

    llm = make_llm(settings)                      # None when LLM_BASE_URL is empty
    arbiter = LLMArbiter(llm) if llm else None
    verdict = await arbiter.same_topic(prev, cur)  # True / False / None
    data = await llm.complete_json(system, user, schema_hint={...})  # dict / None; validate it

    llm = make_llm(settings, redis=redis)         # rate limit (per tenant, in total) and breaker shared
    verdict = await arbiter.same_topic(prev, cur, tenant_id="acme")  # charged to acme's budget too
"""

from athena.llm._arbiter import LLMArbiter
from athena.llm._breaker import Breaker, BreakerState, CircuitBreaker
from athena.llm._client import LLMClient, LLMOutcome, LLMResult, LLMStats, Observer, make_llm
from athena.llm._parse import extract_json_object, parse_bool_answer
from athena.llm._rate_limit import BudgetObserver, RateLimiter, SlidingWindowRateLimiter, TenantRateLimiter
from athena.llm._shared import SharedCircuitBreaker, SharedRateLimiter, connect_budget_redis

__all__ = [
    "Breaker",
    "BreakerState",
    "BudgetObserver",
    "CircuitBreaker",
    "LLMArbiter",
    "LLMClient",
    "LLMOutcome",
    "LLMResult",
    "LLMStats",
    "Observer",
    "RateLimiter",
    "SharedCircuitBreaker",
    "SharedRateLimiter",
    "SlidingWindowRateLimiter",
    "TenantRateLimiter",
    "connect_budget_redis",
    "extract_json_object",
    "make_llm",
    "parse_bool_answer",
]
