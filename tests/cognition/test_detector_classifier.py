"""The detector's numpy classifiers: inference equals sklearn's, and fitting reproduces artifacts byte for byte."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from athena_cognition.detector._classifier import Classifier, load_classifier, save_classifier
from athena_lab.segmentation.fitting import ClassifierSpec, fit_classifier, member_weights

NAMES = tuple(f"f{i}" for i in range(6))


def _parts() -> list[tuple[np.ndarray, np.ndarray, float]]:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(400, len(NAMES))) * np.array([1.0, 3.0, 0.5, 10.0, 1.0, 2.0]) + 4.0
    y = ((x[:, 0] - 4.0) * (x[:, 1] - 4.0) + rng.normal(size=400) > 0).astype(np.int64)  # needs an interaction
    return [(x[:300], y[:300], 1.0), (x[300:], y[300:], 3.0)]


@pytest.mark.parametrize("spec", [ClassifierSpec(l2_c=0.5), ClassifierSpec(hidden_units=4, alpha=1.0)])
def test_fitting_twice_writes_identical_bytes(spec: ClassifierSpec, tmp_path: Path) -> None:
    for name in ("a.npz", "b.npz"):
        save_classifier(tmp_path / name, fit_classifier(_parts(), NAMES, spec), threshold=0.5)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()


@pytest.mark.parametrize("hidden", [0, 4])
def test_numpy_inference_matches_sklearn(hidden: int, tmp_path: Path) -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    parts = _parts()
    x = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    w = np.concatenate([np.full(len(p[1]), p[2]) for p in parts])
    spec = ClassifierSpec(hidden_units=hidden, l2_c=0.5, alpha=1.0)
    save_classifier(tmp_path / "m.npz", fit_classifier(parts, NAMES, spec), threshold=0.4)
    loaded, scalars = load_classifier(tmp_path / "m.npz", scalars=("threshold",), feature_names=NAMES)
    assert scalars == {"threshold": 0.4} and loaded.hidden_units == hidden

    scaler = StandardScaler().fit(x)
    if hidden:
        reference = MLPClassifier(
            hidden_layer_sizes=(hidden,), activation="tanh", solver="lbfgs", alpha=1.0, max_iter=2000, random_state=0
        ).fit(scaler.transform(x), y, sample_weight=w)
    else:
        reference = LogisticRegression(C=0.5, max_iter=5000).fit(scaler.transform(x), y, sample_weight=w)
    expected = reference.predict_proba(scaler.transform(x[:50]))[:, 1]
    got = np.array([loaded.predict(row) for row in x[:50]])
    assert np.allclose(got, expected, atol=1e-9)


def test_an_ensemble_is_one_wider_layer_whose_logit_is_the_mean_of_its_members(tmp_path: Path) -> None:
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    parts = _parts()
    x = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    w = np.concatenate([np.full(len(p[1]), p[2]) for p in parts])
    spec = ClassifierSpec(hidden_units=4, alpha=1.0, ensemble=3)
    save_classifier(tmp_path / "m.npz", fit_classifier(parts, NAMES, spec), threshold=0.5)
    loaded, _ = load_classifier(tmp_path / "m.npz", scalars=("threshold",), feature_names=NAMES)
    assert loaded.hidden_units == 12

    xs = StandardScaler().fit(x).transform(x)
    members = [
        MLPClassifier(
            hidden_layer_sizes=(4,), activation="tanh", solver="lbfgs", alpha=1.0, max_iter=2000, random_state=seed
        ).fit(xs, y, sample_weight=w)
        for seed in range(3)
    ]
    member_logits = np.array([_logit(m.predict_proba(xs[:50])[:, 1]) for m in members])
    assert not np.allclose(member_logits[0], member_logits[1], atol=1e-3)  # the seeds give different models
    got = np.array([loaded.logit(row) for row in x[:50]])
    assert np.allclose(got, member_logits.mean(axis=0), atol=1e-6)


def test_a_bagged_ensemble_fits_each_member_on_its_own_bootstrap_of_the_rows(tmp_path: Path) -> None:
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    parts = _parts()
    x = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    w = np.concatenate([np.full(len(p[1]), p[2]) for p in parts])
    first, second = member_weights(w, seed=0), member_weights(w, seed=1)
    assert np.array_equal(first, member_weights(w, seed=0))  # reproducible from the seed
    assert (first == 0).any() and (first > w).any() and not np.array_equal(first, second)  # rows left out, drawn twice

    spec = ClassifierSpec(hidden_units=4, alpha=1.0, ensemble=2, bootstrap=True)
    save_classifier(tmp_path / "m.npz", fit_classifier(parts, NAMES, spec), threshold=0.5)
    loaded, _ = load_classifier(tmp_path / "m.npz", scalars=("threshold",), feature_names=NAMES)
    xs = StandardScaler().fit(x).transform(x)  # the scaler sees every row: bagging resamples the fits only
    members = [
        MLPClassifier(
            hidden_layer_sizes=(4,), activation="tanh", solver="lbfgs", alpha=1.0, max_iter=2000, random_state=seed
        ).fit(xs, y, sample_weight=member_weights(w, seed=seed))
        for seed in range(2)
    ]
    expected = np.mean([_logit(m.predict_proba(xs[:50])[:, 1]) for m in members], axis=0)
    assert np.allclose([loaded.logit(row) for row in x[:50]], expected, atol=1e-6)

    unbagged = fit_classifier(parts, NAMES, ClassifierSpec(hidden_units=4, alpha=1.0, ensemble=2))
    assert not np.allclose([unbagged.logit(row) for row in x[:50]], expected, atol=1e-3)


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p) - np.log1p(-p)


def test_artifact_with_another_feature_list_is_refused(tmp_path: Path) -> None:
    n = len(NAMES)
    save_classifier(tmp_path / "m.npz", Classifier(NAMES, np.zeros(n), np.ones(n), np.zeros(n), 0.0), threshold=0.5)
    with pytest.raises(ValueError, match="different feature list"):
        load_classifier(tmp_path / "m.npz", scalars=("threshold",), feature_names=NAMES[:-1])


def test_mismatched_hidden_layer_is_refused() -> None:
    n = len(NAMES)
    with pytest.raises(ValueError):
        Classifier(
            NAMES, np.zeros(n), np.ones(n), np.zeros(3), 0.0, hidden_weights=np.zeros((n, 4)), hidden_bias=np.zeros(4)
        )
