"""The `athena` command: run the local stack, the demo, services, the dead-letter tools, auth and erasure.

The lab's commands (`athena bench`, `athena load`, `athena eval ...`, `athena train ...`) are not
defined here: the lab (lab/athena_lab) declares them in the `athena.commands` entry-point group
(pyproject.toml) and `register_lab_commands` loads that group with importlib.metadata. Each entry
point names a typer command function, registered under the entry point's name, or a `typer.Typer`
group, added under it. This module never imports the lab: without it (the service image), those
commands are absent from `--help` and invoking one prints what is missing (exit 2).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import os
import signal
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from athena.omp import prefer_passive_omp_wait

prefer_passive_omp_wait()  # before anything loads torch (athena serve, and the lab's bench, eval, train)

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from rich.text import Text  # noqa: E402

from athena.config import SEED_DEPARTURES, Settings, SettingsError, load_settings  # noqa: E402

if TYPE_CHECKING:
    from athena.queue import FairQueue
    from athena_cli.stack import LocalStack

app = typer.Typer(help="Athena: a cognitive memory pipeline for AI agents.", no_args_is_help=True, add_completion=False)
dlq_app = typer.Typer(help="Inspect and requeue dead-lettered tasks.", no_args_is_help=True)
app.add_typer(dlq_app, name="dlq")
console = Console()
err_console = Console(stderr=True)

from athena_cli.api_connection import ApiKey, CaFile, Target, Timeout, Token, api_errors, open_client  # noqa: E402
from athena_cli.commands import auth_cmd, memories_cmd  # noqa: E402

app.add_typer(auth_cmd.app, name="auth")


COMMANDS_GROUP = "athena.commands"
"""Entry-point group through which the lab (or any installed distribution) adds sub-commands."""

LAB_COMMANDS = ("bench", "load", "eval", "train")
"""The lab's command names, only to answer clearly when one is invoked without the lab installed."""


