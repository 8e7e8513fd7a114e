"""`athena export` and `athena rejections list / admit` against the in-process stack (support.memories_stack):
what a person runs to see and act on a user's memories."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import Result
from support.memories_stack import ALICE, Memories
from typer.testing import CliRunner

from athena_cli.main import app


async def _athena(memories: Memories, *args: str) -> Result:
    """The command in a thread (its client is synchronous; the servers run on this event loop)."""
    token = memories.stack.credentials.token_for("acme")
    argv = [*args, "--target", memories.stack.target, "--token", token]
    return await asyncio.to_thread(CliRunner().invoke, app, argv, env={"COLUMNS": "200"})


async def test_athena_export_writes_every_record_as_json_lines_ending_with_the_summary(
    memories: Memories, tmp_path: Path
) -> None:
    out = tmp_path / "alice.jsonl"
    result = await _athena(memories, "export", "--tenant", "acme", "--user", "alice", "--out", str(out))
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds.count("event") == 10 and kinds.count("chain") == 2 and kinds.count("formation_record") == 3
    assert kinds[-1] == "summary" and records[-1]["events"] == "10"  # int64 as JSON strings (proto3 JSON)
    assert {r["content"] for r in records if r["kind"] == "event"} >= {"haha ok thanks!"}
    assert "10 events, 2 chains, 3 formation records" in result.output


async def test_athena_rejections_lists_the_rejected_segment_and_admits_it_as_a_chain(memories: Memories) -> None:
    listed = await _athena(memories, "rejections", "list", "--tenant", "acme", "--user", "alice")
    assert listed.exit_code == 0, listed.output
    assert "seg_small_talk" in listed.output and "coder" in listed.output

    admitted = await _athena(
        memories, "rejections", "admit", "--tenant", "acme", "--user", "alice", "--segment", "seg_small_talk"
    )
    assert admitted.exit_code == 0, admitted.output
    (chain,) = [
        c for c in await memories.client.list_chains(ALICE) if "seg_small_talk" not in c.id and len(c.event_ids) == 2
    ]
    assert f"is now chain {chain.id}" in admitted.output


async def test_a_refused_cli_call_names_the_status_and_exits_1(memories: Memories) -> None:
    result = await _athena(memories, "rejections", "admit", "--tenant", "acme", "--user", "alice", "--segment", "nope")
    assert result.exit_code == 1
    assert "AdmitRejection failed (NOT_FOUND)" in result.output
