"""A load run: the baseline phase (quiet tenants only), then the same with the noisy tenant, then verification.

Each phase sends for `duration` seconds and then waits until every user message it sent has a final
task result (up to `drain_timeout`), so the second phase starts from an empty queue and the two
phases' queue waits compare like for like. After both, every acknowledged event id is looked up in
the durable log.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from athena.config import Settings
from athena.redis_util import connect_redis
from athena.stores import connect_mongo
from athena_client import AsyncAthenaClient
from athena_lab.load._driver import UserPlan, drive_phase
from athena_lab.load._report import PhaseOutcome, build_report
from athena_lab.load._verify import events_in_log, wait_decided

__all__ = ["LoadConfig", "LoadProgress", "LoadTarget", "plan_users", "run_load"]

AGENT_ID = "assistant"


@dataclass(frozen=True, kw_only=True)
class LoadConfig:
    """What to send (the defaults of a run are `athena load`'s option defaults)."""

    tenants: int
    """Tenants in all, the noisy one included (at least 2)."""
    users_per_tenant: int
    rate: float
    """Events per second of each quiet user (half of a conversation's events are user messages)."""
    noisy_factor: float
    """Each noisy user sends at noisy_factor x rate: the noisy tenant sends that many times a quiet tenant's traffic."""
    duration: float
    """Seconds of traffic per phase."""
    drain_timeout: float = 600.0
    """Longest wait, after a phase's traffic, for its user messages to be decided."""
    max_in_flight: int = 256
    """Most StoreEvent calls in flight at once (all users together)."""
    seed: int = 0

    def __post_init__(self) -> None:
        if self.tenants < 2:
            raise ValueError("--tenants must be at least 2 (one noisy, at least one quiet)")
        if self.users_per_tenant < 1 or self.rate <= 0 or self.noisy_factor <= 0 or self.duration <= 0:
            raise ValueError("--users-per-tenant, --rate, --noisy-factor and --duration must be positive")


@dataclass(frozen=True)
class LoadTarget:
    """Where the run sends its traffic and where it checks the outcome."""

    client_for: Callable[[str], AsyncAthenaClient]
    """A new client carrying a credential of the tenant."""
    redis_url: str
    mongodb_uri: str
    mongodb_database: str
    tenant_ids: tuple[str, ...] = ()
    """Tenants to use (the last is the noisy one); generated for the run when empty."""


class LoadProgress(Protocol):
    """What the run reports as it goes (the command draws it as progress bars)."""

    def phase(self, name: str, duration: float) -> None: ...
    def sent(self, seconds: float) -> None: ...
    def draining(self, done: int, total: int) -> None: ...
    def verifying(self) -> None: ...


def plan_users(config: LoadConfig, tenant_ids: tuple[str, ...], run_id: str) -> tuple[list[UserPlan], list[UserPlan]]:
    """(quiet users, noisy users). User ids carry the run id, so runs against one stack never mix."""
    *quiet_tenants, noisy_tenant = tenant_ids
    users = [f"u{j}-{run_id}" for j in range(config.users_per_tenant)]
    quiet = [UserPlan(t, u, AGENT_ID, config.rate, False) for t in quiet_tenants for u in users]
    noisy = [UserPlan(noisy_tenant, u, AGENT_ID, config.rate * config.noisy_factor, True) for u in users]
    return quiet, noisy


async def run_load(config: LoadConfig, target: LoadTarget, progress: LoadProgress) -> dict[str, Any]:
    run_id = secrets.token_hex(3)
    tenant_ids = target.tenant_ids or tuple(
        [f"load-{run_id}-t{i}" for i in range(config.tenants - 1)] + [f"load-{run_id}-noisy"]
    )
    if len(tenant_ids) < 2:
        raise ValueError("a load run needs at least two tenants (one noisy)")
    quiet, noisy = plan_users(config, tenant_ids, run_id)
    settings = Settings(mongodb_uri=target.mongodb_uri)
    async with AsyncExitStack() as stack:
        clients: dict[str, AsyncAthenaClient] = {}

        def client_for(tenant: str) -> AsyncAthenaClient:
            if tenant not in clients:
                clients[tenant] = target.client_for(tenant)
                stack.push_async_callback(clients[tenant].close)
            return clients[tenant]

        redis = connect_redis(target.redis_url)
        stack.push_async_callback(redis.aclose)
        mongo = connect_mongo(settings)
        stack.push_async_callback(mongo.close)

        outcomes: list[PhaseOutcome] = []
        for seed, (name, plans) in enumerate((("baseline", quiet), ("noisy", quiet + noisy))):
            progress.phase(name, config.duration)
            traffic = await drive_phase(
                name,
                plans,
                client_for,
                duration=config.duration,
                max_in_flight=config.max_in_flight,
                seed=config.seed + seed,
                on_second=progress.sent,
            )
            decisions = await wait_decided(
                redis, traffic.acks, timeout=config.drain_timeout, on_progress=progress.draining
            )
            outcomes.append(PhaseOutcome(traffic, decisions))
        progress.verifying()
        acked = [a.event_id for o in outcomes for a in o.traffic.acks]
        in_log = await events_in_log(mongo, target.mongodb_database, acked)
    report = build_report(
        outcomes[0],
        outcomes[1],
        in_log,
        config={
            **asdict(config),
            "tenants": len(tenant_ids),
            "quiet_users": len(quiet),
            "noisy_users": len(noisy),
            "noisy_user_rate": config.rate * config.noisy_factor,
            "run_id": run_id,
        },
    )
    return report
