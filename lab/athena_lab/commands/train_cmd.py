"""`athena train ...`: reproducible training of Athena's learned components from the shared data."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

__all__ = ["app"]

app = typer.Typer(help="Train Athena's learned components.", no_args_is_help=True)
_err = Console(stderr=True)

# The model options of the trainers (unset: the committed artifact's recipe).
_HiddenUnits = Annotated[
    int | None,
    typer.Option("--hidden-units", min=0, help="Tanh hidden units; 0 = logistic regression."),
]
_Alpha = Annotated[float | None, typer.Option("--alpha", min=0.0, help="L2 penalty of the hidden-layer model.")]
_L2C = Annotated[float | None, typer.Option("--l2-c", min=0.0, help="Inverse L2 strength of the logistic regression.")]
_Ensemble = Annotated[
    int | None,
    typer.Option("--ensemble", min=1, help="Hidden-layer models of consecutive seeds whose logits are averaged."),
]
_DataDir = Annotated[
    Path | None, typer.Option("--data-dir", file_okay=False, help="shared/data/segmentation (found by default).")
]


_Bootstrap = Annotated[
    bool,
    typer.Option("--bootstrap", help="Bagging: each averaged model fits its own Poisson bootstrap of the rows."),
]


def _log(msg: str) -> None:
    """A trainer's progress line, on stderr (stdout carries the result)."""
    _err.print(msg, markup=False, highlight=False, soft_wrap=True)


def _given(**options: float | None) -> dict[str, Any]:
    """The model options set on the command line, to replace in the recipe's defaults."""
    return {name: value for name, value in options.items() if value is not None}


def _fractions(text: str, option: str) -> tuple[float, ...]:
    """A comma-separated list of numbers strictly between 0 and 1 (thresholds, gate midpoints)."""
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated numbers, got {text!r}", param_hint=option) from None
    if not values or not all(0.0 < v < 1.0 for v in values):
        raise typer.BadParameter("expected numbers between 0 and 1", param_hint=option)
    return values


@app.callback()
def _train() -> None:
    """Training commands."""


@app.command("continuity")
def continuity(
    out: Annotated[
        Path | None, typer.Option("--out", file_okay=False, help="Output folder (default: the detector package).")
    ] = None,
    data_dir: _DataDir = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic splices.")] = 0,
    agnostic: Annotated[
        bool,
        typer.Option(
            "--agnostic",
            help="The model-agnostic variant (no raw embedding among the features, any embedding model): "
            "writes continuity_agnostic_v1.npz and its record.",
        ),
    ] = False,
    hidden_units: _HiddenUnits = None,
    alpha: _Alpha = None,
    l2_c: _L2C = None,
    ensemble: _Ensemble = None,
    bootstrap: _Bootstrap = False,
) -> None:
    """Train the chain-break continuity scorer; writes continuity_v1.npz and continuity_v1.record.json
    (with --agnostic: continuity_agnostic_v1.npz and continuity_agnostic_v1.record.json).

    The model options exist to reproduce the comparisons in docs/segmentation.md; the defaults are
    the committed artifact's recipe (the agnostic variant picks its own strength and ignores them).
    """
    from dataclasses import replace

    from athena_lab.segmentation.train_continuity import DETECTOR_DIR, TrainConfig, train_continuity

    train_config = replace(
        TrainConfig(seed=seed, bootstrap=bootstrap),
        **_given(hidden_units=hidden_units, alpha=alpha, l2_c=l2_c, ensemble=ensemble),
    )

    if agnostic:
        from athena_lab.segmentation.train_continuity_agnostic import AgnosticConfig, train_continuity_agnostic

        config = AgnosticConfig(continuity=TrainConfig(seed=seed))
        record = asyncio.run(
            train_continuity_agnostic(out_dir=out or DETECTOR_DIR, data_dir=data_dir, config=config, log=_log)
        )
    else:
        record = asyncio.run(
            train_continuity(out_dir=out or DETECTOR_DIR, data_dir=data_dir, config=train_config, log=_log)
        )
    metrics = record["metrics_no_llm"]
    assert isinstance(metrics, dict)
    for name, m in metrics.items():
        typer.echo(f"{name}: pk {m['pk']} wd {m['wd']} f1 {m['f1']}")


