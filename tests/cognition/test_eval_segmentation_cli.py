"""The `eval segmentation` command on a few dialogues cut from the shared SuperDialseg file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from athena_lab.commands.eval_cmd import app
from athena_lab.segmentation.segmentation_data import default_data_dir, load_dialogues

runner = CliRunner()


@pytest.fixture(scope="module")
def small_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        source = default_data_dir() / "superseg_validation.jsonl"
    except FileNotFoundError:
        pytest.skip("shared segmentation data not present")
    lines = source.read_text(encoding="utf-8").splitlines()[:5]
    path = tmp_path_factory.mktemp("seg") / "five.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_eval_json_and_predictions(small_jsonl: Path, tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    result = runner.invoke(app, ["segmentation", "--data", str(small_jsonl), "--json", "--predictions-out", str(preds)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for key in ("pk", "wd", "f1", "dialogues", "scorer", "thresholds"):
        assert key in report
    assert report["dialogues"] == 5 and report["scorer"] == "continuity"
    assert 0.0 <= report["pk"] <= 1.0 and 0.0 <= report["f1"] <= 1.0
    assert set(report["thresholds"]) == {"high", "low"}

    dialogues = load_dialogues(small_jsonl)
    rows = [json.loads(line) for line in preds.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [d.id for d in dialogues]
    for row, dialogue in zip(rows, dialogues):
        assert set(row) == {"id", "starts"}
        assert len(row["starts"]) == len(dialogue.utterances)
        assert set(row["starts"]) <= {0, 1} and row["starts"][0] == 0
        # A boundary opens at a user message, or (placement) at the agent message right before one.
        roles = [u.role for u in dialogue.utterances]
        for i, start in enumerate(row["starts"]):
            if start:
                assert roles[i] == "user" or (i + 1 < len(roles) and roles[i + 1] == "user"), (i, roles)


def test_no_placement_opens_boundaries_only_at_user_messages(small_jsonl: Path, tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    args = ["segmentation", "--data", str(small_jsonl), "--json", "--no-placement", "--predictions-out", str(preds)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["placement"] is False
    rows = [json.loads(line) for line in preds.read_text(encoding="utf-8").splitlines()]
    for row, dialogue in zip(rows, load_dialogues(small_jsonl)):
        assert all(u.role == "user" for s, u in zip(row["starts"], dialogue.utterances) if s)


def test_eval_pair_cosine_table_with_overrides(small_jsonl: Path) -> None:
    args = [
        "segmentation",
        "--data",
        str(small_jsonl),
        "--scorer",
        "pair_cosine",
        "--high",
        "0.5",
        "--low",
        "0.3",
        "--max-events",
        "6",
        "--limit",
        "3",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "pk" in result.stdout and "pair_cosine" in result.stdout


def test_every_user_baseline_breaks_at_each_user_message(small_jsonl: Path) -> None:
    result = runner.invoke(app, ["segmentation", "--data", str(small_jsonl), "--json", "--scorer", "every_user"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report["paths"]) <= {"first_message", "low", "force_flush"}


def test_missing_file_fails(tmp_path: Path) -> None:
    result = runner.invoke(app, ["segmentation", "--data", str(tmp_path / "nope.jsonl")])
    assert result.exit_code != 0


def test_a_force_flush_keeps_half_its_size_by_default_and_the_flag_changes_where_it_cuts(
    small_jsonl: Path, tmp_path: Path
) -> None:
    def run(*extra: str) -> tuple[dict[str, object], list[list[int]]]:
        preds = tmp_path / "preds.jsonl"
        args = ["segmentation", "--data", str(small_jsonl), "--json", "--scorer", "pair_cosine", "--high", "-1"]
        result = runner.invoke(
            app, [*args, "--low", "-1", "--max-events", "6", "--predictions-out", str(preds), *extra]
        )
        assert result.exit_code == 0, result.output
        rows = [json.loads(line)["starts"] for line in preds.read_text(encoding="utf-8").splitlines()]
        return json.loads(result.stdout), rows

    # A gate that never breaks: every boundary is a force flush's.
    kept, kept_starts = run()
    seed, seed_starts = run("--flush-keep-events", "0")

    assert kept["flush_keep_events"] == 3 and seed["flush_keep_events"] == 0
    assert kept["paths"].get("force_flush", 0) > 0  # type: ignore[union-attr]
    assert kept_starts != seed_starts  # the seed cuts at the sixth event, the default before it
    refused = runner.invoke(
        app, ["segmentation", "--data", str(small_jsonl), "--max-events", "6", "--flush-keep-events", "6"]
    )
    assert refused.exit_code == 2 and "--flush-keep-events" in refused.output
