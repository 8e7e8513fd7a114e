"""The cognition process: MEMORY_WORKER_COUNT chain-check workers, and gRPC health on COGNITION_GRPC_PORT."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from redis.asyncio import Redis

from athena.auth import server_credentials
from athena.config import Settings
from athena.embeddings import make_embedder
from athena.formation_client import FormationClient
from athena.grpc_util import DependencyCheck, ServiceHost
from athena.llm import LLMArbiter, connect_budget_redis, make_llm
from athena.metrics import instrument_llm
from athena.queue import ExponentialFullJitter, FairQueue, RetryPolicy, WorkerPool
from athena.redis_util import connect_redis
from athena.stm import ShortTermWindow
from athena.telemetry import run_service
from athena_cognition.chain_check import ChainCheckHandler, DetectorSetup
from athena_cognition.detector import Thresholds, check_scorer_embedding, default_thresholds, make_scorer
from athena_cognition.idle_flush import IdleFlush

__all__ = ["Cognition", "build_cognition", "main", "serve"]

log = logging.getLogger("athena.cognition")


def detector_setup(settings: Settings, *, budget_redis: Redis | None = None) -> DetectorSetup:
    """The detector the workers run. Raises SettingsError (the process exits with its message) when
    CHAIN_SCORER needs another embedding model than EMBEDDING_PROVIDER / EMBEDDING_MODEL give.
    `budget_redis`: where the LLM's rate limit and breaker are shared (None: this process's own)."""
    check_scorer_embedding(settings)
    scorer = make_scorer(settings.chain_scorer.value)
    defaults = default_thresholds(settings.chain_scorer.value)
    thresholds = Thresholds(
        high=settings.chain_sim_high if settings.chain_sim_high is not None else defaults.high,
        low=settings.chain_sim_low if settings.chain_sim_low is not None else defaults.low,
    )
    llm = instrument_llm(make_llm(settings, redis=budget_redis))
    return DetectorSetup(
        scorer=scorer,
        embedder=make_embedder(settings),
        thresholds=thresholds,
        arbiter=LLMArbiter(llm) if llm is not None else None,
        max_events_before_flush=settings.stm_max_events_before_flush,
        flush_keep_events=settings.flush_keep_events,
        min_chain_events=settings.stm_min_chain_events,
        session_gap_seconds=settings.stm_session_gap_seconds,
    )


@dataclass
class Cognition:
    host: ServiceHost
    pool: WorkerPool | None
    """None when ENABLE_MEMORY_WORKERS=false."""
    idle_flush: IdleFlush | None
    """None when the workers are off or STM_IDLE_FLUSH_SECONDS=0."""
    start_background: Callable[[], Awaitable[None]]
    """Starts the idle flush's sweep (stopped with the host)."""


async def build_cognition(settings: Settings) -> Cognition:
    # No socket timeout shorter than the blocking claim: BLMOVE waits up to 1 s.
    redis = connect_redis(settings.redis_url, socket_timeout=10.0)
    credentials = server_credentials(settings)
    formation = FormationClient.from_settings(settings)
    pool: WorkerPool | None = None
    idle_flush: IdleFlush | None = None
    # The LLM's rate limit (per tenant and in total) and breaker, shared with every process; its own
    # client, with short timeouts: while Redis does not answer, the LLM budget is this process's.
    budget_redis: Redis | None = None
    if settings.enable_memory_workers:
        queue = FairQueue(
            redis,
            lease_seconds=settings.queue_lease_seconds,
            result_ttl_seconds=settings.queue_result_ttl_seconds,
            retry=RetryPolicy(
                max_attempts=settings.queue_max_attempts,
                max_outage_attempts=settings.queue_max_outage_attempts,
                backoff=ExponentialFullJitter(
                    base=settings.queue_backoff_base_seconds, cap=settings.queue_backoff_max_seconds
                ),
            ),
        )
        if settings.llm_base_url.strip():
            budget_redis = connect_budget_redis(settings.redis_url)
        setup = detector_setup(settings, budget_redis=budget_redis)
        await setup.embedder.embed(["warm-up"])  # load the model before reporting SERVING
        window = ShortTermWindow(redis, max_events=settings.stm_window_max_events)
        handler = ChainCheckHandler(
            redis=redis,
            window=window,
            detector=setup,
            formation=formation,
            hand_off_embeddings=settings.embeddings_handoff,
        )
        pool = WorkerPool(queue, handler, count=settings.memory_worker_count, task_timeout=settings.stm_task_timeout)
        if settings.stm_idle_flush_seconds > 0:
            idle_flush = IdleFlush(redis, window, idle_seconds=settings.stm_idle_flush_seconds)
    else:
        log.warning("ENABLE_MEMORY_WORKERS=false: cognition is disabled; Athena is a plain short-term store")

    sweeping: list[asyncio.Task[None]] = []

    async def start_idle_flush() -> None:
        if idle_flush is not None:
            sweeping.append(asyncio.create_task(idle_flush.run_forever(), name="idle flush"))

    async def stop_workers() -> None:
        for task in sweeping:
            task.cancel()
        if pool is not None:
            await pool.stop(grace=settings.grpc_shutdown_grace_seconds)
        await formation.close()
        await redis.aclose()
        if budget_redis is not None:
            await budget_redis.aclose()

    host = ServiceHost(
        name="cognition",
        port=settings.cognition_grpc_port,
        bind_host=settings.grpc_bind_host,
        checks=[DependencyCheck("redis", redis.ping)],
        reflection=settings.grpc_reflection,
        grace=1.0,
        on_stop=[stop_workers],
        credentials=credentials,
    )
    return Cognition(host=host, pool=pool, idle_flush=idle_flush, start_background=start_idle_flush)


async def serve(settings: Settings) -> None:
    cognition = await build_cognition(settings)
    if cognition.pool is not None:
        await cognition.pool.start()
    await cognition.start_background()
    await cognition.host.run()


def main() -> None:
    run_service("cognition", serve)


if __name__ == "__main__":
    main()
