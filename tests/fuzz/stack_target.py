"""The running stack as the property-based tests see it, and what a write can change in it."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from redis.asyncio import Redis

from athena import keys
from athena.stores import EventLog
from athena_cli.stack import LocalStack
from athena_client import AsyncAthenaClient
from athena_client.memory.v1 import memory_pb2

TENANT = "fuzz"
"""The tenant every fuzzing client holds a credential for."""


@dataclass
class Footprint:
    """What a write to one scope can change: its events in the durable log, its window, and Redis as a whole."""

    scope_events: int
    window: int
    all_events: int
    redis_keys: int


@dataclass
class Target:
    """The running stack as the tests see it: a client, a raw channel and the stores behind."""

    stack: LocalStack
    client: AsyncAthenaClient
    channel: grpc.aio.Channel
    event_log: EventLog
    redis: Redis

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.client.options.metadata)

    async def footprint(self, scope: memory_pb2.Scope) -> Footprint:
        scope_filter = {"tenant_id": scope.tenant_id, "user_id": scope.user_id, "agent_id": scope.agent_id}
        return Footprint(
            scope_events=await self.event_log.count(scope_filter),
            window=await self.redis.llen(
                keys.stm_window_key(keys.scope_id(scope.tenant_id, scope.user_id, scope.agent_id))
            ),
            all_events=await self.event_log.count({}),
            redis_keys=await self.redis.dbsize(),
        )

    async def assert_serving(self) -> None:
        """Every service process is alive, and ingest answers its health check."""
        for name, proc in self.stack.procs.items():
            assert proc.poll() is None, f"{name} exited with {proc.returncode}:\n{self.stack.log_tail(name)}"
        health = await health_pb2_grpc.HealthStub(self.channel).Check(
            health_pb2.HealthCheckRequest(service="readiness"), timeout=10
        )
        assert health.status == health_pb2.HealthCheckResponse.SERVING
