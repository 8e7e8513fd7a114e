"""Redis stopped and started again (same port, same data dir) while users talk.

Assumption, as in production: Redis persists with AOF (the local RedisServer runs `--appendonly yes
--appendfsync everysec`). A stop is a clean shutdown, which fsyncs the AOF, so every write Redis
acknowledged survives; a crash (SIGKILL) could lose the last second of writes with `everysec`, which
a deployment that must not lose acknowledged events rules out with `appendfsync always` or a replica.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from support.pipeline_ledger import (
    StackFactory,
    conversation,
    drive,
    log_matches,
    metric_total,
    patient_options,
    read_ledger,
    wait_decided,
)

pytestmark = pytest.mark.slow

TENANT = "faults-redis"
USERS = 4
RESTARTS = 2


async def test_redis_restart_under_load_services_reconnect_and_every_acknowledged_event_is_decided(
    fault_stack: StackFactory,
) -> None:
    with fault_stack() as stack:
        assert stack.redis is not None
        pids = {name: proc.pid for name, proc in stack.procs.items()}
        talks = {f"user{i}": conversation(user_index=i, topics=4) for i in range(USERS)}
        sending = asyncio.create_task(
            drive(stack, tenant_id=TENANT, conversations=talks, pace=0.15, options=patient_options())
        )
        injected: list[str] = []
        for n in range(RESTARTS):
            await asyncio.sleep(0.8)
            began = time.monotonic()
            await asyncio.to_thread(stack.redis.stop)
            await asyncio.sleep(1.0)  # requests arrive while it is down
            await asyncio.to_thread(stack.redis.start)
            injected.append(f"restart {n + 1}: redis down for {time.monotonic() - began:.1f}s")
        acked, errors = await sending
        await wait_decided(f"redis://127.0.0.1:{stack.ports.redis}/0", acked, timeout=120)
        ledger = await read_ledger(stack, tenant_id=TENANT, acked=acked)
        alive = {name: (proc.pid, proc.poll()) for name, proc in stack.procs.items()}
        refused = metric_total(
            stack, "ingest", "memos_grpc_server_handled_total", grpc_method="StoreEvent", grpc_code="UNAVAILABLE"
        )
        worker_waits = log_matches(stack, "cognition", "redis unavailable")

    print("\ninjected:", *injected, sep="\n  ")
    print(
        f"counted: {len(acked)} acknowledged, {len(errors)} refused after retries; {refused:.0f} StoreEvent attempts answered "
        f"UNAVAILABLE during the restarts (retried by the client); {worker_waits} worker reconnect waits; services {alive}"
    )
    print("counted:", ledger.summary())
    # Services reconnected by themselves: same processes, none exited.
    assert {name: pid for name, (pid, code) in alive.items() if code is None} == pids
    assert not errors
    assert refused >= 1, "no StoreEvent met the outage: the load did not overlap the restarts"
    assert ledger.problems() == []
