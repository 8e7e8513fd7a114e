"""Fault-injection tests: the whole stack as real processes, a fault injected, the stores audited.

Every stack here embeds through the fake OpenAI-compatible server (tests/support/fake_openai.py:
deterministic bag-of-words vectors), so a service starts in seconds instead of loading a
sentence-transformers model, and the topic breaks of the generated conversations are predictable.
Retries, leases and backoffs are shortened so a fault and its recovery fit in seconds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.fake_openai import FakeOpenAI
from support.pipeline_ledger import StackFactory

from athena_cli.stack import LocalStack, StackPorts

FAST_RECOVERY_ENV: Mapping[str, str] = {
    "CHAIN_SCORER": "pair_cosine",
    "STM_MAX_EVENTS_BEFORE_FLUSH": "6",
    "QUEUE_BACKOFF_BASE_SECONDS": "0.2",
    "QUEUE_BACKOFF_MAX_SECONDS": "1.0",
    "QUEUE_LEASE_SECONDS": "3",
    "MEMORY_WORKER_COUNT": "2",
    "GRPC_SHUTDOWN_GRACE_SECONDS": "2",
    "MONGODB_TIMEOUT_MS": "2000",
    "MEMORY_OS_MTM_QUALITY_MODE": "fast",
    "MTM_QUALITY_MIN_SCORE": "0.3",
    "QUEUE_MAX_OUTAGE_ATTEMPTS": "200",
    "LLM_BASE_URL": "",
}
"""Settings of every fault stack: short leases and backoffs, small segments, chains that pass the gate.
With the backoff capped at 1 s, the outage budget must be far above the default 20 attempts to ride out
a service restart on a loaded machine (the default budget is sized for the default 60 s cap)."""


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def fault_stack(tmp_path: Path, fake_openai: FakeOpenAI) -> StackFactory:
    """`with fault_stack(**env) as stack:` the local stack on free ports, embedding through the fake server.

    `services`: the services started (a test may start one itself, e.g. formation with faults)."""

    @contextmanager
    def start(*, services: tuple[str, ...] = ("ingest", "cognition", "formation"), **env: str) -> Iterator[LocalStack]:
        settings = {
            **FAST_RECOVERY_ENV,
            "EMBEDDING_PROVIDER": "openai",
            "EMBEDDING_BASE_URL": fake_openai.base_url,
            "EMBEDDING_API_KEY": "test",
            "EMBEDDING_MODEL": "fake-embedding",
            **env,
        }
        for attempt in range(1, 4):
            stack = LocalStack(
                data_dir=tmp_path / f"stack{attempt}", ports=StackPorts.free(), env=settings, services=services
            )
            try:
                stack.start()
                break
            except RuntimeError as exc:
                stack.stop()
                # A free port can be taken by another process before a service binds it (a busy CI
                # machine): start again on fresh ports; any other failure is the test's.
                if not ("Address already in use" in str(exc) or "Failed to bind" in str(exc)) or attempt == 3:
                    raise
        try:
            yield stack
        finally:
            stack.stop()

    return start
