"""The formation service running in the test's own process (real MongoDB-wire server, a fresh Milvus
Lite file), with the settings a test asks for."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from athena.config import load_settings
from athena.local import MongoWireServer
from athena_formation.server import Formation, build_formation
from support.formation_data import INTERNAL_TOKEN

__all__ = ["running_formation"]


@asynccontextmanager
async def running_formation(
    mongo_server: MongoWireServer, database: str, data_dir: Path, **overrides: Any
) -> AsyncIterator[Formation]:
    """The formation service in this process: real MongoDB-wire server, a fresh Milvus Lite file;
    `overrides` are settings."""
    settings = load_settings(
        mongodb_uri=mongo_server.url,
        mongodb_database=database,
        vector_index_uri=str(data_dir / "milvus.db"),
        formation_grpc_port=0,  # the OS picks it at bind (host.bound_port): no other worker can take it first
        grpc_bind_host="127.0.0.1",
        llm_base_url="",
        internal_auth_token=INTERNAL_TOKEN,
        **overrides,
    )
    f = await build_formation(settings)
    await f.host.start()
    try:
        yield f
    finally:
        await f.host.shutdown()
