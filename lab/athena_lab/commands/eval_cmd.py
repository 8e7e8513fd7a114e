"""`athena eval ...`: measure components on public labelled data (`segmentation` here, `locomo` and `locomo-overlap` in locomo_cmd, `told-facts` in told_facts_cmd)."""

from __future__ import annotations

import asyncio
import json
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from athena_lab.commands.locomo_cmd import locomo, locomo_overlap
from athena_lab.commands.told_facts_cmd import told_facts

__all__ = ["app"]

app = typer.Typer(help="Evaluate Athena components on labelled public data.", no_args_is_help=True)
_err = Console(stderr=True)


class ScorerChoice(str, Enum):
    CONTINUITY = "continuity"
    CONTINUITY_AGNOSTIC = "continuity_agnostic"
    PAIR_COSINE = "pair_cosine"
    EVERY_USER = "every_user"  # baseline: break at every user message
    LEXICAL_OVERLAP = "lexical_overlap"  # no embedding: the rule for text the model cannot read


class SplitChoice(str, Enum):
    ALL = "all"
    TRAIN = "train"
    HELDOUT = "heldout"


@app.callback()
def _eval() -> None:
    """Evaluation commands."""


def _thresholds(scorer: str, high: float | None, low: float | None) -> Any:
    from athena.config import load_settings
    from athena_cognition.detector import Thresholds, default_thresholds, thresholds_from_settings

    settings = load_settings()
    # CHAIN_SIM_* belong to the configured CHAIN_SCORER; another scorer starts from its own defaults.
    base = thresholds_from_settings(settings) if settings.chain_scorer.value == scorer else default_thresholds(scorer)
    return Thresholds(high=base.high if high is None else high, low=base.low if low is None else low)


@app.command("segmentation")
def segmentation(
    data: Annotated[
        Path, typer.Option("--data", exists=True, dir_okay=False, help="Def-DTS jsonl file (shared/data/segmentation).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")] = False,
    predictions_out: Annotated[
        Path | None, typer.Option("--predictions-out", help='Write one {"id", "starts"} JSON line per dialogue.')
    ] = None,
    scorer: Annotated[
        ScorerChoice | None,
        typer.Option(
            "--scorer",
            help="Scorer; default CHAIN_SCORER. every_user is a baseline; lexical_overlap the rule for text the model cannot read.",
        ),
    ] = None,
    high: Annotated[float | None, typer.Option("--high", help="Gate high threshold (default: the scorer's).")] = None,
    low: Annotated[float | None, typer.Option("--low", help="Gate low threshold (default: the scorer's).")] = None,
    max_events: Annotated[
        int | None, typer.Option("--max-events", min=2, help="Force-flush size (default STM_MAX_EVENTS_BEFORE_FLUSH).")
    ] = None,
    keep_events: Annotated[
        int | None,
        typer.Option(
            "--flush-keep-events",
            min=0,
            help="Events a force flush leaves in the window (default STM_FLUSH_KEEP_EVENTS: half the force-flush size).",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N dialogues (after --split).")
    ] = None,
    split: Annotated[
        SplitChoice,
        typer.Option("--split", help="heldout/train: the fixed 30%/70% split by id hash used for training."),
    ] = SplitChoice.ALL,
    placement: Annotated[
        bool,
        typer.Option(
            "--placement/--no-placement",
            help="continuity scorers: let a break open at the agent turn before the user message (opener model).",
        ),
    ] = True,
) -> None:
    """Segment each dialogue with the production decide() (no LLM) and print Pk, WindowDiff and F1.

    Refuses (exit 2), as cognition does at start-up, a scorer that needs another embedding model
    than EMBEDDING_PROVIDER / EMBEDDING_MODEL give.
    """
    from athena.config import load_settings, resolve_flush_keep
    from athena.embeddings import make_embedder
    from athena_cognition.detector import embedding_mismatch, make_scorer
    from athena_lab.segmentation.evaluate import evaluate
    from athena_lab.segmentation.segmentation_data import load_dialogues, split_dialogues

    settings = load_settings()
    scorer_name = scorer.value if scorer is not None else settings.chain_scorer.value
    mismatch = embedding_mismatch(scorer_name, settings)
    if mismatch is not None:
        _err.print(f"athena eval segmentation: {mismatch}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(code=2)
    thresholds = _thresholds(scorer_name, high, low)
    flush = max_events if max_events is not None else settings.stm_max_events_before_flush
    if keep_events is None:
        keep_events = resolve_flush_keep(settings.stm_flush_keep_events, max_events=flush)
    if keep_events >= flush:
        raise typer.BadParameter(f"must be below the force-flush size ({flush})", param_hint="--flush-keep-events")

    dialogues = load_dialogues(data)
    if split is not SplitChoice.ALL:
        train, held = split_dialogues(dialogues)
        dialogues = held if split is SplitChoice.HELDOUT else train
    if limit is not None:
        dialogues = dialogues[:limit]

    scorer_obj = make_scorer(scorer_name, placement=placement)
    embedder = make_embedder(settings)
    started = time.perf_counter()
    with Progress(
        TextColumn("[bold]segmenting"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err,
        transient=True,
    ) as progress:
        task = progress.add_task("dialogues", total=len(dialogues))
        result = asyncio.run(
            evaluate(
                dialogues,
                scorer=scorer_obj,
                embedder=embedder,
                thresholds=thresholds,
                arbiter=None,
                max_events_before_flush=flush,
                flush_keep_events=keep_events,
                on_dialogue=lambda n: progress.advance(task, n),
            )
        )
    seconds = time.perf_counter() - started

    if predictions_out is not None:
        with predictions_out.open("w", encoding="utf-8") as fh:
            for p in result.predictions:
                fh.write(json.dumps({"id": p.id, "starts": list(p.starts)}) + "\n")

    s = result.scores
    report: dict[str, Any] = {
        "pk": round(s.pk, 4),
        "wd": round(s.wd, 4),
        "f1": round(s.f1, 4),
        "precision": round(s.precision, 4),
        "recall": round(s.recall, 4),
        "dialogues": s.dialogues,
        "scorer": scorer_name,
        "thresholds": {"high": thresholds.high, "low": thresholds.low},
        "max_events": flush,
        "flush_keep_events": keep_events,
        "data": str(data),
        "split": split.value,
        "placement": getattr(scorer_obj, "opener", None) is not None,
        "paths": result.paths,
        "seconds": round(seconds, 1),
    }
    if as_json:
        typer.echo(json.dumps(report))
        return
    table = Table(title=f"segmentation: {data.name} ({split.value}, {s.dialogues} dialogues)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("pk", "wd", "f1", "precision", "recall"):
        table.add_row(key, f"{report[key]:.4f}")
    table.add_row("scorer", scorer_name)
    table.add_row("thresholds", f"high {thresholds.high} / low {thresholds.low} (no LLM: break below midpoint)")
    table.add_row("decision paths", ", ".join(f"{k} {v}" for k, v in result.paths.items()))
    Console().print(table)


app.command("locomo")(locomo)
app.command("locomo-overlap")(locomo_overlap)
app.command("told-facts")(told_facts)
