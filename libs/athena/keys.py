"""Every Redis key Athena uses, in one place.

Scope ids (tenant, user, agent) never contain ':' (validation enforces [A-Za-z0-9._@-]), so the
joined form `{tenant}:{user}:{agent}` is unambiguous. The queue's multi-key Lua scripts assume one
Redis primary (not Redis Cluster): keys are built from these names inside scripts, as dramatiq does.
"""

from __future__ import annotations

__all__ = [
    "CLAIMING_PREFIX",
    "DISPATCHER",
    "ERASURE_TTL_SECONDS",
    "LEASE_PREFIX",
    "LLM_BREAKER_FAILURES",
    "LLM_BREAKER_OPEN",
    "LLM_BREAKER_TRIAL",
    "LLM_BREAKER_TRIPPED",
    "LLM_RATE_TENANT_PREFIX",
    "LLM_RATE_TOTAL",
    "PERSISTENCE_REWRITE_ATTEMPT",
    "PERSISTENCE_REWRITE_LOCK",
    "PERSISTENCE_REWRITE_WANTED",
    "QUEUE_DEAD_LETTERS",
    "QUEUE_DELAYED",
    "QUEUE_DELIVERIES",
    "QUEUE_LEASES",
    "QUEUE_REAPER_LOCK",
    "QUEUE_WORKERS",
    "STM_ACTIVITY",
    "claiming_key",
    "erasure_key",
    "lease_key",
    "llm_rate_tenant_key",
    "scope_id",
    "scope_queue_key",
    "split_scope_id",
    "stm_applied_key",
    "stm_handoff_key",
    "stm_handoff_scope",
    "stm_parked_key",
    "stm_user_agents_key",
    "stm_window_key",
    "task_dedup_key",
    "task_result_key",
    "user_key_patterns",
    "user_scope_prefix",
]

# --- the seed's names ------------------------------------------------------------------------------
SCOPE_QUEUE_PREFIX = "memory_processing_queue:v1:"
"""LIST per scope: task envelopes (protobuf athena.internal.v1.Task) in FIFO order; the head is in flight while leased."""
DISPATCHER = "cognitive_work_queue"
"""LIST of scope ids with runnable work; each scope at most once (not leased, not backing off)."""
TASK_RESULT_PREFIX = "task_results:v1:"
"""STRING per task: JSON outcome, 1-hour TTL."""

# --- reliability additions (see docs/architecture.md, "The queue") -------------------------------
CLAIMING_PREFIX = "cognitive_work_queue:claiming:"
"""LIST per worker: scope ids moved off the dispatcher by BLMOVE, until the claim script leases them."""
LEASE_PREFIX = "cognitive_work_queue:lease:"
"""STRING per leased scope: the holder's random token (fencing), with a PX expiry."""
QUEUE_LEASES = "cognitive_work_queue:leases"
"""ZSET scope id -> lease deadline (ms), so the reaper finds expired leases."""
QUEUE_DELAYED = "cognitive_work_queue:delayed"
"""ZSET scope id -> time (ms) its head task may be retried."""
QUEUE_DEAD_LETTERS = "cognitive_work_queue:dead"
"""LIST of exhausted task envelopes, each carrying attempt and last_error."""
QUEUE_DELIVERIES = "cognitive_work_queue:deliveries"
"""HASH scope id -> deliveries of its head task, so a task that keeps killing its worker ends in the dead-letter list."""
QUEUE_WORKERS = "cognitive_work_queue:workers"
"""ZSET worker id -> last heartbeat (ms)."""
QUEUE_REAPER_LOCK = "cognitive_work_queue:reaper-lock"
"""STRING mutex so one process at a time reaps expired leases."""
TASK_DEDUP_PREFIX = "cognitive_work_queue:dedup:"
"""STRING per task id: set on enqueue so a repeated enqueue adds nothing."""

# --- short-term memory -----------------------------------------------------------------------------
STM_WINDOW_PREFIX = "stm:v1:window:"
"""LIST per scope: the short-term window, stored events (protobuf athena.memory.v1.Event), oldest first."""
STM_HANDOFF_PREFIX = "stm:v1:handoff:"
"""HASH per cut (fields segment, decision): the segment (protobuf athena.internal.v1.Segment) cut out of
the window and not yet accepted by formation. Written by the cut script, deleted once FormChain answered."""
STM_PARKED_PREFIX = "stm:v1:parked:"
"""SET per scope: the hand-off keys of its parked segments (cut, not yet accepted by formation), so a
search reads them with the window without a SCAN. Added by the cut script with its hand-off key;
removed with it when the hand-off is deleted (once FormChain answered, or by erasure)."""
STM_APPLIED_PREFIX = "stm:v1:applied:"
"""STRING per event: marks that the event reached the window, so a retried StoreEvent appends it once."""
STM_ACTIVITY = "stm:v1:activity"
"""ZSET scope id -> stored_at (epoch ms) of the newest event appended to its window: the idle flush
takes the scopes quiet for STM_IDLE_FLUSH_SECONDS off its low end (no scan of every window)."""
STM_USER_AGENTS_PREFIX = "stm:v1:agents:"
"""SET per (tenant, user): the agent ids that have had a window, so a search of all of a user's agents
reads their open windows without a SCAN."""

