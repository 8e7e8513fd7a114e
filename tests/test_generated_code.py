"""The committed protobuf code is what scripts/gen_protos.py generates from protos/ today, each module
in one place only: the public API in the client distribution (clients/python), the internal contracts
in libs/. A second copy of a generated module would register its .proto file twice."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = ("clients/python", "libs", "services", "lab")


def _generated_files(root: Path) -> set[Path]:
    return {
        p.relative_to(root)
        for source_root in SOURCE_ROOTS
        for p in (root / source_root).rglob("*_pb2*.py*")
        if "__pycache__" not in p.parts
    }


def test_generated_protobuf_code_is_up_to_date(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    generated = sorted(
        p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    assert generated, "the generator produced nothing"
    assert {p.parts[0] for p in generated} <= {"clients", "libs"}
    stale = [
        str(rel)
        for rel in generated
        if not (ROOT / rel).exists() or not filecmp.cmp(tmp_path / rel, ROOT / rel, shallow=False)
    ]
    assert stale == [], f"regenerate with `python scripts/gen_protos.py`: stale {stale}"
    # No generated module the generator does not produce today (a leftover of a moved .proto).
    assert sorted(map(str, _generated_files(ROOT) - set(generated))) == []


def test_the_public_api_is_generated_into_the_client_and_registered_once() -> None:
    code = """
import athena.internal.v1.formation_pb2
import athena_client
from athena_client.memory.v1 import memory_pb2
from google.protobuf import descriptor_pool
pool = descriptor_pool.Default()
event = pool.FindMessageTypeByName("athena.memory.v1.Event")
assert event.file.name == "athena_client/memory/v1/memory.proto", event.file.name
assert memory_pb2.Event.DESCRIPTOR is event
assert pool.FindServiceByName("athena.memory.v1.MemoryService").full_name == "athena.memory.v1.MemoryService"
print(memory_pb2.__file__)
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert Path(out.strip()).is_relative_to(ROOT / "clients" / "python" / "athena_client")
