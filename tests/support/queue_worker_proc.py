"""A worker process for the queue's multi-process tests: a real WorkerPool in its own interpreter.

    python queue_worker_proc.py REDIS_URL [--count 2] [--name NAME] [--lease 1.0] [--sleep 0.05]
        [--hang TASK_ID ...] [--crash-on TASK_ID ...] [--crash-after-blmove] [--max-deliveries N]

Its handler records every task start and end by RPUSHing one JSON line to the `--log` list:
{"event": "start"|"end", "pid", "worker"?, "task", "scope", "attempt", "t"}. When the pool is up it
records {"event": "ready", "pid", "workers": [...]}, so a test can wait for it.

Modes for crash tests:
  --hang ID           the handler records the start of task ID, then sleeps until the process is killed
  --crash-on ID       the handler records the start of task ID, then SIGKILLs its own process
  --crash-after-blmove  the first claim moves a scope off the dispatcher into this worker's claiming
                        list, then SIGKILLs the process before the claim script can lease it
SIGTERM stops the pool gracefully (`--grace` seconds) and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import time
from collections.abc import Mapping
from typing import Any

from redis.asyncio import Redis

from athena import keys
from athena.internal.v1 import task_pb2
from athena.queue import ExponentialFullJitter, FairQueue, Lease, RetryPolicy, WorkerPool

LOG_KEY = "test:queue:log"


class CrashAfterBlmoveQueue(FairQueue):
    """Dies like a worker hit by SIGKILL right between BLMOVE and the claim script."""

    async def claim(self, worker_id: str, *, timeout: float = 1.0) -> Lease | None:
        moved = await self.redis.blmove(keys.DISPATCHER, keys.claiming_key(worker_id), timeout, "LEFT", "RIGHT")
        if moved is None:
            return None
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url", help="redis URL")
    p.add_argument("--count", type=int, default=2, help="workers in the pool")
    p.add_argument("--name", default=None, help="worker id prefix (ids are NAME-0, NAME-1, ...)")
    p.add_argument("--log", default=LOG_KEY, help="Redis list the handler records into")
    p.add_argument("--lease", type=float, default=1.0, help="lease seconds")
    p.add_argument("--claim-timeout", type=float, default=0.2)
    p.add_argument("--maintenance", type=float, default=0.1, help="maintenance interval seconds")
    p.add_argument("--task-timeout", type=float, default=30.0)
    p.add_argument("--sleep", type=float, default=0.0, help="seconds each task takes")
    p.add_argument("--hang", action="append", default=[], metavar="TASK_ID")
    p.add_argument("--crash-on", action="append", default=[], metavar="TASK_ID")
    p.add_argument("--crash-after-blmove", action="store_true")
    p.add_argument("--max-attempts", type=int, default=3)
    p.add_argument("--max-deliveries", type=int, default=0)
    p.add_argument("--grace", type=float, default=5.0)
    return p.parse_args(argv)


async def run(args: argparse.Namespace) -> None:
    redis = Redis.from_url(args.url)
    pid = os.getpid()
    retry = RetryPolicy(
        max_attempts=args.max_attempts,
        backoff=ExponentialFullJitter(base=0.05, cap=0.2),
        max_deliveries=args.max_deliveries,
    )
    queue_cls = CrashAfterBlmoveQueue if args.crash_after_blmove else FairQueue
    queue = queue_cls(redis, lease_seconds=args.lease, retry=retry)

    async def record(event: str, task: task_pb2.Task) -> None:
        s = task.scope
        line = {
            "event": event,
            "pid": pid,
            "task": task.id,
            "scope": keys.scope_id(s.tenant_id, s.user_id, s.agent_id),
            "attempt": task.attempt,
            "t": time.time(),
        }
        await redis.rpush(args.log, json.dumps(line))

    async def handler(task: task_pb2.Task) -> Mapping[str, Any]:
        await record("start", task)
        if task.id in args.crash_on:
            os.kill(pid, signal.SIGKILL)
        if task.id in args.hang:
            await asyncio.sleep(3600)
        if args.sleep:
            await asyncio.sleep(args.sleep)
        await record("end", task)
        return {"pid": pid}

    pool = WorkerPool(
        queue,
        handler,
        count=args.count,
        task_timeout=args.task_timeout,
        claim_timeout=args.claim_timeout,
        maintenance_interval=args.maintenance,
        name=args.name,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await pool.start()
    await redis.rpush(args.log, json.dumps({"event": "ready", "pid": pid, "workers": pool.worker_ids}))
    await stop.wait()
    await pool.stop(grace=args.grace)
    await redis.aclose()


def main(argv: list[str] | None = None) -> None:
    asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    main()
