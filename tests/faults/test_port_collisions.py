"""Two servers told the same port: the second must fail to start, never share the port silently; and a
local stack started twice refuses instead of orphaning its first processes.

gRPC binds with SO_REUSEPORT by default, so a service started on a port another service already holds
would split the connections with it (clients of one service reaching the other: UNIMPLEMENTED).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from athena.grpc_util import ServiceHost
from athena.local import free_ports
from athena_cli.stack import LocalStack, StackPorts


async def test_a_service_on_a_port_already_served_fails_to_start_instead_of_sharing_it() -> None:
    first = ServiceHost(name="first", port=0, bind_host="127.0.0.1", reflection=False, grace=0.1)
    await first.start()
    try:
        second = ServiceHost(name="second", port=first.bound_port, bind_host="127.0.0.1", reflection=False, grace=0.1)
        with pytest.raises(RuntimeError, match="Failed to bind"):
            await second.start()
        print(f"\ninjected: a second server on port {first.bound_port}; counted: it refused to start")
    finally:
        assert first.server is not None
        await first.server.stop(0)


def test_free_ports_never_repeat_a_port_within_one_stack() -> None:
    for _ in range(50):
        ports = list(vars(StackPorts.free()).values())
        assert len(set(ports)) == len(ports) == 8
    assert len(set(free_ports(64))) == 64


def test_starting_a_started_stack_again_is_refused_and_orphans_nothing(tmp_path: Path) -> None:
    with LocalStack(
        data_dir=tmp_path, ports=StackPorts.free(), services=("ingest",), env={"LLM_BASE_URL": ""}
    ) as stack:
        first = stack.procs["ingest"]
        with pytest.raises(RuntimeError, match="already started"):
            stack.start()
        with pytest.raises(RuntimeError, match="ingest is already running"):
            stack.start_service("ingest")
        assert stack.procs["ingest"] is first and first.poll() is None
        stack.stop_service("ingest")
        stack.start_service("ingest")  # once stopped, it starts again
        stack.wait_serving("ingest")
        second = stack.procs["ingest"]
        assert second.pid != first.pid
    assert first.poll() is not None and second.poll() is not None