@app.command("opener")
def opener(
    out: Annotated[
        Path | None, typer.Option("--out", file_okay=False, help="Output folder (default: the detector package).")
    ] = None,
    data_dir: _DataDir = None,
    hidden_units: _HiddenUnits = None,
    alpha: _Alpha = None,
    l2_c: _L2C = None,
    ensemble: _Ensemble = None,
    bootstrap: _Bootstrap = False,
    agent_embedding: Annotated[
        bool,
        typer.Option(
            "--agent-embedding/--no-agent-embedding",
            help="The agent turn's embedding among the inputs (opener_v2, the continuity scorer's); "
            "without it, the hand features alone (opener_v1, any embedding model).",
        ),
    ] = True,
    continuity_ensemble: Annotated[
        int | None,
        typer.Option(
            "--continuity-ensemble",
            min=1,
            help="Fits averaged in each fold's continuity model of the threshold's cross-validation "
            "(default: the continuity recipe's).",
        ),
    ] = None,
    replay_int8: Annotated[
        bool,
        typer.Option(
            "--replay-int8",
            help="Replay the cross-validation's folds and the measured sets with the int8 copy of the "
            "embedding model (EMBEDDING_INT8, the product's default); the models are fitted on float vectors.",
        ),
    ] = False,
    continuity_bootstrap: Annotated[
        bool,
        typer.Option(
            "--continuity-bootstrap",
            help="Bagging in each fold's continuity model of the threshold's cross-validation.",
        ),
    ] = False,
    gate_midpoints: Annotated[
        str | None,
        typer.Option(
            "--gate-midpoints",
            help="Comma-separated continuity gate midpoints to cross-validate together with the threshold "
            "(reported; the artifact's threshold is still chosen under the committed gate).",
        ),
    ] = None,
    thresholds: Annotated[
        str | None,
        typer.Option(
            "--thresholds",
            help="Comma-separated opener thresholds to cross-validate (default: 0.30 to 0.70 by 0.05).",
        ),
    ] = None,
) -> None:
    """Train the boundary-placement opener model; writes opener_v2.npz and opener_v2.record.json
    (opener_v1.* with --no-agent-embedding).

    The model options exist to reproduce the comparisons in docs/segmentation.md; the defaults
    are the committed artifact's recipe.
    """
    from dataclasses import replace

    from athena_lab.segmentation.train_opener import DETECTOR_DIR, OpenerConfig, train_opener

    config = OpenerConfig() if agent_embedding else OpenerConfig.hand_features()
    options = _given(hidden_units=hidden_units, alpha=alpha, l2_c=l2_c, ensemble=ensemble)
    config = replace(config, spec=replace(config.spec, **options, bootstrap=bootstrap), replay_int8=replay_int8)
    if continuity_bootstrap:
        config = replace(config, continuity=replace(config.continuity, bootstrap=True))
    if continuity_ensemble is not None:
        config = replace(config, continuity=replace(config.continuity, ensemble=continuity_ensemble))
    if gate_midpoints:
        config = replace(config, gate_midpoints=_fractions(gate_midpoints, "--gate-midpoints"))
    if thresholds:
        config = replace(config, thresholds=_fractions(thresholds, "--thresholds"))
    record = asyncio.run(
        train_opener(
            out_dir=out or DETECTOR_DIR,
            data_dir=data_dir,
            config=config,
            log=_log,
        )
    )
    metrics = record["metrics_no_llm"]
    assert isinstance(metrics, dict)
    for name, m in metrics.items():
        typer.echo(f"{name}: pk {m['pk']} wd {m['wd']} f1 {m['f1']}")


