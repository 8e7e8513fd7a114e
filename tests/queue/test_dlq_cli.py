"""`athena dlq list` and `athena dlq replay` against a real Redis (the command runs its own event loop, so in a thread)."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner

from athena import keys
from athena.local import RedisServer
from athena.queue import FairQueue, RetryPolicy, chain_check_task
from athena_cli.main import app
from athena_client.memory.v1 import memory_pb2

SCOPE = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="helper")


async def _dead_letter(redis, event_id: str) -> None:
    queue = FairQueue(redis, retry=RetryPolicy(max_attempts=1))
    await queue.enqueue(chain_check_task(scope=SCOPE, event_id=event_id))
    lease = await queue.claim("cli-test", timeout=1)
    assert lease is not None
    await queue.fail(lease, "formation is unavailable: UNAVAILABLE")


async def test_dlq_list_shows_dead_letters_and_replay_requeues_them(redis, redis_server: RedisServer) -> None:
    await _dead_letter(redis, "ev_one")
    runner = CliRunner(env={"COLUMNS": "250"})

    listed = await asyncio.to_thread(runner.invoke, app, ["dlq", "list", "--redis-url", redis_server.url])
    assert listed.exit_code == 0, listed.output
    assert "chk-ev_one" in listed.output and "formation is unavailable" in listed.output

    refused = await asyncio.to_thread(runner.invoke, app, ["dlq", "replay", "--redis-url", redis_server.url])
    assert refused.exit_code != 0 and "--all" in refused.output

    replayed = await asyncio.to_thread(
        runner.invoke, app, ["dlq", "replay", "--task-id", "chk-ev_one", "--redis-url", redis_server.url]
    )
    assert replayed.exit_code == 0 and "requeued 1 task" in replayed.output
    assert await redis.llen(keys.QUEUE_DEAD_LETTERS) == 0
    assert await redis.llen(keys.scope_queue_key("acme:alice:helper")) == 1
    assert await redis.lrange(keys.DISPATCHER, 0, -1) == [b"acme:alice:helper"]
