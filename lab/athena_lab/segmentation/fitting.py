"""Fit the detector's `Classifier` from weighted example parts; sklearn at training time only.

Deterministic: fixed `random_state`, full-batch L-BFGS, so the same rows give the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from athena_cognition.detector._classifier import Classifier

__all__ = ["ClassifierSpec", "Part", "fit_classifier", "member_weights", "stack_parts"]

Part = tuple[np.ndarray, np.ndarray, float]
"""(feature rows, labels, sample weight of every row in this part)."""


@dataclass(frozen=True)
class ClassifierSpec:
    """hidden_units 0: L2 logistic regression with inverse strength `l2_c`. Otherwise one tanh
    hidden layer of that many units with L2 penalty `alpha` (sklearn's MLPClassifier, L-BFGS)."""

    hidden_units: int = 0
    l2_c: float = 1.0
    alpha: float = 1.0
    max_iter: int = 2000
    seed: int = 0
    ensemble: int = 1
    """Hidden-layer models fitted with seeds `seed`, `seed + 1`, ...: their logits are averaged, which
    is one wider hidden layer (each model's units side by side, output weights divided by the count)."""
    bootstrap: bool = False
    """Bagging: each hidden-layer model sees its own Poisson bootstrap of the rows (every row's weight
    times a Poisson(1) count drawn from that model's seed), so the members differ in their data as
    well as their start. Off: every member fits the same rows."""


def stack_parts(parts: Sequence[Part]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    w = np.concatenate([np.full(len(p[1]), p[2], dtype=np.float64) for p in parts])
    return x, y, w


def member_weights(weights: np.ndarray, *, seed: int) -> np.ndarray:
    """One bagging member's sample weights: a Poisson(1) bootstrap of the rows (a row drawn k times
    weighs k times as much), reproducible from the seed."""
    return weights * np.random.default_rng(seed).poisson(1.0, size=len(weights))


def fit_classifier(parts: Sequence[Part], feature_names: Sequence[str], spec: ClassifierSpec) -> Classifier:
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    x, y, w = stack_parts(parts)
    if x.shape[1] != len(feature_names):
        raise ValueError(f"{x.shape[1]} feature columns for {len(feature_names)} names")
    scaler = StandardScaler().fit(x)
    xs = scaler.transform(x)
    names = tuple(feature_names)
    mean, scale = scaler.mean_.astype(np.float64), scaler.scale_.astype(np.float64)
    if spec.hidden_units == 0:
        lr = LogisticRegression(C=spec.l2_c, max_iter=5000).fit(xs, y, sample_weight=w)
        return Classifier(names, mean, scale, lr.coef_[0].astype(np.float64), float(lr.intercept_[0]))
    if spec.ensemble < 1:
        raise ValueError(f"ensemble must be at least 1, got {spec.ensemble}")
    fitted = [
        MLPClassifier(
            hidden_layer_sizes=(spec.hidden_units,),
            activation="tanh",
            solver="lbfgs",
            alpha=spec.alpha,
            max_iter=spec.max_iter,
            random_state=spec.seed + k,
        ).fit(xs, y, sample_weight=member_weights(w, seed=spec.seed + k) if spec.bootstrap else w)
        for k in range(spec.ensemble)
    ]
    n = len(fitted)
    return Classifier(
        names,
        mean,
        scale,
        np.concatenate([m.coefs_[1][:, 0] for m in fitted]).astype(np.float64) / n,
        float(sum(float(m.intercepts_[1][0]) for m in fitted) / n),
        hidden_weights=np.hstack([m.coefs_[0] for m in fitted]).astype(np.float64),
        hidden_bias=np.concatenate([m.intercepts_[0] for m in fitted]).astype(np.float64),
    )
