"""What the evaluations share: a local stack to replay through, one progress bar per label, and how a
report is printed (one JSON object, or a table of measures)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

if TYPE_CHECKING:
    from athena_cli.stack import LocalStack

__all__ = ["eval_stack", "measures_table", "print_json", "progress_bars"]


START_ATTEMPTS = 3
"""Stacks started for one evaluation at most: the ports chosen free can be taken by another process
before a service binds them (parallel runs, other tests), which only another choice of ports mends."""


@contextmanager
def eval_stack(
    *, prefix: str, env: Mapping[str, str], err: Console, keep_data: bool = False, timeout: float = 180.0
) -> Iterator[LocalStack]:
    """A local stack on free ports in a new temporary folder (removed after, unless `keep_data`), its
    queue retrying quickly; `env` as KEY=VALUE settings for its services. A stack whose service found
    its port taken is stopped and started again on other ports (START_ATTEMPTS); `timeout`: seconds
    for each service to serve."""
    from athena_cli.stack import PORT_TAKEN, LocalStack, StackPorts

    data_dir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        for attempt in range(1, START_ATTEMPTS + 1):
            stack = LocalStack(
                data_dir=data_dir / f"stack-{attempt}",
                ports=StackPorts.free(),
                env={"QUEUE_BACKOFF_BASE_SECONDS": "0.5", **env},
            )
            try:
                with err.status("starting the local stack..."):
                    stack.start(timeout=timeout)
            except (TimeoutError, RuntimeError) as exc:
                stack.stop()
                if PORT_TAKEN not in str(exc) or attempt == START_ATTEMPTS:
                    raise
                err.print(f"a port of the local stack was taken; starting it again on other ports ({exc})")
                continue
            try:
                yield stack
            finally:
                stack.stop()
            return
    finally:
        if not keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def progress_bars(err: Console) -> Iterator[Callable[[str, int, int], None]]:
    """`update(label, done, total)`: one bar per label, gone when the block ends."""
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=err, transient=True
    ) as progress:
        bars: dict[str, TaskID] = {}

        def update(label: str, done: int, total: int) -> None:
            if label not in bars:
                bars[label] = progress.add_task(label, total=total)
            progress.update(bars[label], completed=done)

        yield update


def print_json(doc: object) -> None:
    """The report as one indented JSON object on stdout."""
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def measures_table(title: str) -> Table:
    """An empty two-column table, "measure" and "value", for a report's rows."""
    table = Table(title=title)
    table.add_column("measure")
    table.add_column("value")
    return table
