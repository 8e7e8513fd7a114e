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


@contextmanager
def eval_stack(*, prefix: str, env: Mapping[str, str], err: Console, keep_data: bool = False) -> Iterator[LocalStack]:
    """A local stack on free ports in a new temporary folder (removed after, unless `keep_data`), its
    queue retrying quickly; `env` as KEY=VALUE settings for its services."""
    from athena_cli.stack import LocalStack, StackPorts

    data_dir = Path(tempfile.mkdtemp(prefix=prefix))
    stack = LocalStack(data_dir=data_dir, ports=StackPorts.free(), env={"QUEUE_BACKOFF_BASE_SECONDS": "0.5", **env})
    try:
        with err.status("starting the local stack..."):
            stack.start()
        yield stack
    finally:
        stack.stop()
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
