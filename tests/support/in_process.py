"""Settings of services that a test runs in its own process, against the servers it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from athena.config import Settings, load_settings
from athena.local import free_port
from athena_cli.stack import StackCredentials

__all__ = ["in_process_settings"]


def in_process_settings(
    *, redis_url: str, mongodb_uri: str, database: str, data_dir: Path, credentials: StackCredentials, **overrides: Any
) -> Settings:
    """Fresh ports on 127.0.0.1 (ingest's chosen when it binds), a Milvus Lite file of its own under `data_dir`, no LLM, the
    credentials' auth settings; `overrides` last."""
    formation_port = free_port()
    values: dict[str, Any] = dict(
        redis_url=redis_url,
        mongodb_uri=mongodb_uri,
        mongodb_database=database,
        vector_index_uri=str(data_dir / f"milvus-{formation_port}.db"),
        formation_grpc_port=formation_port,
        formation_address=f"127.0.0.1:{formation_port}",
        # 0: the OS picks ingest's port when it binds (its bound_port), which formation's start-up
        # (Milvus Lite's own server among it) cannot take first, as it could a port picked in advance.
        ingest_grpc_port=0,
        grpc_bind_host="127.0.0.1",
        llm_base_url="",
        **credentials.settings_overrides(),
    )
    values.update(overrides)
    return load_settings(**values)
