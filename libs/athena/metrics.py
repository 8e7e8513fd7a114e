"""Every Prometheus metric Athena exports, in one place. Prefix `memos_` (the seeds' name); labels are
low-cardinality by construction: never a tenant, user, agent, event or task id.

Each service process registers all of them but only moves the ones of its own stages; series appear
once observed (labelled metrics) or at zero (unlabelled ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "CHAINS_ARCHIVED",
    "CHAIN_BREAK_DECISIONS",
    "CHAIN_BREAK_SCORE",
    "CHAIN_HEAT",
    "EMBEDDING_CACHE",
    "EMBEDDING_SECONDS",
    "EVENTS_STORED",
    "FORMATION_OUTCOMES",
    "FORMATION_SECONDS",
    "GC_FROZEN_OBJECTS",
    "GC_PAUSE_SECONDS",
    "GRPC_HANDLED",
    "GRPC_HANDLING_SECONDS",
    "GRPC_STARTED",
    "LLM_BREAKER_OPEN",
    "LLM_BREAKER_OPENS",
    "LLM_BUDGET_FALLBACKS",
    "LLM_CALLS",
    "LLM_RATE_LIMIT_DELAYED",
    "LLM_RATE_LIMIT_GRANTS",
    "LLM_RATE_LIMIT_REJECTIONS",
    "LLM_RATE_LIMIT_WAITS",
    "LLM_SECONDS",
    "PERSISTENCE_REWRITES_STARTED",
    "PERSISTENCE_REWRITE_FAILURES",
    "PERSISTENCE_REWRITE_LAST_STARTED",
    "PERSISTENCE_REWRITE_WANTED",
    "QUEUE_DEPTH",
    "QUEUE_WAIT_SECONDS",
    "SEARCH_HITS",
    "TASK_OUTCOMES",
    "TASK_RETRIES",
    "TASK_SECONDS",
    "instrument_llm",
]

_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_WAIT = (0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)
_UNIT = tuple(i / 20 for i in range(1, 21))

# --- gRPC (every service; go-grpc-prometheus names, prefixed) -----------------------------------------
GRPC_STARTED = Counter(
    "memos_grpc_server_started_total", "RPCs started on the server.", ["grpc_service", "grpc_method"]
)
GRPC_HANDLED = Counter(
    "memos_grpc_server_handled_total",
    "RPCs completed on the server, by status code.",
    ["grpc_service", "grpc_method", "grpc_code"],
)
GRPC_HANDLING_SECONDS = Histogram(
    "memos_grpc_server_handling_seconds", "Time to handle an RPC.", ["grpc_service", "grpc_method"], buckets=_LATENCY
)

# --- ingest ------------------------------------------------------------------------------------------
EVENTS_STORED = Counter(
    "memos_events_stored_total",
    "Events stored, by role, type and whether they were repeats.",
    ["role", "type", "duplicate"],
)

# --- erasure: Redis's files on disk (athena_ingest.persistence_rewrite) --------------------------------
PERSISTENCE_REWRITE_WANTED = Gauge(
    "memos_persistence_rewrite_wanted",
    "1 while an erasure waits for Redis to rewrite its append-only file (and RDB snapshot): erased text may still be on Redis's disk.",
)
PERSISTENCE_REWRITES_STARTED = Counter(
    "memos_persistence_rewrites_started_total",
    "Rewrites this process had Redis start after erasures, by kind (aof: BGREWRITEAOF, rdb: BGSAVE).",
    ["kind"],
)
PERSISTENCE_REWRITE_FAILURES = Counter(
    "memos_persistence_rewrite_failures_total",
    "Rewrites after erasures that did not happen, by reason (refused: Redis refused INFO, BGREWRITEAOF or BGSAVE; failed: Redis reported the rewrite failed; lost: Redis restarted or reset its counters meanwhile). Each is retried.",
    ["reason"],
)
PERSISTENCE_REWRITE_LAST_STARTED = Gauge(
    "memos_persistence_rewrite_last_started_timestamp_seconds",
    "Epoch seconds of the last rewrite started after an erasure by any ingest replica (read from Redis; 0 until one is seen).",
)

# --- queue -------------------------------------------------------------------------------------------
QUEUE_DEPTH = Gauge(
    "memos_queue_depth", "Work queue depth by state (ready scopes, leased, delayed, dead-lettered).", ["state"]
)
QUEUE_WAIT_SECONDS = Histogram(
    "memos_queue_wait_seconds", "Time from enqueue to the start of a task's attempt.", buckets=_WAIT
)
TASK_OUTCOMES = Counter("memos_task_outcomes_total", "Task attempts by outcome.", ["type", "outcome"])
TASK_RETRIES = Counter("memos_task_retries_total", "Task attempts that failed and were scheduled again.", ["type"])
TASK_SECONDS = Histogram("memos_task_seconds", "Time one task attempt took.", ["type"], buckets=_LATENCY)

# --- cognition ---------------------------------------------------------------------------------------
CHAIN_BREAK_DECISIONS = Counter(
    "memos_chain_break_decisions_total",
    "Chain-break decisions by path (workflow_skip, first_message, high, low, llm_true, llm_false, llm_fallback, force_flush, agent_opened, time_gap; flush for window flushes).",
    ["scorer", "path"],
)
CHAIN_BREAK_SCORE = Histogram("memos_chain_break_score", "Continuity scores the gate saw.", ["scorer"], buckets=_UNIT)
EMBEDDING_SECONDS = Histogram(
    "memos_embedding_seconds", "Time to embed one batch of texts.", ["provider"], buckets=_LATENCY
)
EMBEDDING_CACHE = Counter("memos_embedding_cache_total", "Embedding cache lookups by result.", ["result"])
LLM_CALLS = Counter("memos_llm_calls_total", "LLM calls by operation and outcome.", ["operation", "outcome"])
LLM_SECONDS = Histogram("memos_llm_seconds", "LLM call latency.", ["operation"], buckets=_LATENCY)
LLM_RATE_LIMIT_WAITS = Gauge(
    "memos_llm_rate_limit_waits",
    "LLM calls so far that had to wait for LLM_RATE_LIMIT_PER_MINUTE (cumulative, from the limiter).",
)
LLM_BREAKER_OPEN = Gauge("memos_llm_breaker_open", "1 while the LLM circuit breaker is open or half-open.")
LLM_RATE_LIMIT_GRANTS = Counter(
    "memos_llm_rate_limit_grants_total",
    "LLM call slots granted, by where the budget was kept (redis: shared per tenant and in total by every process; local: this process alone, Redis unreachable or not used).",
    ["store"],
)
LLM_RATE_LIMIT_DELAYED = Counter(
    "memos_llm_rate_limit_delayed_total",
    "LLM call slots granted after a wait, by the budget that made the call wait (tenant: LLM_TENANT_RATE_LIMIT_PER_MINUTE, total: LLM_RATE_LIMIT_PER_MINUTE).",
    ["budget"],
)
LLM_RATE_LIMIT_REJECTIONS = Counter(
    "memos_llm_rate_limit_rejections_total",
    "LLM calls refused because no slot came within their max wait, by the budget that refused (tenant, total).",
    ["budget"],
)
LLM_BREAKER_OPENS = Counter(
    "memos_llm_breaker_opens_total",
    "Times a failure in this process opened the LLM circuit breaker (shared: for every process).",
)
LLM_BUDGET_FALLBACKS = Counter(
    "memos_llm_budget_fallbacks_total",
    "LLM rate-limit and breaker decisions this process made alone because Redis, where they are shared, was unreachable, by part (limiter, breaker).",
    ["part"],
)

# --- formation ---------------------------------------------------------------------------------------
FORMATION_OUTCOMES = Counter(
    "memos_formation_outcomes_total",
    "Segments by formation outcome (created, merged, rejected) and reason.",
    ["outcome", "reason"],
)
FORMATION_SECONDS = Histogram("memos_formation_seconds", "Time to form a chain from a segment.", buckets=_LATENCY)
CHAIN_HEAT = Histogram(
    "memos_chain_heat",
    "Heat of chains when formed, merged, recalled or swept.",
    buckets=(0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0),
)
CHAINS_ARCHIVED = Counter("memos_chains_archived_total", "Chains archived for being cold.")
SEARCH_HITS = Histogram(
    "memos_search_hits", "Hits returned per SearchMemory.", buckets=(0, 1, 2, 3, 5, 10, 20, 50, 100)
)
SEARCH_STEP_SECONDS = Histogram(
    "memos_search_step_seconds",
    "Time of each consecutive step of a SearchMemory in formation: words (the query's words scored), embedding "
    "(the wait for the query's vector beyond that), scan, rank, documents (the hits' reads), answer.",
    ["step"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0, 5.0),
)
GC_PAUSE_SECONDS = Histogram(
    "memos_gc_pause_seconds",
    "Pauses of the process's Python garbage collector (every call in flight waits), by generation (2: a full collection).",
    ["generation"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
GC_FROZEN_OBJECTS = Gauge(
    "memos_gc_frozen_objects",
    "Long-lived objects moved out of the garbage collector's walks (gc.freeze) after start-up and formation's warm-up.",
)
SEARCH_CACHE_WARMING = Gauge(
    "memos_search_cache_warming",
    "1 while formation reads every user's vectors and lexicons into its search caches at start (Milvus Lite).",
)


def instrument_llm(llm: LLMClient | None) -> LLMClient | None:
    """Wire an LLM client's hooks and counters into the metrics above."""
    if llm is None:
        return None

    def observe(operation: str, outcome: object) -> None:
        LLM_CALLS.labels(operation, str(getattr(outcome, "value", outcome))).inc()

    def observe_budget(event: str, label: str) -> None:
        if event == "granted":
            LLM_RATE_LIMIT_GRANTS.labels(label).inc()
        elif event == "waited":
            LLM_RATE_LIMIT_DELAYED.labels(label).inc()
        elif event == "refused":
            LLM_RATE_LIMIT_REJECTIONS.labels(label).inc()
        elif event == "opened":
            LLM_BREAKER_OPENS.inc()
        elif event == "fallback":
            LLM_BUDGET_FALLBACKS.labels(label).inc()

    llm.set_observer(observe)
    llm.on_latency = lambda operation, seconds: LLM_SECONDS.labels(operation).observe(seconds)
    # The budget keepers that report (SharedRateLimiter, TenantRateLimiter, SharedCircuitBreaker).
    for part in (llm.limiter, llm.breaker):
        if hasattr(part, "observer"):
            setattr(part, "observer", observe_budget)  # noqa: B010 (not in the protocols)
    LLM_RATE_LIMIT_WAITS.set_function(lambda: float(llm.limiter.waits))
    LLM_BREAKER_OPEN.set_function(lambda: 0.0 if llm.breaker.state.value == "closed" else 1.0)
    return llm


if TYPE_CHECKING:
    from athena.llm import LLMClient
