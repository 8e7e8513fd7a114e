"""The small numpy classifiers behind the detector's learned models, and their one artifact format.

A classifier is: standardize the feature row, then either a logistic regression or one tanh hidden
layer followed by a logistic output. Inference is plain numpy (no sklearn at runtime): about 270
thousand multiply-adds per decision (the continuity model's 415 inputs x 640 units:
ten fits of 64 units whose logits are averaged, which is one layer of their units side by side).

Artifact (npz, no pickles): `feature_names`, `mean`, `scale`, `coef`, `intercept`, optionally
`hidden_weights` (n_features x hidden) and `hidden_bias` (hidden), plus named scalars that belong
to the model using it (the continuity gate's `high` / `low`, the opener's `threshold`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["Classifier", "load_classifier", "packaged_artifact", "save_classifier", "sigmoid"]


def sigmoid(z: float) -> float:
    """Numerically safe logistic in both directions."""
    if z >= 0:
        return 1.0 / (1.0 + float(np.exp(-z)))
    ez = float(np.exp(z))
    return ez / (1.0 + ez)


@dataclass(frozen=True, slots=True)
class Classifier:
    """P(label 1 | features): standardize, optional tanh hidden layer, logistic output."""

    feature_names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (n_features,) without a hidden layer, (hidden,) with one
    intercept: float
    hidden_weights: np.ndarray | None = None  # (n_features, hidden)
    hidden_bias: np.ndarray | None = None  # (hidden,)

    def __post_init__(self) -> None:
        n = len(self.feature_names)
        if not (self.mean.shape == self.scale.shape == (n,)):
            raise ValueError(f"standardization shapes do not match {n} features")
        if (self.hidden_weights is None) != (self.hidden_bias is None):
            raise ValueError("hidden_weights and hidden_bias come together")
        if self.hidden_weights is None:
            if self.coef.shape != (n,):
                raise ValueError(f"coef shape {self.coef.shape} does not match {n} features")
            return
        assert self.hidden_bias is not None
        hidden = self.hidden_bias.shape[0]
        if self.hidden_weights.shape != (n, hidden) or self.coef.shape != (hidden,):
            raise ValueError(f"hidden layer shapes do not match {n} features and {hidden} units")

    @property
    def hidden_units(self) -> int:
        return 0 if self.hidden_bias is None else int(self.hidden_bias.shape[0])

    def logit(self, features: np.ndarray) -> float:
        x = (features - self.mean) / self.scale
        if self.hidden_weights is not None:
            x = np.tanh(x @ self.hidden_weights + self.hidden_bias)
        return float(x @ self.coef + self.intercept)

    def predict(self, features: np.ndarray) -> float:
        return sigmoid(self.logit(features))


def save_classifier(path: str | Path, classifier: Classifier, **scalars: float) -> None:
    arrays: dict[str, np.ndarray] = {
        "feature_names": np.array(classifier.feature_names),
        "mean": classifier.mean.astype(np.float64),
        "scale": classifier.scale.astype(np.float64),
        "coef": classifier.coef.astype(np.float64),
        "intercept": np.array(classifier.intercept, dtype=np.float64),
    }
    if classifier.hidden_weights is not None and classifier.hidden_bias is not None:
        arrays["hidden_weights"] = classifier.hidden_weights.astype(np.float64)
        arrays["hidden_bias"] = classifier.hidden_bias.astype(np.float64)
    for name, value in scalars.items():
        arrays[name] = np.array(value, dtype=np.float64)
    np.savez(path, **arrays)  # type: ignore[arg-type]


def load_classifier(
    path: str | Path,
    *,
    scalars: Sequence[str],
    feature_names: Sequence[str] | None = None,
    optional_scalars: Sequence[str] = (),
) -> tuple[Classifier, Mapping[str, float]]:
    """Read an artifact; `feature_names`, when given, must match the stored list exactly.

    Every name in `scalars` must be stored; a name in `optional_scalars` is returned only when it is
    (a scalar one model of a kind carries and another does not)."""
    with np.load(path, allow_pickle=False) as z:
        hidden = "hidden_weights" in z.files
        try:
            classifier = Classifier(
                feature_names=tuple(str(n) for n in z["feature_names"]),
                mean=z["mean"].astype(np.float64),
                scale=z["scale"].astype(np.float64),
                coef=z["coef"].astype(np.float64),
                intercept=float(z["intercept"]),
                hidden_weights=z["hidden_weights"].astype(np.float64) if hidden else None,
                hidden_bias=z["hidden_bias"].astype(np.float64) if hidden else None,
            )
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc
        values = {name: float(z[name]) for name in scalars}
        values.update((name, float(z[name])) for name in optional_scalars if name in z.files)
    if feature_names is not None and classifier.feature_names != tuple(feature_names):
        raise ValueError(f"{path}: trained on a different feature list; retrain it")
    return classifier, values


@contextmanager
def packaged_artifact(name: str) -> Iterator[Path]:
    """A file committed beside the detector modules, as a filesystem path."""
    with resources.as_file(resources.files("athena_cognition.detector") / name) as p:
        yield p
