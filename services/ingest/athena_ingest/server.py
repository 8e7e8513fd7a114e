"""The ingest process: MemoryService on INGEST_GRPC_PORT."""

from __future__ import annotations

import asyncio

from athena.auth import public_auth_interceptor, server_credentials
from athena.config import Settings
from athena.formation_client import FormationClient
from athena.grpc_util import DependencyCheck, ServiceHost
from athena.memory.v1 import memory_pb2, memory_pb2_grpc
from athena.queue import FairQueue, RetryPolicy
from athena.redis_util import connect_redis
from athena.stm import ShortTermWindow
from athena.stores import EventLog, connect_mongo
from athena.telemetry import run_service
from athena_ingest.erasure import Eraser
from athena_ingest.ingestor import Ingestor
from athena_ingest.servicer import MemoryServicer
from athena_ingest.validation import Limits

__all__ = ["build_ingest", "main", "serve"]

SERVICE = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"]
SERVICE_NAME = SERVICE.full_name


async def build_ingest(settings: Settings) -> tuple[ServiceHost, Ingestor]:
    # Configuration first: a service without a credential source must not even connect to its stores.
    auth = public_auth_interceptor(settings, [SERVICE])
    credentials = server_credentials(settings)
    redis = connect_redis(settings.redis_url)
    mongo = connect_mongo(settings)
    event_log = EventLog(mongo, settings.mongodb_database)
    window = ShortTermWindow(redis, max_events=settings.stm_window_max_events)
    queue = FairQueue(
        redis,
        lease_seconds=settings.queue_lease_seconds,
        result_ttl_seconds=settings.queue_result_ttl_seconds,
        retry=RetryPolicy(max_attempts=settings.queue_max_attempts),
    )
    ingestor = Ingestor(
        event_log=event_log,
        window=window,
        queue=queue,
        redis=redis,
        limits=Limits.from_settings(settings),
        enqueue_checks=settings.enable_memory_workers,
    )
    formation = FormationClient.from_settings(settings, timeout=10.0)
    eraser = Eraser(redis=redis, queue=queue, mongo=mongo, database=settings.mongodb_database, formation=formation)
    servicer = MemoryServicer(ingestor=ingestor, window=window, formation=formation, eraser=eraser)

    async def close() -> None:
        await formation.close()
        await redis.aclose()
        await mongo.close()

    host = ServiceHost(
        name="ingest",
        port=settings.ingest_grpc_port,
        bind_host=settings.grpc_bind_host,
        service_names=[SERVICE_NAME],
        register=lambda server: memory_pb2_grpc.add_MemoryServiceServicer_to_server(servicer, server),
        checks=[
            DependencyCheck("redis", redis.ping),
            DependencyCheck("mongodb", lambda: mongo.admin.command("ping")),
        ],
        reflection=settings.grpc_reflection,
        grace=settings.grpc_shutdown_grace_seconds,
        on_stop=[close],
        auth=auth,
        credentials=credentials,
    )
    return host, ingestor


async def serve(settings: Settings) -> None:
    host, ingestor = await build_ingest(settings)
    repair = asyncio.create_task(ingestor.repair_forever())
    try:
        await host.run()
    finally:
        repair.cancel()


def main() -> None:
    run_service("ingest", serve)


if __name__ == "__main__":
    main()
