"""The task result records the task's queue wait: from the envelope's enqueued_at to this attempt's claim."""

from __future__ import annotations

import asyncio

from redis.asyncio import Redis

from athena import keys
from athena.queue import FairQueue, chain_check_task
from athena_client.memory.v1 import memory_pb2

HELD_BACK_S = 0.3


async def test_an_acknowledged_task_records_at_least_the_time_it_sat_in_the_queue(redis: Redis) -> None:
    queue = FairQueue(redis)
    scope = memory_pb2.Scope(tenant_id="acme", user_id="u", agent_id="a")
    await queue.enqueue(chain_check_task(scope=scope, event_id="ev1"))
    await asyncio.sleep(HELD_BACK_S)  # the task waits at least this long before any claim

    lease = await queue.claim("w1", timeout=1.0)
    assert lease is not None
    assert await queue.ack(lease, {"decision": "continue"})

    result = await queue.result(keys.scope_id("acme", "u", "a"), lease.task.id)
    assert result is not None and result["status"] == "done" and result["decision"] == "continue"
    assert result["queue_wait_ms"] >= HELD_BACK_S * 1000
