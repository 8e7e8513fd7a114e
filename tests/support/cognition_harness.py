"""Running cognition end to end in tests: a recording FormationService, cognition as a real process,
and waiting for a task's result."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc

from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.local import free_port
from athena.queue import TaskResult, wait_for_results
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient

__all__ = [
    "CREDENTIALS",
    "KYOTO",
    "PYTHON",
    "SCOPE",
    "SCOPE_ID",
    "CognitionProcess",
    "RecordingFormation",
    "task_result",
]

SCOPE = AsyncAthenaClient.scope("acme", "alice", "helper")
SCOPE_ID = "acme:alice:helper"
CREDENTIALS = StackCredentials()

# A topic, then a message of another topic (no shared words): a break for any scorer.
KYOTO = [
    ("user", "I'm planning a trip to Kyoto in April. Which neighbourhoods are best for seeing temples?"),
    ("agent", "Higashiyama is ideal: Kiyomizu-dera, Yasaka Shrine and the Philosopher's Path are walkable."),
    ("user", "How many days would you recommend for Kyoto and a day trip to Nara?"),
    ("agent", "Plan four days in Kyoto plus one for Nara."),
]
PYTHON = (
    "user",
    "Different question: my Python script crashes with KeyError: 'user_id' when parsing the webhook payload.",
)


class RecordingFormation(formation_pb2_grpc.FormationServiceServicer):
    """FormationService that records every FormChain and answers only when `release` is set."""

    def __init__(self) -> None:
        self.calls: list[formation_pb2.Segment] = []
        self.release = asyncio.Event()
        self.release.set()
        self.called = asyncio.Event()

    async def FormChain(
        self, request: formation_pb2.FormChainRequest, context: grpc.aio.ServicerContext
    ) -> formation_pb2.FormChainResponse:
        self.calls.append(request.segment)
        self.called.set()
        await self.release.wait()
        return formation_pb2.FormChainResponse(
            outcome=formation_pb2.FORM_OUTCOME_CREATED, chain_id="ch_" + request.segment.id[4:20]
        )


class CognitionProcess:
    def __init__(self, redis_url: str, formation_port: int, log: Path, **extra_env: str) -> None:
        self.port = free_port()
        env = dict(os.environ)
        env.update(
            REDIS_URL=redis_url,
            FORMATION_ADDRESS=f"127.0.0.1:{formation_port}",
            COGNITION_GRPC_PORT=str(self.port),
            COGNITION_METRICS_PORT="0",
            GRPC_BIND_HOST="127.0.0.1",
            QUEUE_LEASE_SECONDS="2",
            QUEUE_BACKOFF_BASE_SECONDS="0.2",
            QUEUE_BACKOFF_MAX_SECONDS="1",
            LLM_BASE_URL="",
            HF_HUB_OFFLINE="1",
            INTERNAL_AUTH_TOKEN=CREDENTIALS.internal_token,
        )
        env.update(extra_env)
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "athena_cognition"], env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def wait_serving(self, timeout: float = 180.0) -> None:
        """Block until the process answers SERVING (the embedding model is loaded by then)."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        deadline = time.monotonic() + timeout
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                assert self.proc.poll() is None, "cognition exited during start-up"
                try:
                    if (
                        stub.Check(health_pb2.HealthCheckRequest(service="readiness"), timeout=1).status
                        == health_pb2.HealthCheckResponse.SERVING
                    ):
                        return
                except grpc.RpcError:
                    pass
                time.sleep(0.2)
        raise TimeoutError("cognition did not become SERVING")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


async def task_result(redis, task_id: str, *, timeout: float = 180.0, scope_id: str = SCOPE_ID) -> TaskResult:  # type: ignore[no-untyped-def]
    """The task's result once it is done (the worker acknowledged it)."""
    result = (await wait_for_results(redis, [(scope_id, task_id)], timeout=timeout, poll=0.2)).get(task_id)
    if result is None or result.get("status") != "done":
        raise TimeoutError(f"no result for {task_id}: {result}")
    return result
