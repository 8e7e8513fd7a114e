"""An evaluation's local stack whose port was taken before its service bound it (by another run on
the same machine) is started again on other ports instead of failing the evaluation."""

from __future__ import annotations

import dataclasses
import socket

import pytest
from rich.console import Console

from athena_cli.stack import StackPorts
from athena_lab.commands._eval_run import eval_stack

pytestmark = pytest.mark.slow


def test_a_stack_whose_service_port_was_taken_starts_again_on_other_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = int(squatter.getsockname()[1])
        chosen: list[StackPorts] = []
        free = StackPorts.free

        def first_with_cognition_taken() -> StackPorts:
            ports = free()
            chosen.append(dataclasses.replace(ports, cognition=taken) if not chosen else ports)
            return chosen[-1]

        monkeypatch.setattr(StackPorts, "free", staticmethod(first_with_cognition_taken))
        with eval_stack(prefix="athena-ports-", env={}, err=Console(stderr=True), timeout=60) as stack:
            assert len(chosen) == 2 and stack.ports == chosen[1] and stack.ports.cognition != taken
            assert all(stack.procs[name].poll() is None for name in ("ingest", "formation", "cognition"))
