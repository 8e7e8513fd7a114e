"""`athena export` and `athena rejections ...`: a user's memories through the public API (docs/api.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table

from athena_cli.api_connection import ApiKey, CaFile, Target, Timeout, Token, api_errors, open_client

__all__ = ["export", "rejections_app"]

rejections_app = typer.Typer(help="Segments the quality gate did not remember.", no_args_is_help=True)
_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True)

Tenant = Annotated[str, typer.Option("--tenant", help="Tenant id.")]
User = Annotated[str, typer.Option("--user", help="User id.")]
Agent = Annotated[str, typer.Option("--agent", help="Agent id (default: every agent of the user).")]


def export(
    tenant: Tenant,
    user: User,
    out: Annotated[
        Path | None, typer.Option("--out", help="JSON Lines file to write (default: standard output).")
    ] = None,
    target: Target = None,
    timeout: Timeout = 60.0,
    api_key: ApiKey = None,
    token: Token = None,
    ca_file: CaFile = None,
) -> None:
    """Everything Athena holds about a user (MemoryService.ExportUser, needs memory:admin): one JSON
    object per line, {"kind": "event" | "chain" | "formation_record" | "summary", ...}, summary last."""
    from google.protobuf.json_format import MessageToDict

    sink = out.open("w", encoding="utf-8") if out is not None else sys.stdout
    counts: dict[str, int] = {}
    try:
        with (
            api_errors("ExportUser"),
            open_client(target, timeout=timeout, api_key=api_key, token=token, ca_file=ca_file) as client,
            Progress(SpinnerColumn(), TextColumn("{task.description}"), console=_err, transient=True) as progress,
        ):
            task = progress.add_task("exporting", total=None)
            for item in client.export_user(tenant, user):
                kind = item.WhichOneof("item") or ""
                counts[kind] = counts.get(kind, 0) + 1
                record = {"kind": kind, **MessageToDict(getattr(item, kind), preserving_proto_field_name=True)}
                sink.write(json.dumps(record, ensure_ascii=False) + "\n")
                progress.update(
                    task, description=f"exporting: {counts.get('event', 0)} events, {counts.get('chain', 0)} chains"
                )
    finally:
        if out is not None:
            sink.close()
    if out is not None:
        _out.print(
            f"exported {tenant}/{user} to {out}: {counts.get('event', 0)} events, {counts.get('chain', 0)} chains, "
            f"{counts.get('formation_record', 0)} formation records"
        )


@rejections_app.command("list")
def list_rejections(
    tenant: Tenant,
    user: User,
    agent: Agent = "",
    target: Target = None,
    timeout: Timeout = 30.0,
    api_key: ApiKey = None,
    token: Token = None,
    ca_file: CaFile = None,
) -> None:
    """The user's rejected segments, newest first, with the quality gate's score and reason."""
    from athena_client import AthenaClient

    with (
        api_errors("ListRejections"),
        open_client(target, timeout=timeout, api_key=api_key, token=token, ca_file=ca_file) as client,
    ):
        rejections = client.list_rejections(AthenaClient.scope(tenant, user, agent))
    table = Table(title=f"rejected segments of {tenant}/{user}")
    for column in ("segment", "agent", "events", "quality", "reason", "topic"):
        table.add_column(column, overflow="fold")
    for r in rejections:
        table.add_row(r.segment_id, r.scope.agent_id, str(r.event_count), f"{r.quality.overall:.2f}", r.reason, r.topic)
    _out.print(table)


@rejections_app.command("admit")
def admit_rejection(
    tenant: Tenant,
    user: User,
    segment: Annotated[str, typer.Option("--segment", help="Segment id (from `athena rejections list`).")],
    agent: Agent = "",
    target: Target = None,
    timeout: Timeout = 60.0,
    api_key: ApiKey = None,
    token: Token = None,
    ca_file: CaFile = None,
) -> None:
    """Form a rejected segment as a chain after all, and print the chain."""
    from athena_client import AthenaClient

    with (
        api_errors("AdmitRejection"),
        open_client(target, timeout=timeout, api_key=api_key, token=token, ca_file=ca_file) as client,
    ):
        chain = client.admit_rejection(AthenaClient.scope(tenant, user, agent), segment)
    _out.print(f"segment {segment} is now chain {chain.id}: {chain.topic} ({chain.event_count} events)")
