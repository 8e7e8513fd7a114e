"""`athena load`: drive a stack with many tenants, one of them noisy, and verify that nothing was lost.

Exit code 0 when every acknowledged event is in the durable log and every acknowledged user message
was decided; 1 when anything was lost (or nothing was acknowledged at all); 2 on bad options.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from athena_lab.load import LoadTarget

__all__ = ["load"]

_out = Console()
_err = Console(stderr=True)


class _RichProgress:
    """One bar per step: each phase's sending (seconds) and its wait for decisions (user messages)."""

    def __init__(self, progress: Progress) -> None:
        self._p = progress
        self._phase = ""
        self._duration = 0.0
        self._bar: TaskID | None = None
        self._drain: TaskID | None = None

    def status(self, text: str) -> None:
        self._p.console.print(f"[dim]{text}...[/dim]")

    def phase(self, name: str, duration: float) -> None:
        self._phase = name
        self._duration = duration
        self._drain = None
        label = "without the noisy tenant" if name == "baseline" else "with the noisy tenant"
        self._bar = self._p.add_task(f"{name}: sending ({label})", total=duration)

    def sent(self, seconds: float) -> None:
        if self._bar is not None:
            self._p.update(self._bar, completed=seconds)

    def draining(self, done: int, total: int) -> None:
        if self._drain is None:
            if self._bar is not None:
                self._p.update(self._bar, completed=self._duration)
            self._drain = self._p.add_task(f"{self._phase}: user messages decided", total=max(total, 1))
        self._p.update(self._drain, completed=done if total else 1)

    def verifying(self) -> None:
        self.status("looking up every acknowledged event in the durable log")


class _Credential(TypedDict, total=False):
    """AsyncAthenaClient's credential arguments for one tenant (none: a stack run with AUTH_DISABLED=true)."""

    api_key: str
    bearer_token: str


def _credentials(
    api_keys: list[str], jwt_secret: str, jwt_audience: str
) -> tuple[tuple[str, ...], Callable[[str], _Credential]]:
    """(tenant ids named by --api-key, tenant -> AsyncAthenaClient credential arguments) for a running stack."""
    from athena.auth import mint_hs256

    keys: dict[str, str] = {}
    for entry in api_keys:
        tenant, sep, key = entry.partition("=")
        if not sep or not tenant or not key:
            raise typer.BadParameter("expected TENANT=KEY", param_hint="--api-key")
        keys[tenant] = key
    if len(keys) == 1:
        raise typer.BadParameter("name at least two tenants (the last one is the noisy one)", param_hint="--api-key")

    def credential(tenant: str) -> _Credential:
        if tenant in keys:
            return {"api_key": keys[tenant]}
        if jwt_secret:
            return {"bearer_token": mint_hs256(jwt_secret, tenant, audience=jwt_audience, ttl_seconds=24 * 3600)}
        return {}  # a stack run with AUTH_DISABLED=true

    return tuple(keys), credential


@contextmanager
def _remote_target(
    target: str,
    *,
    redis_url: str,
    mongodb_uri: str,
    api_keys: list[str],
    jwt_secret: str,
    jwt_audience: str,
    tls: bool,
    timeout: float,
) -> Iterator[LoadTarget]:
    from athena.config import load_settings
    from athena_client import AsyncAthenaClient, ClientOptions
    from athena_lab.load import LoadTarget

    settings = load_settings()
    tenant_ids, credential = _credentials(api_keys, jwt_secret, jwt_audience)
    yield LoadTarget(
        client_for=lambda tenant: AsyncAthenaClient(
            target, options=ClientOptions(timeout=timeout), tls=tls, **credential(tenant)
        ),
        redis_url=redis_url or settings.redis_url,
        mongodb_uri=mongodb_uri or settings.mongodb_uri,
        mongodb_database=settings.mongodb_database,
        tenant_ids=tenant_ids,
    )


def load(
    tenants: Annotated[
        int, typer.Option(help="Tenants in all, the noisy one included (the last --api-key tenant with --api-key).")
    ] = 5,
    users_per_tenant: Annotated[int, typer.Option(help="Users of each tenant (one conversation each).")] = 2,
    rate: Annotated[
        float, typer.Option(help="Events per second of each quiet user (about half are user messages).")
    ] = 0.1,
    noisy_factor: Annotated[
        float, typer.Option(help="Each noisy user sends this many times a quiet user's rate.")
    ] = 100.0,
    duration: Annotated[
        float, typer.Option(help="Seconds of traffic per phase (baseline, then with the noisy tenant).")
    ] = 30.0,
    drain_timeout: Annotated[
        float, typer.Option(help="Longest wait after each phase for its user messages to be decided.")
    ] = 600.0,
    max_in_flight: Annotated[int, typer.Option(help="Most StoreEvent calls in flight at once.")] = 256,
    target: Annotated[
        str | None, typer.Option(help="Ingest address host:port of a running stack (default: start a local stack).")
    ] = None,
    redis_url: Annotated[str, typer.Option(help="Redis of --target, to read task results (default: REDIS_URL).")] = "",
    mongodb_uri: Annotated[
        str, typer.Option(help="MongoDB of --target, to check the event log (default: MONGODB_URI).")
    ] = "",
    api_key: Annotated[
        list[str],
        typer.Option(
            "--api-key",
            envvar="ATHENA_API_KEYS",
            help="TENANT=KEY credential for --target (repeatable; the variable holds them space-separated); the run then uses these tenants, the last one noisy.",
        ),
    ] = [],  # noqa: B006
    jwt_secret: Annotated[
        str, typer.Option(envvar="ATHENA_JWT_SECRET", help="HS256 secret to mint a token per tenant for --target.")
    ] = "",
    jwt_audience: Annotated[
        str, typer.Option(help="Audience of minted tokens (AUTH_JWT_AUDIENCE of the target).")
    ] = "athena",
    tls: Annotated[bool, typer.Option("--tls", help="Connect to --target over TLS (system CAs).")] = False,
    timeout: Annotated[float, typer.Option(help="Deadline of one StoreEvent attempt, in seconds.")] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Drive the stack with many tenants and users, one tenant noisy, then verify nothing acknowledged was lost."""
    from athena_lab.load import LoadConfig, local_target, render_report, run_load

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        config = LoadConfig(
            tenants=tenants,
            users_per_tenant=users_per_tenant,
            rate=rate,
            noisy_factor=noisy_factor,
            duration=duration,
            drain_timeout=drain_timeout,
            max_in_flight=max_in_flight,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f}"),
        TimeElapsedColumn(),
        console=_err,
        transient=False,
    ) as bar:
        progress = _RichProgress(bar)
        if target:
            where = _remote_target(
                target,
                redis_url=redis_url,
                mongodb_uri=mongodb_uri,
                api_keys=api_key,
                jwt_secret=jwt_secret,
                jwt_audience=jwt_audience,
                tls=tls,
                timeout=timeout,
            )
        else:
            where = local_target(timeout=timeout, on_status=progress.status)
        with where as load_target:
            report = asyncio.run(run_load(config, load_target, progress))
    report["target"] = target or "local stack"
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        render_report(report, _out)
    if not report["acknowledged"]:
        _err.print(
            f"[red]no event was acknowledged (calls refused or failed: {report['errors']}); nothing was measured[/red]"
        )
        raise typer.Exit(1)
    if report["lost"]:
        raise typer.Exit(1)