def _lab_missing(name: str, reason: str) -> Any:
    def missing(ctx: typer.Context) -> None:
        err_console.print(
            f"`athena {name}` belongs to the Athena lab (lab/athena_lab: benchmarks, load, evaluation, training), "
            f'which is not installed here ({reason}). From a source checkout: pip install -e ".[dev,lab]"',
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(2)

    return missing


def register_lab_commands(
    target: typer.Typer, entry_points: Iterable[importlib.metadata.EntryPoint] | None = None
) -> list[str]:
    """Add the commands of the `athena.commands` entry points to `target`; returns the names added.

    An entry point that cannot be loaded (the lab not installed, e.g. in the service image whose
    metadata still declares them) and a lab command no entry point declares become hidden commands
    that say so (exit 2) instead of typer's bare "No such command".
    """
    eps = importlib.metadata.entry_points(group=COMMANDS_GROUP) if entry_points is None else entry_points
    added: list[str] = []
    missing: dict[str, str] = {name: "no athena.commands entry point declares it" for name in LAB_COMMANDS}
    for ep in sorted(eps, key=lambda e: e.name):
        try:
            obj = ep.load()
        except ImportError as exc:
            missing[ep.name] = f"{ep.value}: {exc}"
            continue
        if isinstance(obj, typer.Typer):
            target.add_typer(obj, name=ep.name)
        elif callable(obj):
            target.command(ep.name)(obj)
        else:
            raise TypeError(f"entry point {ep.name} = {ep.value} is neither a typer.Typer nor a command function")
        added.append(ep.name)
        missing.pop(ep.name, None)
    settings = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
    for name, reason in missing.items():
        target.command(name, hidden=True, add_help_option=False, context_settings=settings)(_lab_missing(name, reason))
    return added


def _settings() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        err_console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


@app.command()
def serve(service: str = typer.Argument(..., help="ingest | cognition | formation")) -> None:
    """Run one service in the foreground (what each Kubernetes Deployment runs)."""
    if service not in ("ingest", "cognition", "formation"):
        raise typer.BadParameter("must be ingest, cognition or formation", param_hint="SERVICE")
    _settings()
    importlib.import_module(f"athena_{service}.server").main()


@app.command()
def dev(
    data_dir: Path = typer.Option(
        Path("athena-data"), help="Where Redis, the MongoDB-wire server and Milvus Lite keep their files."
    ),
    redis_port: int | None = typer.Option(
        None, envvar="ATHENA_DEV_REDIS_PORT", help="Port of the local redis-server (default 6380)."
    ),
    mongo_port: int | None = typer.Option(
        None, envvar="ATHENA_DEV_MONGO_PORT", help="Port of the local nx-27017 server (default 27018)."
    ),
    ports_from: int | None = typer.Option(
        None,
        "--ports-from",
        metavar="N",
        help="Consecutive ports from N: redis N, nx-27017 N+1, ingest N+2, formation N+3, cognition N+4, "
        "metrics of ingest, formation, cognition N+5..N+7 (--redis-port and --mongo-port still override theirs).",
    ),
    free_ports: bool = typer.Option(
        False, "--free-ports", help="Any free ports, chosen by the system (printed at start)."
    ),
) -> None:
    """Start the local stack in the foreground (Redis, nx-27017, Milvus Lite, the three services). Ctrl-C stops it.

    Without --ports-from or --free-ports: Redis on 6380, nx-27017 on 27018 and the services on their
    configured ports (INGEST_GRPC_PORT and the others; 50051-50053, 9101-9103 by default).
    """
    from athena_cli.stack import LocalStack, StackPorts

    if ports_from is not None and free_ports:
        raise typer.BadParameter("give --ports-from or --free-ports, not both")
    if ports_from is not None:
        try:
            ports = StackPorts.from_base(ports_from)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--ports-from") from None
    elif free_ports:
        ports = StackPorts.free()
    else:
        s = _settings()
        ports = StackPorts(
            ingest=s.ingest_grpc_port,
            formation=s.formation_grpc_port,
            cognition=s.cognition_grpc_port,
            ingest_metrics=s.ingest_metrics_port,
            formation_metrics=s.formation_metrics_port,
            cognition_metrics=s.cognition_metrics_port,
        )
    if redis_port is not None:
        ports.redis = redis_port
    if mongo_port is not None:
        ports.mongo = mongo_port
    stack = LocalStack(data_dir=data_dir, ports=ports)
    with console.status("starting Redis, nx-27017 and the services (the embedding model takes a few seconds)..."):
        try:
            stack.start()
        except BaseException:
            stack.stop()
            raise
    _print_stack(stack)
    console.print("[bold green]Athena is running.[/bold green] Ctrl-C stops everything.")
    stop = {"now": False}

    def _request_stop(*_: object) -> None:
        stop["now"] = True

    signal.signal(signal.SIGINT, _request_stop)
    signal.signal(signal.SIGTERM, _request_stop)
    try:
        while not stop["now"]:
            for name, proc in list(stack.procs.items()):
                if proc.poll() is not None:
                    err_console.print(
                        f"[red]{name} exited ({proc.returncode}); see {stack.data_dir / (name + '.log')}[/red]"
                    )
                    stop["now"] = True
            time.sleep(0.5)
    finally:
        with console.status("stopping..."):
            stack.stop()
        console.print("stopped.")


def _print_stack(stack: LocalStack) -> None:
    """One component a line, each address whole: never wrapped nor cropped by rich, whatever the
    terminal's width, so that it can be copied (a table would fold long paths and keys over lines)."""
    p = stack.ports
    rows = [
        ("ingest (public MemoryService)", f"127.0.0.1:{p.ingest}", f"http://127.0.0.1:{p.ingest_metrics}/metrics"),
        ("formation (FormationService)", f"127.0.0.1:{p.formation}", f"http://127.0.0.1:{p.formation_metrics}/metrics"),
        ("cognition (health)", f"127.0.0.1:{p.cognition}", f"http://127.0.0.1:{p.cognition_metrics}/metrics"),
        ("redis", stack.redis_url, ""),
        ("mongodb (nx-27017)", stack.mongodb_uri, ""),
        ("milvus lite", str(stack.data_dir / "milvus" / "milvus.db"), ""),
        ("logs", str(stack.data_dir), ""),
    ]
    width = max(len(name) for name, _, _ in rows)
    console.print(Text("Athena local stack", style="bold"), soft_wrap=True)
    for name, address, metrics in rows:
        line = Text(f"  {name.ljust(width)}  ")
        line.append(address, style="bold")
        if metrics:
            line.append(f"  metrics {metrics}")
        console.print(line, soft_wrap=True, overflow="ignore", crop=False)
    creds = stack.credentials
    key_line = Text(f"dev tenant {creds.dev_tenant}, API key (this run only): ")
    key_line.append(creds.dev_api_key, style="bold")
    console.print(key_line, soft_wrap=True, overflow="ignore", crop=False)
    console.print(
        "  send it as `authorization: Bearer <key>`, e.g. AthenaClient(..., api_key=...) or ATHENA_API_KEY for `athena forget`",
        soft_wrap=True,
        markup=False,
    )


@app.command()
def demo(
    keep_data: bool = typer.Option(False, help="Keep the demo's data folder instead of deleting it."),
    timeout: float = typer.Option(240.0, help="Seconds to wait for the pipeline to finish."),
) -> None:
    """Start a fresh local stack, replay a sample conversation through the public API, show what came of it."""
    from athena_cli.demo import run_demo
    from athena_cli.stack import LocalStack, StackPorts

    data_dir = Path(tempfile.mkdtemp(prefix="athena-demo-"))
    stack = LocalStack(
        data_dir=data_dir,
        ports=StackPorts.free(),
        env={"QUEUE_BACKOFF_BASE_SECONDS": "0.5", "QUEUE_BACKOFF_MAX_SECONDS": "5"},
    )
    with console.status("starting the local stack (Redis, nx-27017, Milvus Lite, ingest, cognition, formation)..."):
        try:
            stack.start()
        except BaseException:
            stack.stop()
            raise
    try:
        asyncio.run(run_demo(stack, console=console, timeout=timeout))
    finally:
        with console.status("stopping the stack..."):
            stack.stop()
        if keep_data:
            console.print(f"data kept in {data_dir}")
        else:
            import shutil

            shutil.rmtree(data_dir, ignore_errors=True)


@app.command("config")
def config_cmd(markdown: bool = typer.Option(False, help="Print the README's configuration table.")) -> None:
    """Show every setting, its environment variable, default and meaning (and validate the environment)."""
    from athena_cli.config_table import settings_markdown

    if markdown:
        print(settings_markdown())
        return
    s = _settings()
    table = Table(title="Athena settings (from the environment)")
    for col in ("variable", "value", "default", "departs from the seed"):
        table.add_column(col)
    for name, field in Settings.model_fields.items():
        table.add_row(name.upper(), repr(getattr(s, name)), repr(field.default), SEED_DEPARTURES.get(name, ""))
    console.print(table)


def _queue(redis_url: str | None) -> FairQueue:
    from athena.queue import FairQueue
    from athena.redis_util import connect_redis

    return FairQueue(connect_redis(redis_url or _settings().redis_url))


@dlq_app.command("list")
def dlq_list(
    redis_url: str | None = typer.Option(None, help="Redis URL (default: REDIS_URL)."),
    limit: int = typer.Option(100, help="Most entries to show."),
) -> None:
    """List dead-lettered tasks with their attempts and last error."""

    async def run() -> None:
        q = _queue(redis_url)
        tasks = await q.dead_letters(count=limit)
        await q.redis.aclose()
        if not tasks:
            console.print("the dead-letter list is empty")
            return
        table = Table(title=f"dead-lettered tasks ({len(tasks)})")
        for col in ("task id", "type", "scope", "attempts", "last error"):
            table.add_column(col)
        for t in tasks:
            table.add_row(
                t.id, t.type, f"{t.scope.tenant_id}/{t.scope.user_id}/{t.scope.agent_id}", str(t.attempt), t.last_error
            )
        console.print(table)

    asyncio.run(run())


@dlq_app.command("replay")
def dlq_replay(
    task_id: list[str] = typer.Option([], "--task-id", help="Replay only these task ids (repeatable)."),
    all_: bool = typer.Option(False, "--all", help="Replay every dead-lettered task."),
    redis_url: str | None = typer.Option(None, help="Redis URL (default: REDIS_URL)."),
) -> None:
    """Requeue dead-lettered tasks at the tail of their scopes, with a fresh attempt count."""
    if not task_id and not all_:
        raise typer.BadParameter("name --task-id ID (repeatable) or --all")

    async def run() -> int:
        q = _queue(redis_url)
        n = await q.replay_dead_letters(task_ids=set(task_id) if task_id else None)
        await q.redis.aclose()
        return n

    console.print(f"requeued {asyncio.run(run())} task(s)")


RECEIPT_FIELDS = (
    "redis_keys",
    "queued_tasks",
    "dead_letters",
    "task_results",
    "events",
    "chains",
    "formation_records",
    "embeddings",
)


@app.command()
def forget(
    tenant: str = typer.Option(..., "--tenant", help="Tenant id."),
    user: str = typer.Option(..., "--user", help="User id (all of the user's agents are erased)."),
    target: Target = None,
    timeout: Timeout = 60.0,
    api_key: ApiKey = None,
    token: Token = None,
    ca_file: CaFile = None,
) -> None:
    """Erase everything Athena holds about a user of a tenant (MemoryService.ForgetUser, needs the
    memory:admin scope) and print the receipt."""
    with (
        api_errors("ForgetUser"),
        open_client(target, timeout=timeout, api_key=api_key, token=token, ca_file=ca_file) as client,
    ):
        receipt = client.forget_user(tenant, user)
    table = Table(title=f"erased {tenant}/{user}")
    table.add_column("store")
    table.add_column("erased", justify="right")
    for name in RECEIPT_FIELDS:
        table.add_row(name, str(getattr(receipt, name)))
    console.print(table)
    console.print(f"tombstone at {receipt.erased_at.ToDatetime().isoformat()}Z")


app.command("export")(memories_cmd.export)
app.add_typer(memories_cmd.rejections_app, name="rejections")
register_lab_commands(app)  # after the product's own commands, so that `--help` lists those first


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    app()


if __name__ == "__main__":
    main()
