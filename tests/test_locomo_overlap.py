"""`athena eval locomo-overlap`: chains that also hold the turns before a cut, ranked as SearchMemory ranks chains."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import typer
from typer.testing import CliRunner

from athena_formation.search.ranking import Ranking
from athena_lab.commands.locomo_cmd import locomo_overlap
from athena_lab.locomo import Conversation, load_conversation, rank_units
from athena_lab.locomo_overlap import chain_units, overlapped


def _conversation(tmp_path: Path, *, first_session: int = 26, second_session: int = 3) -> Conversation:
    data = {
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "AB"[i % 2], "dia_id": f"D1:{i + 1}", "text": f"turn {i + 1} of the first day"}
                for i in range(first_session)
            ],
            "session_2_date_time": "10:00 am on 12 May, 2023",
            "session_2": [
                {"speaker": "AB"[i % 2], "dia_id": f"D2:{i + 1}", "text": f"turn {i + 1} of the second day"}
                for i in range(second_session)
            ],
        },
        "qa": [],
    }
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(data))
    return load_conversation(path)


def _chains(*spans: tuple[int, int]) -> list[dict[str, object]]:
    """Chains as `--chains-out` writes them, from (first, last) turn numbers of the first session."""
    return [{"turns": [f"D1:{n}" for n in range(a, b + 1)]} for a, b in spans]


def test_a_chain_after_a_force_flush_also_holds_the_turns_before_it_and_other_cuts_do_not(tmp_path: Path) -> None:
    conv = _conversation(tmp_path)
    chains = [*_chains((1, 20), (21, 24), (25, 26)), {"turns": ["D2:1", "D2:2", "D2:3"]}]
    units = chain_units(conv, list(reversed(chains)))  # ordered by first turn whatever the file's order
    assert [u[0] for u in units] == [0, 20, 24, 26]

    flush = overlapped(conv, units, turns=2, at="flush")
    topic = overlapped(conv, units, turns=2, at="topic")
    every = overlapped(conv, units, turns=2, at="every")

    # The 20-event chain ended at a force flush: the chain after it also holds its last two turns.
    assert flush[1] == [18, 19, *units[1]] and flush[2] == units[2]
    # The cut after the 4-event chain is the detector's.
    assert topic[2] == [22, 23, *units[2]] and topic[1] == units[1]
    assert every[1] == flush[1] and every[2] == topic[2]
    # Never across sessions, nothing before the first chain, nothing without an overlap.
    assert flush[3] == topic[3] == every[3] == units[3] and every[0] == units[0]
    assert overlapped(conv, units, turns=0, at="every") == units


def test_a_question_counts_only_when_its_evidence_is_inside_the_top_units(tmp_path: Path) -> None:
    conv = _conversation(tmp_path, first_session=6, second_session=0)
    conv.turns[2].text = "we adopted a greyhound named Pixel"
    conv.questions = [{"question": "what is the greyhound called?", "evidence": ["D1:3", "D1:4"]}]
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(2, 8))
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    question = matrix[:1].copy()  # the question's embedding is the first unit's

    apart = rank_units(conv, [[0, 1, 2], [3, 4, 5]], matrix, question, k=1, ranking=Ranking(), periods=[[]])
    together = rank_units(conv, [[0, 1, 2, 3], [3, 4, 5]], matrix, question, k=1, ranking=Ranking(), periods=[[]])
    both = rank_units(conv, [[0, 1, 2], [3, 4, 5]], matrix, question, k=2, ranking=Ranking(), periods=[[]])

    assert apart.found == [False] and apart.recall == 0.0 and apart.turns_per_hit == [3.0]
    assert together.found == [True] and together.turns_per_hit == [4.0]
    assert both.found == [True] and both.turns_per_hit == [3.0]


def test_the_command_refuses_an_unknown_kind_of_cut_and_a_bad_overlap_naming_the_option(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(locomo_overlap)
    chains = tmp_path / "chains.json"
    chains.write_text("[]")
    base = ["--data", str(tmp_path), "--chains", str(chains)]

    cut = CliRunner().invoke(app, [*base, "--at", "sideways"])
    overlap = CliRunner().invoke(app, [*base, "--overlaps", "2,x"])
    negative = CliRunner().invoke(app, [*base, "--overlaps", "-1"])

    assert cut.exit_code == 2 and "--at" in cut.output
    assert overlap.exit_code == 2 and "--overlaps" in overlap.output
    assert negative.exit_code == 2 and "--overlaps" in negative.output
