"""Write constraints.txt: the exact version of every third-party distribution the project installs.

    .venv/bin/python scripts/lock_constraints.py           # regenerate from the current .venv
    .venv/bin/python scripts/lock_constraints.py --check   # exit 1 (and show the difference) when stale

The list is what `scripts/setup.sh` installs: athena-memory with its `dev` and `lab` extras and,
transitively, everything they require (as `pip freeze --exclude-editable` lists it, without what was
installed by hand and with the setuptools that torch requires), read from the environment this runs in
(`.venv`). The project's own distributions (athena-memory, athena-client: the checkout) are not in it.
scripts/setup.sh, the Dockerfile and so CI install with `-c constraints.txt`, so a fresh machine gets
the versions this one tested. To upgrade a dependency: install the new version into .venv, run the
tests, then run this and commit constraints.txt.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.metadata as metadata
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
PROJECT = "athena-memory"
EXTRAS = frozenset({"dev", "lab"})
"""The extras scripts/setup.sh installs (`pip install -e ".[dev,lab]"`)."""
OWN = frozenset({canonicalize_name("athena-memory"), canonicalize_name("athena-client")})

HEADER = """\
# Exact versions of every third-party distribution Athena installs (athena-memory[dev,lab] and all it
# requires). Generated from .venv by `.venv/bin/python scripts/lock_constraints.py`: do not edit by hand.
# Used as `pip install -c constraints.txt` by scripts/setup.sh (so CI) and the Dockerfile. torch has no
# local label (+cpu): `==2.13.0` also matches the CPU build 2.13.0+cpu, from wherever it is installed.
"""


def installed_closure(project: str = PROJECT, extras: frozenset[str] = EXTRAS) -> dict[NormalizedName, str]:
    """Canonical name -> installed version of every distribution `project[extras]` requires, transitively
    (markers evaluated for this interpreter), the project itself included."""
    found: dict[NormalizedName, tuple[str, frozenset[str]]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(project, extras)]
    while todo:
        name, wanted = todo.pop()
        dist = metadata.distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        done = found.get(key)
        if done is not None and wanted <= done[1]:
            continue
        found[key] = (dist.version, (done[1] if done else frozenset()) | wanted)
        environments = [{"extra": extra} for extra in sorted(wanted)] or [{"extra": ""}]
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not any(requirement.marker.evaluate(e) for e in environments):
                continue
            todo.append((requirement.name, frozenset(requirement.extras)))
    return {key: version for key, (version, _) in found.items()}


def public_version(version: str) -> str:
    """The version without its local label: 2.13.0+cpu -> 2.13.0 (PEP 440: `==2.13.0` matches both)."""
    return Version(version).public


def render(closure: dict[NormalizedName, str]) -> str:
    lines = [f"{name}=={public_version(version)}" for name, version in sorted(closure.items()) if name not in OWN]
    return HEADER + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only compare: exit 1 when constraints.txt is stale")
    parser.add_argument("--output", type=Path, default=CONSTRAINTS, help="file to write or check")
    args = parser.parse_args(argv)
    text = render(installed_closure())
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current == text:
            return 0
        sys.stdout.writelines(
            difflib.unified_diff(
                current.splitlines(keepends=True), text.splitlines(keepends=True), str(args.output), "this environment"
            )
        )
        print(f"{args.output} is stale: run `.venv/bin/python scripts/lock_constraints.py`", file=sys.stderr)
        return 1
    args.output.write_text(text)
    print(f"wrote {args.output} ({text.count(chr(10)) - HEADER.count(chr(10))} distributions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
