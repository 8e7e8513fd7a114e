"""The ingest process: MemoryService on INGEST_GRPC_PORT."""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from athena.auth import public_auth_interceptor, server_credentials
from athena.config import Settings
from athena.formation_client import FormationClient
from athena.grpc_util import DependencyCheck, ServiceHost
from athena.queue import FairQueue, RetryPolicy
from athena.redis_util import connect_redis
from athena.stm import ShortTermWindow
from athena.stores import EventLog, connect_mongo
from athena.telemetry import run_service
from athena.tombstones import MongoTombstones
from athena_client.memory.v1 import memory_pb2, memory_pb2_grpc
from athena_ingest.erasure import Eraser
from athena_ingest.export import UserExporter
from athena_ingest.ingestor import Ingestor
from athena_ingest.open_events import OpenEvents
from athena_ingest.persistence_rewrite import PersistenceRewrite
from athena_ingest.servicer import MemoryServicer
from athena_ingest.validation import Limits
from athena_ingest.window_flush import WindowFlushes

__all__ = ["IngestParts", "build_ingest", "build_ingest_parts", "main", "serve"]

SERVICE = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"]
SERVICE_NAME = SERVICE.full_name


class IngestParts(NamedTuple):
    host: ServiceHost
    ingestor: Ingestor
    persistence_rewrite: PersistenceRewrite | None
    """Rewrites Redis's files after erasures (its loop runs in `serve`); None when ERASURE_AOF_REWRITE is off."""


async def build_ingest(settings: Settings) -> tuple[ServiceHost, Ingestor]:
    parts = await build_ingest_parts(settings)
    return parts.host, parts.ingestor


async def build_ingest_parts(settings: Settings) -> IngestParts:
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
    persistence_rewrite = (
        PersistenceRewrite(redis, min_interval=settings.erasure_aof_rewrite_min_interval_seconds)
        if settings.erasure_aof_rewrite
        else None
    )
    eraser = Eraser(
        redis=redis,
        queue=queue,
        window=window,
        event_log=event_log,
        tombstones=MongoTombstones(mongo, settings.mongodb_database),
        formation=formation,
        persistence_rewrite=persistence_rewrite,
    )
    flushes = WindowFlushes(window=window, queue=queue, enabled=settings.enable_memory_workers)
    servicer = MemoryServicer(
        ingestor=ingestor,
        window=window,
        formation=formation,
        eraser=eraser,
        flushes=flushes,
        open_events=OpenEvents(redis),
        exporter=UserExporter(event_log=event_log, window=window, formation=formation),
        redis=redis,
    )

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
    return IngestParts(host, ingestor, persistence_rewrite)


async def serve(settings: Settings) -> None:
    host, ingestor, persistence_rewrite = await build_ingest_parts(settings)
    repair = asyncio.create_task(ingestor.repair_forever())
    rewrite = asyncio.create_task(persistence_rewrite.run_forever()) if persistence_rewrite is not None else None
    backfill = asyncio.create_task(ingestor.backfill_metadata_pairs_forever())
    try:
        await host.run()
    finally:
        repair.cancel()
        if rewrite is not None:
            rewrite.cancel()
        backfill.cancel()


def main() -> None:
    run_service("ingest", serve)


if __name__ == "__main__":
    main()
