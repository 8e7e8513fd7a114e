"""`athena eval told-facts`: facts told in passing among help-desk topics, asked back in other words."""

from __future__ import annotations

import asyncio
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from athena_lab.commands._eval_run import eval_stack, measures_table, print_json, progress_bars
from athena_lab.commands.locomo_cmd import parse_env

__all__ = ["told_facts"]


class PartChoice(str, Enum):
    SEEN = "seen"
    HELD_OUT = "held_out"
    HELD_OUT_2 = "held_out_2"
    LANGUAGES = "languages"
    LANGUAGES_2 = "languages_2"
    NEEDS = "needs"
    NEEDS_2 = "needs_2"
    LANGUAGES_3 = "languages_3"
    PREFERENCES = "preferences"
    AGENT_QUERIES = "agent_queries"
    AGENT_QUERIES_2 = "agent_queries_2"
    LANGUAGES_4 = "languages_4"
    LANGUAGES_5 = "languages_5"
    LANGUAGES_6 = "languages_6"
    LANGUAGES_7 = "languages_7"
    ANSWERS = "answers"
    ANSWERS_2 = "answers_2"
    EVERYDAY = "everyday"
    REQUESTS = "requests"
    CHAT = "chat"
    MIXED = "mixed"
    CORRECTIONS = "corrections"
    CORRECTIONS_2 = "corrections_2"
    HELD_OUT_3 = "held_out_3"
    HELD_OUT_4 = "held_out_4"
    HELD_OUT_5 = "held_out_5"
    HELD_OUT_6 = "held_out_6"
    HELD_OUT_7 = "held_out_7"
    HELD_OUT_8 = "held_out_8"
    HELD_OUT_9 = "held_out_9"
    HELD_OUT_10 = "held_out_10"
    HELD_OUT_11 = "held_out_11"
    ALL = "all"


def told_facts(
    data: Path = typer.Option(
        ..., "--data", exists=True, dir_okay=False, help="SuperDialseg jsonl file whose dialogues are the noise."
    ),
    part: PartChoice = typer.Option(PartChoice.HELD_OUT, "--part", help="Which pairs of told_facts.json to tell."),
    users: int = typer.Option(3, "--users", min=1, max=20, help="Users, each with noise dialogues of its own."),
    k: int = typer.Option(5, "--k", min=1, max=100, help="How many hits SearchMemory returns per question."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    timeout: float = typer.Option(600.0, help="Seconds to wait for the pipeline per user."),
    at_once: bool = typer.Option(
        False,
        "--at-once",
        help="Ask right after telling, before leaving: the facts still in the window or being formed.",
    ),
    env: list[str] = typer.Option(
        [], "--env", metavar="KEY=VALUE", help="KEY=VALUE setting for the stack (e.g. SEARCH_EXPANSION_WEIGHT=0)."
    ),
) -> None:
    """Tell each user's facts between noise dialogues through a fresh local stack, then ask them back."""
    from athena_lab.told_facts import load_noise, load_pairs, noise_needed, run_told_facts

    pairs = load_pairs(part.value)
    noise = load_noise(data)
    if len(noise) < noise_needed(len(pairs), users):
        raise typer.BadParameter(
            f"{users} users need {noise_needed(len(pairs), users)} noise dialogues, {data} has {len(noise)}",
            param_hint="--users",
        )
    err = Console(stderr=True)
    with eval_stack(prefix="athena-told-facts-", env=parse_env(env), err=err) as stack, progress_bars(err) as update:
        report = asyncio.run(
            run_told_facts(
                stack.client,
                stack.redis_url,
                pairs,
                noise,
                part=part.value,
                users=users,
                k=k,
                timeout=timeout,
                at_once=at_once,
                progress=update,
            )
        )
    result = report.as_dict()
    if as_json:
        print_json(result)
        return
    table = measures_table(f"Facts told in passing, asked in other words ({part.value}, top {k})")
    for key in (
        "users",
        "questions",
        "found_at_k",
        "found_first",
        "mean_reciprocal_rank",
        "context_relevant_chains",
        "context_profile",
        "context_either",
    ):
        table.add_row(key, str(result[key]))
    for n, ranks in enumerate(result["ranks"]):
        table.add_row(f"user {n}: rank of each fact", " ".join("-" if r is None else str(r) for r in ranks))
    Console().print(table)
