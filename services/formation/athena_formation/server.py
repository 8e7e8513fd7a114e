"""The formation process: FormationService on FORMATION_GRPC_PORT; owns the chains and Milvus."""

from __future__ import annotations

import asyncio

from athena.config import Settings, load_settings
from athena.grpc_util import DependencyCheck, ServiceHost
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.stores import connect_mongo
from athena.telemetry import setup_logging, start_metrics
from athena_formation.servicer import FormationServicer
from athena_formation.vector_index import VectorIndex

__all__ = ["build_formation", "main", "serve"]

SERVICE_NAME = formation_pb2.DESCRIPTOR.services_by_name["FormationService"].full_name


async def build_formation(settings: Settings) -> ServiceHost:
    mongo = connect_mongo(settings)
    vectors = VectorIndex(settings.milvus_uri, collection=settings.milvus_collection, dim=settings.embedding_dim)
    await vectors.open()
    servicer = FormationServicer(settings=settings, mongo=mongo, vectors=vectors)

    async def close() -> None:
        await vectors.close()
        await mongo.close()

    return ServiceHost(
        name="formation",
        port=settings.formation_grpc_port,
        bind_host=settings.grpc_bind_host,
        service_names=[SERVICE_NAME],
        register=lambda server: formation_pb2_grpc.add_FormationServiceServicer_to_server(servicer, server),
        checks=[
            DependencyCheck("mongodb", lambda: mongo.admin.command("ping")),
            DependencyCheck("milvus", vectors.ping),
        ],
        reflection=settings.grpc_reflection,
        grace=settings.grpc_shutdown_grace_seconds,
        on_stop=[close],
    )


async def serve(settings: Settings) -> None:
    host = await build_formation(settings)
    await host.run()


def main() -> None:
    settings = load_settings()
    setup_logging("formation", settings.log_level)
    start_metrics(settings.formation_metrics_port)
    asyncio.run(serve(settings))


if __name__ == "__main__":
    main()