@app.command("encoder-pilot")
def encoder_pilot_cmd(
    data_dir: _DataDir = None,
    fold: Annotated[int, typer.Option("--fold", min=0, max=4, help="The trainers' fold held out (0-4).")] = 0,
    max_length: Annotated[int, typer.Option("--max-length", min=16, max=512, help="Tokens of a pair.")] = 128,
    epochs: Annotated[int, typer.Option("--epochs", min=1, help="Passes over the fold's training decisions.")] = 1,
) -> None:
    """Fine-tune the MiniLM encoder as a chain-break classifier on one fold and print, as JSON, the AUC
    of it, of the continuity model and of their mean on the fold's held-out decisions (writes no artifact)."""
    import json

    from athena_lab.segmentation.encoder_pilot import PilotConfig, encoder_pilot

    report = asyncio.run(
        encoder_pilot(
            data_dir=data_dir,
            config=PilotConfig(fold=fold, max_length=max_length, epochs=epochs),
            log=_log,
        )
    )
    typer.echo(json.dumps(report, indent=2))


@app.command("encoder-cv")
def encoder_cv_cmd(
    out: Annotated[
        Path | None, typer.Option("--out", file_okay=False, help="Where each fold's segmentations are kept.")
    ] = None,
    data_dir: _DataDir = None,
    fold: Annotated[
        list[int] | None,
        typer.Option("--fold", min=0, max=4, help="Run only these folds (repeatable); all by default."),
    ] = None,
    timing_only: Annotated[
        bool, typer.Option("--timing-only", help="Only time one decision's encoder pass (one torch thread).")
    ] = False,
) -> None:
    """Replay decide() over the trainers' 5 folds with the continuity model mixed with a fine-tuned encoder
    (about 15 minutes a fold); prints, as JSON, each fold's timing and, once all five are in --out, the
    pooled Pk / WD / F1 of every encoder share and midpoint (writes no detector artifact)."""
    import json

    from athena_lab.segmentation.encoder_cv import EncoderCvConfig, encoder_cross_validation, encoder_timing

    if timing_only:
        typer.echo(json.dumps(asyncio.run(encoder_timing(data_dir=data_dir)), indent=2))
        return
    if out is None:
        raise typer.BadParameter("--out is required unless --timing-only", param_hint="--out")
    config = EncoderCvConfig(folds=tuple(fold)) if fold else EncoderCvConfig()
    report = asyncio.run(
        encoder_cross_validation(
            out_dir=out,
            data_dir=data_dir,
            config=config,
            log=_log,
        )
    )
    typer.echo(json.dumps(report, indent=2))


@app.command("opener-typicality")
def opener_typicality(
    out: Annotated[
        Path | None, typer.Option("--out", file_okay=False, help="Output folder (default: the detector package).")
    ] = None,
    data_dir: _DataDir = None,
    clusters: Annotated[int, typer.Option("--clusters", min=1, help="k-means centres of the agent turns.")] = 16,
    alpha: Annotated[
        float,
        typer.Option("--alpha", min=0.0, max=0.5, help="Share of held-out training agent turns below the floor."),
    ] = 0.05,
    cross_validate: Annotated[
        bool,
        typer.Option("--cross-validate", help="Also measure the gate in the opener's 5-fold cross-validation (slow)."),
    ] = False,
) -> None:
    """Fit the agent turns the opener may break at (opener_v2_typical.npz and its record): k-means
    centres of the training agent turns and a floor on an agent turn's largest cosine to them."""
    from athena_lab.segmentation.train_typicality import TypicalityConfig, train_typicality

    record = asyncio.run(
        train_typicality(
            out_dir=out or _detector_dir(),
            data_dir=data_dir,
            config=TypicalityConfig(clusters=clusters, alpha=alpha, cross_validate=cross_validate),
            log=_log,
        )
    )
    metrics = record["metrics_no_llm"]
    assert isinstance(metrics, dict)
    for name, variants in metrics.items():
        for variant, m in variants.items():
            if "pk" in m:
                typer.echo(f"{name} {variant}: pk {m['pk']} wd {m['wd']} f1 {m['f1']}")
            else:  # cross-validated: both sets pooled over the folds
                typer.echo(f"{name} {variant}: mean pk {m['objective_mean_pk']}")


def _detector_dir() -> Path:
    from athena_lab.segmentation.train_continuity import DETECTOR_DIR

    return DETECTOR_DIR
