from __future__ import annotations

from collections.abc import Iterator

import pytest

from athena_cli.stack import LocalStack, StackPorts


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """The whole local stack as real processes: redis-server, nx-27017, ingest, cognition, formation (Milvus Lite)."""
    s = LocalStack(
        data_dir=tmp_path_factory.mktemp("stack"),
        ports=StackPorts.free(),
        env={"QUEUE_BACKOFF_BASE_SECONDS": "0.2", "QUEUE_BACKOFF_MAX_SECONDS": "2", "LLM_BASE_URL": ""},
    )
    with s:
        yield s
