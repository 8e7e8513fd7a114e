"""Open-loop traffic: every user of every tenant stores a conversation at a fixed rate for a set time.

Open loop: each send is started on its schedule whether or not the previous one has answered, so a
slow stack shows up as latency and backlog rather than as a lower offered rate (up to `max_in_flight`
calls at once; beyond that, sends wait and the achieved rate is reported as it was). Every event's
text is unique, so no embedding cache spares cognition the work a real conversation costs.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from athena_cli.sample_conversation import sample_conversation
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2

__all__ = ["Ack", "PhaseTraffic", "UserPlan", "drive_phase"]


@dataclass(frozen=True)
class UserPlan:
    """One user of the run: its scope and its rate in events per second."""

    tenant_id: str
    user_id: str
    agent_id: str
    rate: float
    noisy: bool


@dataclass(frozen=True)
class Ack:
    """An event the service acknowledged."""

    tenant_id: str
    user_id: str
    agent_id: str
    event_id: str
    task_id: str
    """The chain check queued for it; empty for an event that is not a user message."""
    noisy: bool
    latency_ms: float


@dataclass
class PhaseTraffic:
    """What one phase sent and what came back."""

    name: str
    seconds: float = 0.0
    """Wall time from the phase's start to its end or the last answer, whichever is later."""
    offered: int = 0
    acks: list[Ack] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    """Calls that were not acknowledged, by gRPC status (not loss: the caller knows they failed)."""


ClientFor = Callable[[str], AsyncAthenaClient]
"""The client carrying the credential of a tenant."""


async def _send(
    client: AsyncAthenaClient, plan: UserPlan, turn: EventInput, seq: int, out: PhaseTraffic, slots: asyncio.Semaphore
) -> None:
    scope = memory_pb2.Scope(tenant_id=plan.tenant_id, user_id=plan.user_id, agent_id=plan.agent_id)
    event = EventInput(role=turn.role, type=turn.type, content=f"{turn.content} ({out.name} #{seq} {plan.user_id})")
    started = time.perf_counter()
    try:
        response = await client.store_event(scope, event)
    except grpc.aio.AioRpcError as exc:
        out.errors[exc.code().name] += 1
        return
    finally:
        slots.release()
    out.acks.append(
        Ack(
            plan.tenant_id,
            plan.user_id,
            plan.agent_id,
            response.event_id,
            response.task_id,
            plan.noisy,
            (time.perf_counter() - started) * 1000,
        )
    )


async def _user_loop(
    client: AsyncAthenaClient,
    plan: UserPlan,
    *,
    start: float,
    end: float,
    out: PhaseTraffic,
    slots: asyncio.Semaphore,
    pending: set[asyncio.Task[None]],
    rng: random.Random,
) -> None:
    turns = sample_conversation()
    interval = 1.0 / plan.rate
    next_at = start + rng.uniform(0, interval)  # spread the users' first sends over one interval
    position = rng.randrange(len(turns))
    seq = 0
    loop = asyncio.get_running_loop()
    while next_at < end:
        delay = next_at - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        await slots.acquire()
        turn = turns[(position + seq) % len(turns)]
        task = asyncio.create_task(_send(client, plan, turn, seq, out, slots))
        pending.add(task)
        task.add_done_callback(pending.discard)
        out.offered += 1
        seq += 1
        next_at += interval


async def drive_phase(
    name: str,
    plans: list[UserPlan],
    client_for: ClientFor,
    *,
    duration: float,
    max_in_flight: int = 256,
    seed: int = 0,
    on_second: Callable[[float], None] | None = None,
) -> PhaseTraffic:
    """Run every user's schedule for `duration` seconds, then wait for the calls still in flight."""
    out = PhaseTraffic(name=name)
    slots = asyncio.Semaphore(max_in_flight)
    pending: set[asyncio.Task[None]] = set()
    rng = random.Random(seed)
    loop = asyncio.get_running_loop()
    start = loop.time()
    end = start + duration
    users = [
        asyncio.create_task(
            _user_loop(
                client_for(p.tenant_id),
                p,
                start=start,
                end=end,
                out=out,
                slots=slots,
                pending=pending,
                rng=random.Random(rng.random()),
            )
        )
        for p in plans
    ]
    ticker = asyncio.create_task(_tick(loop, start, end, on_second)) if on_second else None
    try:
        await asyncio.gather(*users)
        # The phase lasts `duration` even when the last scheduled send came earlier, so rates compare.
        await asyncio.sleep(max(0.0, end - loop.time()))
        if pending:
            await asyncio.gather(*list(pending))
    finally:
        for t in users:
            t.cancel()
        if ticker:
            ticker.cancel()
    out.seconds = loop.time() - start
    return out


async def _tick(loop: asyncio.AbstractEventLoop, start: float, end: float, on_second: Callable[[float], None]) -> None:
    while loop.time() < end:
        await asyncio.sleep(min(1.0, max(0.0, end - loop.time())))
        on_second(min(loop.time(), end) - start)
