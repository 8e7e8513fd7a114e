"""`athena eval locomo` options: a session per agent, and settings passed to the stack (no stack started)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from athena_lab.commands.locomo_cmd import locomo, parse_env
from athena_lab.locomo import AGENT, LocomoReport, load_conversation, replay_parts


def _conversation(tmp_path: Path) -> Path:
    data = {
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": f"D1:{i}", "text": f"one {i}"} for i in (1, 2, 3)],
            "session_2_date_time": "10:00 am on 12 May, 2023",
            "session_2": [{"speaker": "B", "dia_id": f"D2:{i}", "text": f"two {i}"} for i in (1, 2)],
        },
        "qa": [],
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    return path


def test_each_session_is_replayed_under_its_own_agent_and_by_default_all_under_one(tmp_path: Path) -> None:
    conv = load_conversation(_conversation(tmp_path))

    per_session = replay_parts(conv, agent_per_session=True)
    one = replay_parts(conv, agent_per_session=False)

    assert [(agent, [t.dia_id for t in turns]) for agent, turns in per_session] == [
        ("s1", ["D1:1", "D1:2", "D1:3"]),
        ("s2", ["D2:1", "D2:2"]),
    ]
    assert [(agent, len(turns)) for agent, turns in one] == [(AGENT, 5)]


def test_env_pairs_are_parsed_and_a_pair_without_equals_is_refused() -> None:
    assert parse_env(["SESSION_MERGE_ACROSS_AGENTS=false", "A=x=y", "A=z"]) == {
        "SESSION_MERGE_ACROSS_AGENTS": "false",
        "A": "z",
    }
    with pytest.raises(typer.BadParameter):
        parse_env(["SESSION_MERGE_ACROSS_AGENTS"])


def test_the_command_hands_the_settings_to_the_stack_and_the_option_to_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    class FakeStack:
        def __init__(self, *, env: dict[str, str], **_: object) -> None:
            seen["env"] = env
            self.client = object()
            self.redis_url = "redis://unused"

        def start(self, *, timeout: float = 180.0) -> None: ...

        def stop(self) -> None: ...

    async def fake_run(*_: object, ranking: Any, agent_per_session: bool, **__: object) -> LocomoReport:
        seen["agent_per_session"] = agent_per_session
        seen["size_prior"] = ranking.size_prior
        return LocomoReport(k=5)

    monkeypatch.setattr("athena_cli.stack.LocalStack", FakeStack)
    monkeypatch.setattr("athena_lab.locomo.run_locomo", fake_run)
    monkeypatch.setattr("athena.embeddings.LocalEmbedder", lambda: None)
    monkeypatch.setattr("athena.embeddings.make_query_embedder", lambda *_, **__: None)
    app = typer.Typer()
    app.command()(locomo)

    result = CliRunner().invoke(
        app,
        [
            "--data",
            str(_conversation(tmp_path)),
            "--json",
            "--agent-per-session",
            "--env",
            "SESSION_MERGE_ACROSS_AGENTS=false",
            "--env",
            "SEARCH_SIZE_PRIOR=0.25",
        ],
    )

    assert result.exit_code == 0, result.output
    assert seen["env"]["SESSION_MERGE_ACROSS_AGENTS"] == "false"
    assert seen["agent_per_session"] is True
    assert seen["size_prior"] == 0.25  # the baselines rank with the stack's settings
