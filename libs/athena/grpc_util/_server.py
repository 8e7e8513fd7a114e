"""Assembling and running one Athena gRPC service: health, reflection, metrics port, graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from athena.gc_tuning import freeze_long_lived
from athena.grpc_util._errors import ErrorMappingInterceptor
from athena.grpc_util._metrics import MetricsInterceptor

__all__ = ["DependencyCheck", "ServiceHost"]

log = logging.getLogger("athena.service")


@dataclass(frozen=True)
class DependencyCheck:
    """A named probe of a required dependency; raises (or returns False) when it is unreachable."""

    name: str
    probe: Callable[[], Awaitable[object]]


@dataclass
class ServiceHost:
    """Runs a grpc.aio server with the standard health service (overall and per service name)."""

    name: str
    port: int
    bind_host: str = "0.0.0.0"
    service_names: Sequence[str] = ()
    """Full names of the served services, for health and reflection."""
    register: Callable[[grpc.aio.Server], None] = lambda server: None
    checks: Sequence[DependencyCheck] = ()
    check_interval: float = 2.0
    reflection: bool = True
    grace: float = 20.0
    on_stop: Sequence[Callable[[], Awaitable[None]]] = ()
    """Run after the server stops taking requests and before it exits (e.g. stop workers)."""
    interceptors: Sequence[grpc.aio.ServerInterceptor] = ()
    auth: grpc.aio.ServerInterceptor | None = None
    """Authentication of the served services; innermost, so its refusals go through error mapping."""
    credentials: grpc.ServerCredentials | None = None
    """TLS of the listener; None serves plaintext."""
    max_connection_age: float = 0.0
    """Seconds after which the server ends each client connection (GOAWAY; gRPC adds 10% jitter), so that
    clients resolve the target again and spread over replicas added since; 0: connections live forever."""
    max_connection_age_grace: float = 0.0
    """Seconds calls in flight on a connection ended for its age may still run (0: gRPC's default, unbounded)."""
    server: grpc.aio.Server | None = field(default=None, init=False)
    health: health.aio.HealthServicer = field(default_factory=health.aio.HealthServicer, init=False)
    bound_port: int = field(default=0, init=False)
    _stop: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _healthy: bool | None = field(default=None, init=False)
    _monitor_task: asyncio.Task[None] | None = field(default=None, init=False)

    async def start(self) -> None:
        innermost = [self.auth] if self.auth is not None else []
        self.server = grpc.aio.server(
            interceptors=[MetricsInterceptor(), *self.interceptors, ErrorMappingInterceptor(), *innermost],
            # gRPC binds with SO_REUSEPORT by default: a second process on our port would then share it
            # silently (the kernel splitting connections between two services). Fail to start instead.
            options=[("grpc.so_reuseport", 0), *self._connection_age_options()],
        )
        self.register(self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        if self.reflection:
            reflection.enable_server_reflection(
                [
                    *self.service_names,
                    health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                    reflection.SERVICE_NAME,
                ],
                self.server,
            )
        address = f"{self.bind_host}:{self.port}"
        if self.credentials is not None:
            self.bound_port = self.server.add_secure_port(address, self.credentials)
        else:
            self.bound_port = self.server.add_insecure_port(address)
        await self.server.start()
        await self._check_dependencies()
        self._monitor_task = asyncio.create_task(self._monitor(), name=f"{self.name} health monitor")
        log.info(
            "%s listening on %s:%d (%s)",
            self.name,
            self.bind_host,
            self.bound_port,
            "TLS" if self.credentials else "plaintext",
        )

    def _connection_age_options(self) -> list[tuple[str, int]]:
        if self.max_connection_age <= 0:
            return []
        options = [("grpc.max_connection_age_ms", max(1, round(self.max_connection_age * 1000)))]
        if self.max_connection_age_grace > 0:
            options.append(("grpc.max_connection_age_grace_ms", max(1, round(self.max_connection_age_grace * 1000))))
        return options

    async def _set_health(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", "readiness", *self.service_names):
            await self.health.set(name, status)
        # Liveness answers SERVING while the process runs: a dead dependency is not a reason to restart us.
        await self.health.set("liveness", health_pb2.HealthCheckResponse.SERVING)
        if serving != self._healthy:
            (log.info if serving else log.warning)("%s is %s", self.name, "SERVING" if serving else "NOT_SERVING")
        self._healthy = serving

    async def _check_dependencies(self) -> bool:
        ok = True
        for check in self.checks:
            try:
                result = await asyncio.wait_for(check.probe(), timeout=max(1.0, self.check_interval))
                if result is False:
                    raise RuntimeError("probe returned False")
            except Exception as exc:
                ok = False
                log.warning("%s: dependency %s unreachable: %s", self.name, check.name, exc)
        await self._set_health(ok)
        return ok

    async def _monitor(self) -> None:
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=self.check_interval)
            except TimeoutError:
                await self._check_dependencies()

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        """Serve until SIGTERM/SIGINT (or request_stop), then shut down gracefully."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.request_stop)
        # The service is built (models, clients, caches): take what lives as long as the process out of
        # the collector's full walks before the first call, so no call waits on them (athena.gc_tuning).
        freeze_long_lived(full_collection_first=True, reason=f"{self.name} start-up")
        await self.start()
        await self._stop.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        log.info("%s stopping (grace %.0fs)", self.name, self.grace)
        if self._monitor_task is not None:
            self._monitor_task.cancel()
        await self.health.enter_graceful_shutdown()
        assert self.server is not None
        await self.server.stop(self.grace)
        for hook in self.on_stop:
            try:
                await hook()
            except Exception:
                log.exception("%s: stop hook failed", self.name)
        log.info("%s stopped", self.name)
