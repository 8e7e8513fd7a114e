"""The formation service with test-only faults at ChainFormer's step boundaries (a test entry point).

Run as a script (`python tests/support/formation_with_faults.py`) with formation's usual environment
plus:

    ATHENA_TEST_FAULTS        comma-separated `step:action`, fired in order, one per matching step
                              boundary (steps: plan_recorded, chain_written, vector_written, indexed,
                              events_marked). Actions:
                              - `milvus_down`: stop this process's Milvus Lite server between two
                                Milvus calls, so the next call fails for real (the client
                                reconnects on the call after);
                              - `exit`: os._exit(137) right there, as a SIGKILL would.
    ATHENA_TEST_FAULTS_LOG    file listing the faults fired so far, one line each; a restarted process
                              skips them, so a fault list survives an `exit`.

Production code is untouched: this wraps `athena_formation.server.build_formation` and sets the
ChainFormer's `step_hook`, the same seam the in-process formation tests use.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from athena.config import Settings
from athena.telemetry import run_service

if TYPE_CHECKING:
    from athena_cli.stack import LocalStack

__all__ = ["start_formation_with_faults"]


def start_formation_with_faults(stack: LocalStack, faults: list[str], *, fired_log: Path) -> None:
    """Start this script as the stack's formation process (registered in `stack.procs`)."""
    env = {**stack.service_env(), "ATHENA_TEST_FAULTS": ",".join(faults), "ATHENA_TEST_FAULTS_LOG": str(fired_log)}
    with open(stack.data_dir / "formation.log", "ab") as log:
        stack.procs["formation"] = subprocess.Popen(
            [sys.executable, __file__],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _fired(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


async def _serve(settings: Settings) -> None:
    from milvus_lite.server_manager import server_manager_instance

    from athena_formation.server import build_formation

    faults = [f.split(":", 1) for f in os.environ.get("ATHENA_TEST_FAULTS", "").split(",") if f]
    log = Path(os.environ["ATHENA_TEST_FAULTS_LOG"])
    formation = await build_formation(settings)

    async def hook(step: str) -> None:
        n = _fired(log)
        if n >= len(faults) or faults[n][0] != step:
            return
        action = faults[n][1]
        with log.open("a") as f:  # noqa: ASYNC230 - written before a possible os._exit below, on purpose blocking
            f.write(f"{step}:{action}\n")
        print(f"fault injected at {step}: {action}", flush=True)
        if action == "exit":
            os._exit(137)
        if action == "milvus_down":
            # Between two Milvus calls, as a server that goes down does: Milvus Lite's release closes
            # its collection without waiting for a call in flight, and an upsert acknowledged then is
            # lost, which no real outage does (an acknowledged write to a server is kept).
            async with formation.vectors._lock:
                await asyncio.to_thread(server_manager_instance.release_server, settings.vector_index_uri)
        else:
            raise ValueError(f"unknown fault action {action!r}")

    formation.former.step_hook = hook
    await formation.host.run()


if __name__ == "__main__":
    run_service("formation", _serve)
