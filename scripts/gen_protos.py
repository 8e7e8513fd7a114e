"""Regenerate the Python code for protos/ into libs/ (committed; tests/test_generated_code.py checks staleness).

Usage: python scripts/gen_protos.py [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc_tools
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "protos"
DEFAULT_OUT = ROOT / "libs"


def proto_files() -> list[Path]:
    return sorted(PROTO_ROOT.rglob("*.proto"))


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    # The mypy-protobuf plugins live beside this interpreter, which need not be on PATH.
    bindir = Path(sys.executable).parent
    files = [str(p.relative_to(PROTO_ROOT)) for p in proto_files()]
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *files,
    ]
    if protoc.main(args) != 0:
        sys.exit("protoc failed")
    # Every generated folder must be a regular package.
    for proto in proto_files():
        folder = out / proto.relative_to(PROTO_ROOT).parent
        while folder != out:
            (folder / "__init__.py").touch(exist_ok=True)
            folder = folder.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    generate(parser.parse_args().out)


if __name__ == "__main__":
    main()
