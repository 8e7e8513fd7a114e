"""Stage 2, ingest: StoreEvent requests/s and latency at concurrency 32, beside an empty handler.

The measured server is the local stack's ingest process (event log in nx-27017, short-term window
and chain-check enqueue in redis-server). The baseline is an empty grpc.aio MemoryService (StoreEvent
and StoreEvents return empty responses) run as its own process the same way (`python -m
athena_lab.bench._ingest PORT`, on uvloop as the services are), hit by the same client code with the
same requests. Both are driven from this process over one grpc.aio channel each, CONCURRENCY
requests in flight.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from athena.auth import BearerCredentialInterceptor
from athena.local import free_port, wait_for_port
from athena_client.memory.v1 import memory_pb2, memory_pb2_grpc
from athena_lab.bench._event_log import LOG_BATCH, event_log_round
from athena_lab.bench._report import Figure, StageResult, percentile, summary

__all__ = ["EmptyServer", "run_ingest_stage"]

CONCURRENCY = 32
BATCH = 100
BATCH_CONCURRENCY = 4
GROWTH_LOG_EVENTS = (5_000, 50_000)
"""Full runs only: event-log sizes at which StoreEvent is measured first, to show how cost grows at 10x."""
_CONTENT = (
    "My invoice for March shows the wrong VAT number and the billing address is out of date; "
    "could you correct both and send me a fresh copy of the invoice as a PDF? Order reference 4471-B."
)


def _event(role: memory_pb2.Role.ValueType) -> memory_pb2.NewEvent:
    return memory_pb2.NewEvent(
        role=role, type=memory_pb2.EVENT_TYPE_MESSAGE, content=_CONTENT, event_id=uuid.uuid4().hex
    )


class _Empty(memory_pb2_grpc.MemoryServiceServicer):
    async def StoreEvent(self, request, context):
        return memory_pb2.StoreEventResponse()

    async def StoreEvents(self, request, context):
        return memory_pb2.StoreEventsResponse()


async def _serve_empty(port: int) -> None:
    server = grpc.aio.server()
    # The stub marks every RPC abstract; the generated base class answers UNIMPLEMENTED for the others.
    memory_pb2_grpc.add_MemoryServiceServicer_to_server(_Empty(), server)  # type: ignore[abstract]
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


class EmptyServer:
    """The baseline server as a child process."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> EmptyServer:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "athena_lab.bench._ingest", str(self.port)], stdin=subprocess.DEVNULL
        )
        wait_for_port(self.port, timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass(frozen=True)
class _Caller:
    """Who the bench calls as: the tenant of its scopes and that tenant's credential (empty: none)."""

    tenant: str
    credential: str

    def channel(self, target: str) -> grpc.aio.Channel:
        interceptors = [BearerCredentialInterceptor(self.credential)] if self.credential else None
        return grpc.aio.insecure_channel(target, interceptors=interceptors)


async def _unary_round(
    target: str, n: int, role: memory_pb2.Role.ValueType, caller: _Caller
) -> tuple[float, list[float]]:
    """n StoreEvent calls, CONCURRENCY in flight. Returns (requests/s, latencies in ms)."""
    lat: list[float] = []
    async with caller.channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        await channel.channel_ready()
        counter = iter(range(n))

        async def worker(k: int) -> None:
            scope = memory_pb2.Scope(tenant_id=caller.tenant, user_id=f"ingest-{k}", agent_id="a")
            for _ in counter:
                req = memory_pb2.StoreEventRequest(scope=scope, event=_event(role))
                t = time.perf_counter()
                await stub.StoreEvent(req, timeout=30)
                lat.append((time.perf_counter() - t) * 1000)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(CONCURRENCY)))
        elapsed = time.perf_counter() - t0
    return n / elapsed, lat


async def _batch_round(target: str, batches: int, role: memory_pb2.Role.ValueType, caller: _Caller) -> float:
    """StoreEvents of BATCH events, BATCH_CONCURRENCY in flight. Returns events/s."""
    async with caller.channel(target) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        await channel.channel_ready()
        counter = iter(range(batches))

        async def worker(k: int) -> None:
            scope = memory_pb2.Scope(tenant_id=caller.tenant, user_id=f"batch-{k}", agent_id="a")
            for _ in counter:
                await stub.StoreEvents(
                    memory_pb2.StoreEventsRequest(scope=scope, events=[_event(role) for _ in range(BATCH)]), timeout=60
                )

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(BATCH_CONCURRENCY)))
        return batches * BATCH / (time.perf_counter() - t0)