# --- erasure ---------------------------------------------------------------------------------------
ERASURE_PREFIX = "erasure:v1:"
"""STRING per (tenant, user): the tombstone, epoch seconds (float) of the last ForgetUser. Tasks
enqueued at or before it are dropped by cognition. Expires after ERASURE_TTL_SECONDS (far longer than
any task can stay queued: dead letters of the user are erased with it)."""
ERASURE_TTL_SECONDS = 7 * 24 * 3600
PERSISTENCE_REWRITE_WANTED = "persistence:v1:rewrite:wanted"
"""STRING: a fresh random token written after every ForgetUser: Redis should rewrite its append-only
file (and RDB snapshot) so the erased text leaves the disk. Deleted only once a rewrite started after
the request carrying this very token has finished (athena_ingest.persistence_rewrite)."""
PERSISTENCE_REWRITE_ATTEMPT = "persistence:v1:rewrite:attempt"
"""STRING: JSON of the last rewrite attempt by any ingest replica (the token it served, when, its state
running/done/failed/refused, Redis's run id and rewrite counters before it), for the rate limit
ERASURE_AOF_REWRITE_MIN_INTERVAL_SECONDS and to tell when the rewrite finished. No TTL: one small key."""
PERSISTENCE_REWRITE_LOCK = "persistence:v1:rewrite:lock"
"""STRING mutex (SET NX PX, random token) so one ingest replica at a time checks and starts a rewrite."""

# --- the LLM budget, shared by every process that calls the LLM (athena.llm._shared) ----------------
LLM_RATE_TOTAL = "llm:v1:rate:total"
"""ZSET: the sliding-window log of LLM_RATE_LIMIT_PER_MINUTE, all tenants together: one member per
granted or reserved call, scored by its slot (epoch ms). Entries older than the window are trimmed by
the reserve script; the key expires one window after its newest slot."""
LLM_RATE_TENANT_PREFIX = "llm:v1:rate:tenant:"
"""ZSET per tenant: the same log for LLM_TENANT_RATE_LIMIT_PER_MINUTE (same trimming and expiry)."""
LLM_BREAKER_FAILURES = "llm:v1:breaker:failures"
"""STRING: consecutive LLM failures seen by any process since the last success (INCR; deleted by a
success or when the breaker opens). Expires an hour after the last failure."""
LLM_BREAKER_OPEN = "llm:v1:breaker:open"
"""STRING: present while the shared breaker is OPEN (SET PX LLM_BREAKER_RESET_SECONDS): every process
refuses LLM calls without a request."""
LLM_BREAKER_TRIPPED = "llm:v1:breaker:tripped"
"""STRING: the breaker opened and no call has succeeded since: once LLM_BREAKER_OPEN has expired the
breaker is HALF_OPEN. Deleted by a success; expires an hour after the last opening (then CLOSED)."""
LLM_BREAKER_TRIAL = "llm:v1:breaker:trial"
"""STRING: the one half-open trial call across all processes (SET NX PX LLM_BREAKER_RESET_SECONDS,
the holder's random token), so a trial whose outcome never comes back frees itself."""


def llm_rate_tenant_key(tenant_id: str) -> str:
    return LLM_RATE_TENANT_PREFIX + tenant_id


def scope_id(tenant_id: str, user_id: str, agent_id: str) -> str:
    return f"{tenant_id}:{user_id}:{agent_id}"


def split_scope_id(scope: str) -> tuple[str, str, str]:
    tenant, user, agent = scope.split(":")
    return tenant, user, agent


def scope_queue_key(scope: str) -> str:
    return SCOPE_QUEUE_PREFIX + scope


def claiming_key(worker_id: str) -> str:
    return CLAIMING_PREFIX + worker_id


def lease_key(scope: str) -> str:
    return LEASE_PREFIX + scope


def task_dedup_key(task_id: str) -> str:
    return TASK_DEDUP_PREFIX + task_id


def task_result_key(scope: str, task_id: str) -> str:
    return f"{TASK_RESULT_PREFIX}{scope}:{task_id}"


def stm_window_key(scope: str) -> str:
    return STM_WINDOW_PREFIX + scope


def stm_handoff_key(scope: str, task_id: str) -> str:
    return f"{STM_HANDOFF_PREFIX}{scope}:{task_id}"


def stm_handoff_scope(handoff_key: str) -> str:
    """The scope id of a hand-off key: its first three `:`-separated parts after the prefix."""
    return ":".join(handoff_key[len(STM_HANDOFF_PREFIX) :].split(":", 3)[:3])


def stm_parked_key(scope: str) -> str:
    return STM_PARKED_PREFIX + scope


def stm_applied_key(scope: str, event_id: str) -> str:
    return f"{STM_APPLIED_PREFIX}{scope}:{event_id}"


def stm_user_agents_key(tenant_id: str, user_id: str) -> str:
    return f"{STM_USER_AGENTS_PREFIX}{tenant_id}:{user_id}"


def erasure_key(tenant_id: str, user_id: str) -> str:
    return f"{ERASURE_PREFIX}{tenant_id}:{user_id}"


def user_scope_prefix(tenant_id: str, user_id: str) -> str:
    """`{tenant}:{user}:`, the start of every scope id of the user (ids never contain ':')."""
    return f"{tenant_id}:{user_id}:"


def user_key_patterns(tenant_id: str, user_id: str) -> dict[str, str]:
    """SCAN MATCH patterns of the user's per-scope keys (ids hold no glob characters: [A-Za-z0-9._@-])."""
    p = user_scope_prefix(tenant_id, user_id)
    return {
        "queue": f"{SCOPE_QUEUE_PREFIX}{p}*",
        "window": f"{STM_WINDOW_PREFIX}{p}*",
        "applied": f"{STM_APPLIED_PREFIX}{p}*",
        "handoff": f"{STM_HANDOFF_PREFIX}{p}*",
        "lease": f"{LEASE_PREFIX}{p}*",
        "result": f"{TASK_RESULT_PREFIX}{p}*",
    }
