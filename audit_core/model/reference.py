"""Reference models: trained here, on population records only, of a family the steward picks to resemble the target.

Who is trained on what (the bookkeeping every reference-based number rests on):

- the population table is split once, at random (seeded), into two disjoint halves:
  the **candidate non-members** (scored by every attack beside the members; RMIA's
  population samples ``z`` are these same records) and the **reference pool**;
- reference model ``k`` is trained on a random sample of the reference pool of the
  target's training size, or on a random half of the pool when the pool holds fewer than
  twice that many (so that the models differ even for a family that trains
  deterministically; the JSON's ``reference.train_size`` says which, and a warning too);
- hence no reference model has seen a candidate, member or non-member: every
  candidate is OUT of every reference model, which is what the offline attacks
  (RMIA offline, LiRA offline) assume. A record present in both the members' and the
  population table would break this; the audit warns when it finds exact duplicates.

Features for the reference models are the LiRA page's encoding
(:func:`audit_core.lira.batched_models.prepare_design`: standardised numerics,
one-hot categoricals), computed on the feature columns only (no label enters it).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from audit_core.common.runtime import ProgressFn, as_progress, blas_threads

FAMILIES = ("logistic", "mlp", "gbdt")
PROB_FLOOR = 1e-7
"""Probabilities are clipped to ``[PROB_FLOOR, 1]`` before any log or ratio (a fully grown tree says 0 and 1)."""


def make_model(family: str, seed: int):
    """A fresh, seeded scikit-learn classifier of ``family`` (logistic / mlp / gbdt)."""
    if family == "logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000, random_state=seed)
    if family == "mlp":
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, random_state=seed)
    if family == "gbdt":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(max_iter=200, early_stopping=False, random_state=seed)
    raise ValueError(f"unknown reference family {family!r}")  # pragma: no cover - the knob's choices refuse it


def full_proba(model, X: np.ndarray, n_classes: int) -> np.ndarray:
    """``(n, n_classes)`` probabilities; a class the model never saw gets probability 0."""
    p = model.predict_proba(X)
    out = np.zeros((X.shape[0], n_classes))
    out[:, model.classes_.astype(int)] = p
    return out


@dataclass(frozen=True)
class ReferenceModels:
    """The reference models' probabilities of the true label on the candidates, and their fidelity numbers.

    Attributes
    ----------
    p_true : ndarray, shape (K, n_candidates)
        ``Pr(y_x | x, theta_k)``, clipped to ``[PROB_FLOOR, 1]``.
    correct : ndarray of bool, shape (K, n_candidates)
        Whether model ``k`` predicts each candidate's label (its test accuracy on the non-members).
    train_accuracy, train_loss : ndarray, shape (K,)
        On each model's own training sample.
    train_size : int
        Records per reference model.
    """

    p_true: np.ndarray
    correct: np.ndarray
    train_accuracy: np.ndarray
    train_loss: np.ndarray
    train_size: int
    family: str


def train_reference(
    X_pool: np.ndarray,
    y_pool: np.ndarray,
    X_candidates: np.ndarray,
    y_candidates: np.ndarray,
    *,
    n_models: int,
    train_size: int,
    n_classes: int,
    family: str,
    seed: int,
    progress: ProgressFn | None = None,
) -> ReferenceModels:
    """Train ``n_models`` reference models on samples of the pool and score the candidates with each."""
    from sklearn.exceptions import ConvergenceWarning

    report = as_progress(progress)
    rng = np.random.default_rng([seed, 7])
    size = min(train_size, len(y_pool) // 2)
    p_true = np.empty((n_models, len(y_candidates)))
    correct = np.empty((n_models, len(y_candidates)), dtype=bool)
    acc, loss = np.empty(n_models), np.empty(n_models)
    rows = np.arange(len(y_candidates))
    for k in range(n_models):
        report(k / n_models, f"training reference model {k + 1} of {n_models} ({family}, {size:,} records)")
        idx = np.sort(rng.choice(len(y_pool), size=size, replace=False))
        model = make_model(family, seed=int(rng.integers(2**31 - 1)))
        with warnings.catch_warnings(), blas_threads(1):
            warnings.simplefilter("ignore", ConvergenceWarning)  # a capped iteration count is part of the family
            model.fit(X_pool[idx], y_pool[idx])
        p_train = full_proba(model, X_pool[idx], n_classes)
        acc[k] = float(np.mean(p_train.argmax(1) == y_pool[idx]))
        loss[k] = float(-np.mean(np.log(np.clip(p_train[np.arange(size), y_pool[idx]], PROB_FLOOR, 1.0))))
        p_cand = full_proba(model, X_candidates, n_classes)
        p_true[k] = np.clip(p_cand[rows, y_candidates], PROB_FLOOR, 1.0)
        correct[k] = p_cand.argmax(1) == y_candidates
    report(1.0, f"trained {n_models} reference models")
    return ReferenceModels(p_true=p_true, correct=correct, train_accuracy=acc, train_loss=loss, train_size=size, family=family)
