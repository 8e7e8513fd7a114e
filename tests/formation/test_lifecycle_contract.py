"""The public contract names exactly the lifecycle values formation writes on a chain."""

from __future__ import annotations

import re
from pathlib import Path

from athena_formation.lifecycle.heat import LIFECYCLES, lifecycle_of

PROTO = Path(__file__).resolve().parents[2] / "protos" / "athena_client" / "memory" / "v1" / "memory.proto"


def _documented_lifecycles() -> list[str]:
    text = PROTO.read_text(encoding="utf-8")
    comment = re.search(r"//([^\n]*)\n\s*string lifecycle = \d+;", text)
    assert comment is not None, "Chain.lifecycle lost its comment"
    names = re.findall(r"\b(hot|warm|cooling|cold|archived|new|frozen|dormant)\b", comment.group(1))
    return list(dict.fromkeys(names))


def test_the_proto_comment_lists_the_lifecycle_values_formation_writes() -> None:
    written = {lifecycle_of(heat / 100) for heat in range(0, 101)} | {lifecycle_of(0.5, archived=True)}

    assert written == set(LIFECYCLES)
    assert _documented_lifecycles() == list(LIFECYCLES)