_WARM_UP = 200


GROWTH_ROUNDS = 3
"""Pairs (StoreEvent, then the empty handler) per growth side, each of a third of the calls: the side's
figure is the median pair, so one slow moment of the host does not decide it."""


async def _growth(
    ingest: str, empty: str, sizes: tuple[int, int], n: int, role: memory_pb2.Role.ValueType, caller: _Caller
) -> dict[str, Any]:
    """StoreEvent throughput (and its ratio to the empty handler, measured right after each round) with
    the event log holding about sizes[0] events, then again after StoreEvents filled it to sizes[1]."""
    stored = _WARM_UP
    out: dict[str, Any] = {}
    calls = max(1, n // GROWTH_ROUNDS)
    for size in sizes:
        if size > stored:
            fill = -(-(size - stored) // BATCH)
            await _batch_round(ingest, fill, role, caller)
            stored += fill * BATCH
        rates, p99s, ratios = [], [], []
        for _ in range(GROWTH_ROUNDS):
            r, lat = await _unary_round(ingest, calls, role, caller)
            b, _ = await _unary_round(empty, calls, role, caller)
            rates.append(r)
            p99s.append(percentile(lat, 99))
            ratios.append(r / b)
        stored += calls * GROWTH_ROUNDS  # each StoreEvent stored one more event
        out[f"req_per_s_at_{size}"], out[f"p99_ms_at_{size}"] = statistics.median(rates), statistics.median(p99s)
        out[f"vs_empty_at_{size}"], out[f"vs_empty_rounds_at_{size}"] = statistics.median(ratios), ratios
    return out


async def _measure(
    ingest: str,
    empty: str,
    n: int,
    batches: int,
    repeats: int,
    role: memory_pb2.Role.ValueType,
    tick: Callable[[], None],
    caller: _Caller,
    growth: tuple[int, int] | None = None,
    event_log: tuple[str, str] | None = None,
) -> StageResult:
    # Warm-up: connections, code paths, the stores' first writes.
    await _unary_round(ingest, _WARM_UP, role, caller)
    await _unary_round(empty, _WARM_UP, role, caller)
    grown = await _growth(ingest, empty, growth, n, role, caller) if growth else None
    rps, p50, p99, b_rps, b_p50, b_p99, ev, b_ev, log_ev = ([] for _ in range(9))
    for _ in range(repeats):
        r, lat = await _unary_round(ingest, n, role, caller)
        rps.append(r)
        p50.append(percentile(lat, 50))
        p99.append(percentile(lat, 99))
        r, lat = await _unary_round(empty, n, role, caller)
        b_rps.append(r)
        b_p50.append(percentile(lat, 50))
        b_p99.append(percentile(lat, 99))
        ev.append(await _batch_round(ingest, batches, role, caller))
        b_ev.append(await _batch_round(empty, batches, role, caller))
        if event_log is not None:
            log_ev.append(
                await event_log_round(*event_log, batches=max(1, batches * BATCH // LOG_BATCH), content=_CONTENT)
            )
        tick()
    res = StageResult(stage="ingest")
    res.figures = [
        Figure("StoreEvent throughput (c=32)", "req/s", summary(rps), "empty handler", summary(b_rps)),
        Figure("StoreEvent p50 latency", "ms", summary(p50), "empty handler", summary(b_p50)),
        Figure("StoreEvent p99 latency", "ms", summary(p99), "empty handler", summary(b_p99)),
        Figure(
            f"StoreEvents batches of {BATCH} (c={BATCH_CONCURRENCY})",
            "events/s",
            summary(ev),
            "empty handler",
            summary(b_ev),
        ),
    ]
    if log_ev:
        res.figures.append(
            Figure(
                f"StoreEvents batches of {BATCH} (c={BATCH_CONCURRENCY}), beside the log alone",
                "events/s",
                summary(ev),
                f"the event log alone (EventLog.insert of {LOG_BATCH} + close, one at a time, no gRPC)",
                summary(log_ev),
            )
        )
    res.keys = {
        "ingest_vs_baseline": res.figures[0].ratio(),
        "store_event_per_s": res.figures[0].value["median"],
        "store_event_p50_ms": res.figures[1].value["median"],
        "store_event_p99_ms": res.figures[2].value["median"],
        "empty_handler_per_s": res.figures[0].baseline["median"],  # type: ignore[index]
        "store_events_per_s": res.figures[3].value["median"],
    }
    if log_ev:
        res.keys["event_log_events_per_s"] = res.figures[4].baseline["median"]  # type: ignore[index]
        res.keys["store_events_vs_event_log"] = res.figures[4].ratio()
    res.detail = {
        "requests_per_repeat": n,
        "batches_per_repeat": batches,
        "repeats": repeats,
        "concurrency": CONCURRENCY,
        "content_bytes": len(_CONTENT.encode()),
        "role": memory_pb2.Role.Name(role),
        "figures": {f.name: {"value": f.value, "baseline": f.baseline} for f in res.figures},
    }
    if grown is not None and growth is not None:
        small, big = growth
        # Each side as a ratio to the empty handler measured just after it, so load drift cancels.
        res.keys["ingest_growth_10x"] = grown[f"vs_empty_at_{big}"] / grown[f"vs_empty_at_{small}"]
        res.detail["growth"] = {
            "log_events": [small, big],
            "requests_per_round": max(1, n // GROWTH_ROUNDS),
            "rounds": GROWTH_ROUNDS,
            **grown,
        }
        res.notes.append(
            f"growth: StoreEvent {grown[f'req_per_s_at_{small}']:.0f} req/s with ~{small:,} events in the log, "
            f"{grown[f'req_per_s_at_{big}']:.0f} with ~{big:,} (vs empty handler {grown[f'vs_empty_at_{small}']:.2f} -> "
            f"{grown[f'vs_empty_at_{big}']:.2f}); measured before the repeats, the median of {GROWTH_ROUNDS} pairs each"
        )
    return res


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


def run_ingest_stage(
    ingest_target: str,
    *,
    quick: bool,
    tick: Callable[[], None],
    pids: dict[str, int] | None = None,
    tenant: str = "bench",
    credential: str = "",
    event_log: tuple[str, str] | None = None,
) -> StageResult:
    """Against a running ingest (the local stack's). Events are user messages, so each StoreEvent also
    enqueues a chain check (the production path); the caller keeps cognition stopped meanwhile. Calls
    go out as `tenant` with `credential` (an API key of it, as production clients mostly send); the
    empty handler receives the same metadata, so the baseline pays the same transport cost. With
    `event_log` (the stack's MongoDB URI and database), StoreEvents is also set beside the event log
    written alone (_event_log.py)."""
    n, batches, repeats = (1000, 10, 3) if quick else (5000, 40, 5)
    growth = None if quick else GROWTH_LOG_EVENTS
    t0 = time.perf_counter()
    pids = dict(pids or {})
    pids["bench client"] = os.getpid()
    cpu0 = {n: _cpu_seconds(p) for n, p in pids.items()}
    with EmptyServer() as empty:
        caller = _Caller(tenant=tenant, credential=credential)
        res = asyncio.run(
            _measure(
                ingest_target,
                f"127.0.0.1:{empty.port}",
                n,
                batches,
                repeats,
                memory_pb2.ROLE_USER,
                tick,
                caller,
                growth,
                event_log,
            )
        )
    wall = time.perf_counter() - t0
    # CPU seconds per process over the whole stage (both servers' rounds), to see what saturates.
    res.detail["cpu_seconds"] = {name: round(_cpu_seconds(p) - cpu0[name], 1) for name, p in pids.items()}
    res.detail["cpu_seconds"]["stage wall"] = round(wall, 1)
    res.notes.append(
        f"{n} StoreEvent + {batches} StoreEvents x {repeats} repeats; user messages of {res.detail['content_bytes']} B; cognition not running"
    )
    res.seconds = time.perf_counter() - t0
    return res


if __name__ == "__main__":
    import uvloop

    # On the event loop the services run on (athena.telemetry.run_service): uvloop serves the empty
    # handler 5-10% faster than asyncio's own loop, so a baseline without it would flatter the ratio.
    uvloop.run(_serve_empty(int(sys.argv[1])))
