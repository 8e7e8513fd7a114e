"""The committed protobuf code is what scripts/gen_protos.py generates from protos/ today."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
    stale = [
        str(rel)
        for rel in generated
        if not (ROOT / "libs" / rel).exists() or not filecmp.cmp(tmp_path / rel, ROOT / "libs" / rel, shallow=False)
    ]
    assert stale == [], f"regenerate with `python scripts/gen_protos.py`: stale {stale}"
