"""Reproducible installs: constraints.txt pins what this environment holds, and every install uses it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from athena_cli.stack import StackPorts

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"


def test_constraints_pin_exactly_the_installed_version_of_every_package_setup_installs() -> None:
    # scripts/lock_constraints.py --check rebuilds the file from this environment (athena-memory[dev,lab]
    # and all it requires) and compares: a dependency added, dropped or upgraded without a new lock fails.
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lock_constraints.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_constraints_are_exact_pins_of_third_party_packages_only() -> None:
    pins = [line for line in CONSTRAINTS.read_text().splitlines() if line and not line.startswith("#")]
    assert pins, "empty constraints"
    for pin in pins:
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*==[0-9][0-9A-Za-z.!]*", pin), pin  # no +local label, no URL
    names = {pin.split("==")[0] for pin in pins}
    assert {"torch", "grpcio", "pymilvus", "transformers", "pytest", "scikit-learn"} <= names
    assert not names & {"athena-memory", "athena-client"}, "our own distributions come from the checkout"
    assert "torch==2.13.0" in pins  # matches the CPU build 2.13.0+cpu too


def test_setup_script_installs_every_package_with_the_constraints() -> None:
    text = (ROOT / "scripts" / "setup.sh").read_text()
    assert re.search(r"^CONSTRAINTS=constraints\.txt$", text, re.M)
    assert re.search(r'^PIP=\(\.venv/bin/python -m pip install -c "\$CONSTRAINTS"\)$', text, re.M)
    installs = [line.strip() for line in text.splitlines() if not line.lstrip().startswith("#") and "install" in line]
    pip_installs = [line for line in installs if "pip install" in line or '"${PIP[@]}"' in line]
    # The only unconstrained pip install is pip's own upgrade; everything else goes through PIP (-c).
    unconstrained = [line for line in pip_installs if "${PIP[@]}" not in line and not line.startswith("PIP=")]
    assert unconstrained == [".venv/bin/python -m pip install -q --upgrade pip >/dev/null"], unconstrained
    used = [line.strip() for line in text.splitlines() if line.strip().startswith('"${PIP[@]}"')]
    assert any("torch==2.13.0" in line for line in used) and any('".[dev,lab]"' in line for line in used), used
    # Progress: numbered steps, and the long downloads (torch, the project) are not silenced.
    assert re.findall(r"^step (\d) ", text, re.M) == ["1", "2", "3", "4", "5"]
    for line in used:
        if "torch" in line or ".[dev,lab]" in line:
            assert " -q" not in line, line


def test_docker_image_installs_with_the_constraints() -> None:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    runs = [line.strip() for line in text.splitlines() if line.strip().startswith("RUN ") and "pip install" in line]
    for run in runs:
        for install in re.findall(r"pip install[^&]*", run):
            if "--no-deps" in install or "download.pytorch.org" in install:
                continue  # the project itself (no dependencies), and torch from PyTorch's CPU index
            assert "-c constraints.txt" in install, install
    assert sum("COPY constraints.txt" in line for line in text.splitlines()) == 2  # build and build-ingest
    assert "!constraints.txt" in (ROOT / ".dockerignore").read_text().splitlines()


def test_stack_ports_from_a_base_are_consecutive_in_a_fixed_order() -> None:
    ports = StackPorts.from_base(41000)
    assert ports == StackPorts(
        redis=41000,
        mongo=41001,
        ingest=41002,
        formation=41003,
        cognition=41004,
        ingest_metrics=41005,
        formation_metrics=41006,
        cognition_metrics=41007,
    )
    assert StackPorts.from_base(65528).cognition_metrics == 65535
    for bad in (0, 65529):
        with pytest.raises(ValueError, match="not all valid TCP ports"):
            StackPorts.from_base(bad)


def test_athena_dev_refuses_ports_from_together_with_free_ports() -> None:
    from typer.testing import CliRunner

    from athena_cli.main import app

    wide = {"COLUMNS": "300"}  # typer's error box would fold the message otherwise
    result = CliRunner().invoke(app, ["dev", "--ports-from", "41000", "--free-ports"], env=wide)
    assert result.exit_code == 2 and "not both" in result.output
    result = CliRunner().invoke(app, ["dev", "--ports-from", "65530"], env=wide)
    assert result.exit_code == 2 and "valid TCP ports" in result.output
