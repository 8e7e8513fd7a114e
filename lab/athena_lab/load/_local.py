"""`athena load` without --target: a LocalStack of its own on free ports, removed afterwards."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from athena_client import ClientOptions
from athena_lab.load._run import LoadTarget

__all__ = ["LOCAL_STACK_ENV", "local_target"]

LOCAL_STACK_ENV = {
    # No LLM: the run measures Athena, not a remote model's latency (chains form through the fallback).
    "LLM_BASE_URL": "",
    # Short retries, so a transient failure during the run settles within the drain wait.
    "QUEUE_BACKOFF_BASE_SECONDS": "0.2",
    "QUEUE_BACKOFF_MAX_SECONDS": "2",
}


@contextmanager
def local_target(*, timeout: float = 30.0, on_status: Callable[[str], None] = lambda _: None) -> Iterator[LoadTarget]:
    """Start Redis, nx-27017 and the three services on free ports; stop them and delete their data after."""
    from athena_cli.stack import LocalStack, StackPorts

    data_dir = tempfile.mkdtemp(prefix="athena-load-")
    stack = LocalStack(data_dir=Path(data_dir), ports=StackPorts.free(), env=LOCAL_STACK_ENV)
    try:
        on_status("starting the local stack (Redis, nx-27017, Milvus Lite, ingest, cognition, formation)")
        stack.start()
        yield LoadTarget(
            client_for=lambda tenant: stack.client(tenant_id=tenant, options=ClientOptions(timeout=timeout)),
            redis_url=stack.redis_url,
            mongodb_uri=stack.mongodb_uri,
            mongodb_database=stack.mongodb_database,
        )
    finally:
        on_status("stopping the local stack")
        stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
