"""`athena eval locomo`: evidence recall@k of SearchMemory on LoCoMo conversations, beside a chunk baseline."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import cast
from unittest import mock

import typer
from rich.console import Console
from rich.table import Table

from athena_lab.commands._eval_run import eval_stack, measures_table, print_json, progress_bars

__all__ = ["locomo", "locomo_overlap", "parse_env"]


def parse_env(pairs: list[str]) -> dict[str, str]:
    """`KEY=VALUE` settings for the stack's services (and the baselines' ranking), later ones winning."""
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--env")
        env[key.strip()] = value
    return env


def locomo(
    data: Path = typer.Option(..., "--data", help="Folder of LoCoMo conversation files (*.json), or one file."),
    k: int = typer.Option(5, "--k", min=1, max=100, help="How many chains SearchMemory returns per question."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    timeout: float = typer.Option(1800.0, help="Seconds to wait for the pipeline per conversation."),
    keep_data: bool = typer.Option(False, help="Keep the stack's data folder."),
    chains_out: Path | None = typer.Option(
        None, "--chains-out", help="Write the chains formed (dia_ids per chain) as JSON."
    ),
    agent_per_session: bool = typer.Option(
        False,
        "--agent-per-session",
        help="Replay each session under its own agent (s1, s2, ...) of the same user; search across all agents.",
    ),
    env: list[str] = typer.Option(
        [],
        "--env",
        metavar="KEY=VALUE",
        help="KEY=VALUE setting for the stack (e.g. SESSION_MERGE_ACROSS_AGENTS=false); repeatable.",
    ),
) -> None:
    """Replay each conversation through a fresh local stack and measure what SearchMemory retrieves."""
    from athena.config import load_settings
    from athena.embeddings import make_embedder, make_query_embedder
    from athena_formation.search.ranking import Ranking
    from athena_lab.locomo import run_locomo

    files = sorted(data.glob("*.json")) if data.is_dir() else [data]
    overrides = parse_env(env)
    with mock.patch.dict(os.environ, overrides):
        settings = load_settings()  # the stack's formation reads the same environment
    ranking = Ranking.from_settings(settings)
    if not files:
        raise typer.BadParameter(f"no *.json conversation files in {data}", param_hint="--data")
    err = Console(stderr=True)
    dumped: list[dict[str, object]] = []
    with (
        eval_stack(prefix="athena-locomo-", env=overrides, err=err, keep_data=keep_data) as stack,
        progress_bars(err) as update,
    ):
        report = asyncio.run(
            run_locomo(
                stack.client,
                stack.redis_url,
                files,
                k=k,
                # The chunks embedded as the stack's formation embeds chains (EMBEDDING_INT8).
                embedder=(embedder := make_embedder(settings, small_batch_threads=None)),
                query_embedder=make_query_embedder(settings, embedder=embedder),
                timeout=timeout,
                progress=update,
                dump=dumped,
                ranking=ranking,
                agent_per_session=agent_per_session,
            )
        )
    if chains_out is not None:
        chains_out.write_text(json.dumps(dumped, indent=1))
    result = report.as_json()
    if as_json:
        print_json(result)
        return
    table = measures_table(f"LoCoMo evidence recall@{k}")
    for key, value in result.items():
        if key not in ("per_conversation", "by_evidence_sessions"):
            table.add_row(key, str(value))
    for conv in result["per_conversation"]:
        table.add_row(
            f"{conv['conversation']}: recall / turns per hit (hybrid chunks)",
            f"{conv['recall_at_k']} / {conv['mean_turns_per_hit']} "
            f"({conv['baseline_hybrid_recall_at_k']} / {conv['baseline_hybrid_mean_turns_per_hit']})",
        )
    for name, part in result["by_evidence_sessions"].items():
        table.add_row(
            f"evidence in {name} session(s): questions, recall (hybrid chunks)",
            f"{part['questions']}, {part['recall_at_k']} ({part['baseline_hybrid_recall_at_k']})",
        )
    Console().print(table)


def locomo_overlap(
    data: Path = typer.Option(..., "--data", help="Folder of LoCoMo conversation files (*.json), or one file."),
    chains: Path = typer.Option(
        ..., "--chains", help="The chains of a run of those files: `athena eval locomo --chains-out FILE`."
    ),
    k: int = typer.Option(5, "--k", min=1, max=100, help="How many units are returned per question."),
    overlaps: str = typer.Option(
        "0,2,4", "--overlaps", help="Comma-separated turns of overlap to measure (0: the chains as formed)."
    ),
    at: str = typer.Option("flush", "--at", help="Which cuts overlap: flush, topic or every."),
    flush_events: int = typer.Option(
        20, "--flush-events", min=1, help="A cut after a chain of this many events is a force flush's."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    env: list[str] = typer.Option(
        [], "--env", metavar="KEY=VALUE", help="KEY=VALUE setting for the ranking (e.g. SEARCH_SIZE_PRIOR=0.4)."
    ),
) -> None:
    """Offline, over a run's chains: chains that also hold the turns before a cut, ranked as
    SearchMemory ranks chains, beside fixed chunks of their mean size (no stack is started)."""
    from athena.config import load_settings
    from athena.embeddings import make_embedder, make_query_embedder
    from athena_formation.search.ranking import Ranking
    from athena_lab.locomo_overlap import Cuts, measure_overlaps

    if at not in ("flush", "topic", "every"):
        raise typer.BadParameter(f"expected flush, topic or every, got {at!r}", param_hint="--at")
    try:
        turns = [int(part) for part in overlaps.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter(
            f"expected comma-separated integers, got {overlaps!r}", param_hint="--overlaps"
        ) from None
    if not turns or min(turns) < 0:
        raise typer.BadParameter("expected at least one overlap, none negative", param_hint="--overlaps")
    files = sorted(data.glob("*.json")) if data.is_dir() else [data]
    if not files:
        raise typer.BadParameter(f"no *.json conversation files in {data}", param_hint="--data")
    try:
        dumped = {str(c["conversation"]): c["chains"] for c in json.loads(chains.read_text())}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise typer.BadParameter(
            f"not a chains file of `athena eval locomo --chains-out`: {exc}", param_hint="--chains"
        ) from exc
    with mock.patch.dict(os.environ, parse_env(env)):
        settings = load_settings()
    embedder = make_embedder(settings, small_batch_threads=None)
    with Console(stderr=True).status("ranking the units and the chunks..."):
        try:
            report = asyncio.run(
                measure_overlaps(
                    files,
                    dumped,
                    k=k,
                    embedder=embedder,
                    query_embedder=make_query_embedder(settings, embedder=embedder),
                    ranking=Ranking.from_settings(settings),
                    overlaps=turns,
                    at=cast("Cuts", at),
                    flush_events=flush_events,
                )
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--chains") from exc
    if as_json:
        print_json(report)
        return
    table = Table(title=f"LoCoMo recall@{k}, chains overlapping at {at} cuts, beside chunks of their mean size")
    for column in ("overlap", "recall / turns per hit", "hybrid chunks", "chains minus chunks", "per conversation"):
        table.add_column(column)
    for v in report["variants"]:
        table.add_row(
            str(v["overlap_turns"]),
            f"{v['recall_at_k']} / {v['mean_turns_per_hit']}",
            f"{v['baseline_hybrid_recall_at_k']} / {v['baseline_hybrid_mean_turns_per_hit']}",
            f"{v['chains_minus_chunks']:+.4f}",
            " / ".join(f"{c['chains_minus_chunks']:+.3f}" for c in v["per_conversation"]),
        )
    Console().print(table)
