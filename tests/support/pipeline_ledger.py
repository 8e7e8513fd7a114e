"""Drive conversations through a running stack and account for every event afterwards.

Fault-injection tests use it to prove "nothing lost, nothing duplicated" from what was *stored*:

- `conversation(...)` builds a small multi-topic conversation whose topics share no words, so the
  detector's decisions do not depend on model quality (tests only count them);
- `drive(...)` sends several users' conversations concurrently through the public API and returns
  what was acknowledged;
- `wait_decided(...)` waits for the task result of every acknowledged user message;
- `read_ledger(...)` reads MongoDB (`cognitive_events`, `formation_outcomes`, `cognitive_chains`)
  and Redis (windows, hand-off keys, dead letters, task results) for the tenant;
- `Ledger.problems(...)` lists every broken invariant: an acknowledged event missing from the log,
  a user message without a final result, an event in no segment and not in the window or in two
  places, a segment recorded twice or not finished, a chain holding a segment twice or a segment in
  two chains, a chain not indexed, a hand-off or a dead letter left behind.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from athena import keys
from athena.queue import TaskResult, read_results, wait_for_results
from athena.stm import parse_event
from athena_cli.stack import LocalStack
from athena_client import AsyncAthenaClient, ClientOptions, EventInput, ExponentialFullJitter

__all__ = [
    "Acked",
    "Ledger",
    "StackFactory",
    "conversation",
    "drive",
    "log_matches",
    "metric_total",
    "patient_options",
    "read_ledger",
    "wait_decided",
]

StackFactory = Callable[..., AbstractContextManager[LocalStack]]
"""`with factory(**settings) as stack:` a local stack started for one test (tests/faults' `fault_stack`)."""

# Each topic's words are its own: user messages of one topic share most words (the pair cosine of
# the fake embeddings is high), messages of different topics share none (cosine about 0).
_TOPICS: tuple[tuple[str, ...], ...] = (
    ("kyoto", "temples", "shrines", "gardens", "ryokan", "april", "blossoms", "itinerary"),
    ("python", "webhook", "payload", "keyerror", "pydantic", "validation", "schema", "parser"),
    ("chickpea", "spinach", "curry", "coconut", "lime", "rice", "dinner", "recipe"),
    ("marathon", "training", "tempo", "intervals", "mileage", "taper", "recovery", "shoes"),
    ("garden", "tomatoes", "compost", "seedlings", "mulch", "watering", "raised", "beds"),
    ("mortgage", "interest", "refinance", "lender", "escrow", "amortization", "points", "closing"),
)


def conversation(*, user_index: int, topics: int, turns_per_topic: int = 2) -> list[EventInput]:
    """`topics` topics (rotated by user), each `turns_per_topic` user/agent exchanges."""
    turns: list[EventInput] = []
    for t in range(topics):
        words = _TOPICS[(user_index + t) % len(_TOPICS)]
        for k in range(turns_per_topic):
            shared = " ".join(words[:6])
            turns.append(EventInput(role="user", content=f"{shared} {words[6 + k % 2]} question {k}?"))
            turns.append(EventInput(role="agent", content=f"about {shared}: {words[7 - k % 2]} answer {k}."))
    return turns


def patient_options(*, attempts: int = 40, timeout: float = 10.0) -> ClientOptions:
    """A client that keeps retrying UNAVAILABLE through an outage of tens of seconds (same event ids)."""
    return ClientOptions(timeout=timeout, max_attempts=attempts, backoff=ExponentialFullJitter(base=0.2, cap=1.5))


@dataclass(frozen=True)
class Acked:
    """One acknowledged StoreEvent."""

    scope: str
    event_id: str
    task_id: str
    """Empty unless the event is a user message (which queues a chain check)."""


async def drive(
    stack: LocalStack,
    *,
    tenant_id: str,
    conversations: dict[str, list[EventInput]],
    agent_id: str = "agent",
    pace: float = 0.0,
    options: ClientOptions | None = None,
) -> tuple[list[Acked], list[BaseException]]:
    """Send each user's conversation in order, users concurrently. Returns (acknowledged, errors)."""
    acked: list[Acked] = []
    errors: list[BaseException] = []

    async def one_user(user_id: str, turns: list[EventInput]) -> None:
        scope = AsyncAthenaClient.scope(tenant_id, user_id, agent_id)
        async with stack.client(tenant_id=tenant_id, options=options) as client:
            for turn in turns:
                try:
                    r = await client.store_event(scope, turn)
                except Exception as exc:  # counted by the caller: only acknowledged events are owed
                    errors.append(exc)
                    continue
                acked.append(Acked(keys.scope_id(tenant_id, user_id, agent_id), r.event_id, r.task_id))
                if pace:
                    await asyncio.sleep(pace)

    await asyncio.gather(*(one_user(u, turns) for u, turns in conversations.items()))
    return acked, errors


def _checks(acked: Iterable[Acked]) -> list[tuple[str, str]]:
    return [(a.scope, a.task_id) for a in acked if a.task_id]


async def wait_decided(redis_url: str, acked: Sequence[Acked], *, timeout: float = 90.0) -> dict[str, TaskResult]:
    """Until every acknowledged user message has a final result (done or dead-lettered), or timeout."""
    redis = Redis.from_url(redis_url)
    try:
        return await wait_for_results(redis, _checks(acked), timeout=timeout)
    finally:
        await redis.aclose()


@dataclass
class Ledger:
    """What the stores hold for one tenant."""

    acked: list[Acked]
    logged: set[str]
    results: dict[str, TaskResult]
    outcomes: list[dict[str, Any]]
    chains: list[dict[str, Any]]
    windows: dict[str, list[str]]
    handoffs: list[str]
    dead_letters: int
    counts: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        by_outcome = Counter(o.get("outcome") for o in self.outcomes)
        paths = Counter(r.get("path") for r in self.results.values())
        in_windows = sum(len(w) for w in self.windows.values())
        return (
            f"acked={len(self.acked)} (user messages {sum(1 for a in self.acked if a.task_id)}) logged={len(self.logged)} "
            f"results={len(self.results)} segments={len(self.outcomes)} {dict(by_outcome)} chains={len(self.chains)} "
            f"in_windows={in_windows} handoffs={len(self.handoffs)} dead_letters={self.dead_letters} paths={dict(paths)}"
        )

    def problems(self) -> list[str]:
        out: list[str] = []
        acked_ids = [a.event_id for a in self.acked]
        if len(set(acked_ids)) != len(acked_ids):
            out.append("the same event id was acknowledged for two stores")
        missing = set(acked_ids) - self.logged
        if missing:
            out.append(f"{len(missing)} acknowledged events missing from cognitive_events: {sorted(missing)[:5]}")
        for a in self.acked:
            if a.task_id and self.results.get(a.task_id, {}).get("status") != "done":
                out.append(f"user message {a.event_id}: task result {self.results.get(a.task_id)!r}")
        # Every acknowledged event is in exactly one place: one segment, or still the window.
        places: Counter[str] = Counter()
        seg_ids = [o["_id"] for o in self.outcomes]
        if len(set(seg_ids)) != len(seg_ids):
            out.append("a segment has two formation records")
        for o in self.outcomes:
            places.update(o.get("event_ids", []))
            if o.get("state") != "done":
                out.append(f"segment {o['_id']} left in state {o.get('state')!r}")
        for events in self.windows.values():
            places.update(events)
        for event_id in acked_ids:
            if places[event_id] != 1:
                out.append(f"event {event_id} is in {places[event_id]} segments/windows (want exactly 1)")
        # Chains: every non-rejected segment in exactly one chain, once; no chain without its record.
        in_chains: Counter[str] = Counter()
        by_id = {c["_id"]: c for c in self.chains}
        for c in self.chains:
            in_chains.update(c.get("segment_ids", []))
            if c.get("embedding_state") != "indexed":
                out.append(f"chain {c['_id']} embedding_state={c.get('embedding_state')!r}")
            if len(set(c.get("event_ids", []))) != len(c.get("event_ids", [])):
                out.append(f"chain {c['_id']} holds an event twice")
        for o in self.outcomes:
            if o.get("outcome") == "rejected":
                if in_chains[o["_id"]]:
                    out.append(f"rejected segment {o['_id']} is in a chain")
                continue
            if in_chains[o["_id"]] != 1:
                out.append(f"segment {o['_id']} ({o.get('outcome')}) is in {in_chains[o['_id']]} chains (want 1)")
            if o.get("chain_id") not in by_id:
                out.append(f"segment {o['_id']} points at a missing chain {o.get('chain_id')}")
        recorded = {o["_id"] for o in self.outcomes}
        for seg in in_chains:
            if seg not in recorded:
                out.append(f"chain segment {seg} has no formation record")
        if self.handoffs:
            out.append(f"hand-off keys left: {self.handoffs[:5]}")
        if self.dead_letters:
            out.append(f"{self.dead_letters} dead-lettered tasks")
        return out


async def read_ledger(stack: LocalStack, *, tenant_id: str, acked: Sequence[Acked], database: str = "athena") -> Ledger:
    redis = Redis.from_url(f"redis://127.0.0.1:{stack.ports.redis}/0")
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(stack.mongodb_uri, serverSelectionTimeoutMS=10000)
    try:
        db = mongo[database]
        logged = {d["_id"] async for d in db["cognitive_events"].find({"tenant_id": tenant_id}, {"_id": 1})}
        outcomes = [d async for d in db["formation_outcomes"].find({"tenant_id": tenant_id})]
        chains = [d async for d in db["cognitive_chains"].find({"tenant_id": tenant_id})]
        windows: dict[str, list[str]] = {}
        for scope in sorted({a.scope for a in acked}):
            windows[scope] = [parse_event(raw).id for raw in await redis.lrange(keys.stm_window_key(scope), 0, -1)]
        handoffs = [k.decode() async for k in redis.scan_iter(match=f"{keys.STM_HANDOFF_PREFIX}{tenant_id}:*")]
        dead = await redis.llen(keys.QUEUE_DEAD_LETTERS)
        results = await read_results(redis, _checks(acked))
    finally:
        await redis.aclose()
        await mongo.close()
    return Ledger(
        acked=list(acked),
        logged=logged,
        results=results,
        outcomes=outcomes,
        chains=chains,
        windows=windows,
        handoffs=handoffs,
        dead_letters=int(dead),
    )


def log_matches(stack: LocalStack, service: str, pattern: str) -> int:
    """Lines of a service's log matching `pattern` (the log file is appended across restarts)."""
    return len(re.findall(pattern, stack.log_tail(service, chars=50_000_000), flags=re.MULTILINE))


def metric_total(stack: LocalStack, service: str, sample: str, **labels: str) -> float:
    """Sum of one Prometheus sample of a running service (LocalStack.metric_total)."""
    return stack.metric_total(service, sample, **labels)
