"""Regenerate the Python code for protos/ (committed; tests/test_generated_code.py checks staleness).

Each top-level folder of protos/ is generated into the source root of the distribution that owns it:
protos/athena_client/ (the public API, package athena.memory.v1) into clients/python, the client
distribution, which the server imports too; protos/athena/ (the internal contracts) into libs. Every
module is generated once, so each .proto file is registered once in protobuf's descriptor pool.

Usage: python scripts/gen_protos.py [--out DIR]   (DIR: a root standing for the repository's, e.g. to
compare; the code goes to DIR/clients/python and DIR/libs)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc_tools
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "protos"
# Top-level folder of protos/ (= top-level Python package) -> source root it is generated into.
SOURCE_ROOTS = {
    "athena_client": Path("clients/python"),
    "athena": Path("libs"),
}


def proto_files(top: str | None = None) -> list[Path]:
    """The .proto files of one top-level folder (all when None)."""
    return sorted((PROTO_ROOT / top if top else PROTO_ROOT).rglob("*.proto"))


def generate(out: Path) -> None:
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    # The mypy-protobuf plugins live beside this interpreter, which need not be on PATH.
    bindir = Path(sys.executable).parent
    unowned = set(proto_files()) - {p for top in SOURCE_ROOTS for p in proto_files(top)}
    if unowned:
        sys.exit(f"no source root for {sorted(str(p.relative_to(PROTO_ROOT)) for p in unowned)}")
    for top, source_root in SOURCE_ROOTS.items():
        dest = out / source_root
        dest.mkdir(parents=True, exist_ok=True)
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={dest}",
            f"--grpc_python_out={dest}",
            f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
            f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
            f"--mypy_out={dest}",
            f"--mypy_grpc_out={dest}",
            *(str(p.relative_to(PROTO_ROOT)) for p in proto_files(top)),
        ]
        if protoc.main(args) != 0:
            sys.exit(f"protoc failed on protos/{top}")
        # Every generated folder below the top-level package (hand-written, not generated) must be a
        # regular package.
        for proto in proto_files(top):
            folder = dest / proto.relative_to(PROTO_ROOT).parent
            while folder != dest / top:
                (folder / "__init__.py").touch(exist_ok=True)
                folder = folder.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT)
    generate(parser.parse_args().out)


if __name__ == "__main__":
    main()
