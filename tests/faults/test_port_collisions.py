"""Two servers told the same port: the second must fail to start, never share the port silently.

gRPC binds with SO_REUSEPORT by default, so a service started on a port another service already holds
would split the connections with it (clients of one service reaching the other: UNIMPLEMENTED).
"""

from __future__ import annotations

import pytest

from athena.grpc_util import ServiceHost
from athena.local import free_ports
from athena_cli.stack import StackPorts


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
