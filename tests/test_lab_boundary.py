"""The product never imports the lab; the `athena` command finds the lab's commands through entry points.

Product: libs/ and services/ (what the service image installs). Lab: lab/athena_lab (benchmarks, load,
evaluation, training), and scikit-learn with it. The CLI (athena_cli.main) loads the lab's
sub-commands from the `athena.commands` entry-point group; without the lab they are absent, and
invoking one says what is missing.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

from athena_cli.main import LAB_COMMANDS, app, register_lab_commands

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = (ROOT / "libs", ROOT / "services")
LAB_ONLY = {"athena_lab", "sklearn"}
PRODUCT_COMMANDS = {"serve", "dev", "demo", "config", "forget", "dlq", "auth"}


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            roots.update(
                arg.value.split(".")[0]
                for arg in node.args[:1]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
    return roots


def test_no_product_module_imports_the_lab_or_sklearn() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_roots(path) & LAB_ONLY)
        for base in PRODUCT
        for path in base.rglob("*.py")
        if _imported_roots(path) & LAB_ONLY
    }
    assert offenders == {}


def test_the_services_and_the_cli_load_without_the_lab() -> None:
    """In a fresh interpreter with no `athena.commands` entry point: nothing of the lab or sklearn is loaded."""
    code = (
        "import importlib.metadata, json, sys\n"
        "importlib.metadata.entry_points = lambda **kw: []\n"
        "import athena_cli.main, athena_ingest.server, athena_cognition.server, athena_formation.server\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'athena_lab', 'sklearn'})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_the_lab_declares_its_commands_as_entry_points() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="athena.commands")}
    assert set(eps) == set(LAB_COMMANDS)
    assert all(value.startswith("athena_lab.") for value in eps.values())


def test_athena_lists_the_product_and_the_lab_commands() -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    listed = {line.strip("│ ").split(" ")[0] for line in result.output.splitlines() if line.startswith("│ ")}
    assert PRODUCT_COMMANDS | set(LAB_COMMANDS) <= listed
    for args in (["eval", "--help"], ["train", "--help"]):
        result = CliRunner(env={"COLUMNS": "200"}).invoke(app, args)
        assert result.exit_code == 0, result.output
    assert "segmentation" in CliRunner().invoke(app, ["eval", "--help"]).output
    assert "locomo" in CliRunner().invoke(app, ["eval", "--help"]).output
    assert "opener" in CliRunner().invoke(app, ["train", "--help"]).output


def test_without_the_lab_its_commands_are_absent_and_say_so() -> None:
    cli = typer.Typer(no_args_is_help=True)

    @cli.command()
    def serve() -> None:
        """A product command."""

    # As in the service image: the metadata declares `bench`, but athena_lab is not installed.
    gone = importlib.metadata.EntryPoint("bench", "athena_lab_not_installed.commands:bench", "athena.commands")
    assert register_lab_commands(cli, [gone]) == []

    runner = CliRunner(env={"COLUMNS": "200"})
    help_text = runner.invoke(cli, ["--help"]).output
    assert "serve" in help_text and not any(name in help_text for name in LAB_COMMANDS)
    for args in (
        ["bench", "--quick"],
        ["eval", "segmentation", "--data", "x.jsonl"],
        ["train", "opener"],
        ["load", "--help"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert f"athena {args[0]}" in result.output and "lab" in result.output and ".[dev,lab]" in result.output
    assert "athena_lab_not_installed" in runner.invoke(cli, ["bench"]).output  # the entry point that failed is named


def test_a_loaded_entry_point_registers_a_command_or_a_group() -> None:
    cli = typer.Typer(no_args_is_help=True)
    eps = [
        importlib.metadata.EntryPoint("bench", "athena_lab.commands.bench_cmd:bench", "athena.commands"),
        importlib.metadata.EntryPoint("eval", "athena_lab.commands.eval_cmd:app", "athena.commands"),
    ]
    assert register_lab_commands(cli, eps) == ["bench", "eval"]
    runner = CliRunner(env={"COLUMNS": "200"})
    assert "--stages" in runner.invoke(cli, ["bench", "--help"]).output
    assert "segmentation" in runner.invoke(cli, ["eval", "--help"]).output
    result = runner.invoke(cli, ["train"])  # declared by no entry point here
    assert result.exit_code == 2 and "athena train" in result.output
