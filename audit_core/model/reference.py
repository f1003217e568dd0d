"""Reference models: trained here, of a family the steward picks to resemble the target.

Who is trained on what (the bookkeeping every reference-based number rests on) is
:mod:`audit_core.model.design`:

- the population table is split once, at random (seeded), into two disjoint halves:
  the **candidate non-members** (scored by every attack beside the members; RMIA's
  population samples ``z`` are these same records) and the **reference pool**;
- offline (RMIA, LiRA offline): reference model ``k`` is trained on a random sample of the
  reference pool of the target's training size, or on a random half of the pool when the
  pool holds fewer than twice that many (so that the models differ even for a family that
  trains deterministically; the JSON's ``reference.train_size`` says which, and a warning
  too); no offline reference model has seen a candidate, member or non-member. A record
  present in both the members' and the population table would break this; the audit warns
  when it finds exact duplicates;
- online (LiRA online): separate models, each on about half of the candidates and pool
  records up to the target's training size, so each candidate is IN about half of them.

This module trains the scikit-learn families on a design's rows (image models are trained by
:mod:`audit_core.model.images`, same output). Features for the reference models are the LiRA
page's encoding (:func:`audit_core.lira.design.prepare_design`: standardised numerics,
one-hot categoricals), computed on the feature columns only (no label enters it).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from audit_core.common.runtime import ProgressFn, as_progress, blas_threads
from audit_core.model.design import Design

__all__ = ["FAMILIES", "PROB_FLOOR", "ReferenceModels", "make_model", "score_model", "summarise", "train_reference"]

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


def _full_proba(model, X: np.ndarray, n_classes: int) -> np.ndarray:
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
        Whether model ``k`` predicts each candidate's label (its test accuracy on the candidates it did not see).
    train_accuracy, train_loss : ndarray, shape (K,)
        On each model's own training sample.
    train_size : int
        Records per reference model.
    keep : ndarray of bool, shape (K, n_candidates)
        Which candidates each model was trained on (:class:`audit_core.model.design.Design`; all False offline).
    """

    p_true: np.ndarray
    correct: np.ndarray
    train_accuracy: np.ndarray
    train_loss: np.ndarray
    train_size: int
    family: str
    keep: np.ndarray

    def fidelity(self, non_member: np.ndarray) -> dict[str, float]:
        """Mean train / test accuracy and loss; test = the non-member candidates each model did not see."""
        unseen = ~self.keep & non_member[None, :]
        return {
            "train_accuracy": float(self.train_accuracy.mean()),
            "test_accuracy": float(self.correct[unseen].mean()),
            "train_loss": float(self.train_loss.mean()),
            "test_loss": float(-np.mean(np.log(np.clip(self.p_true[unseen], PROB_FLOOR, 1.0)))),
        }


def summarise(design: Design, family: str, per_model: list[tuple[float, float, np.ndarray, np.ndarray]]) -> ReferenceModels:
    """:class:`ReferenceModels` from each model's ``(train accuracy, train loss, p_true, correct)`` on the candidates."""
    return ReferenceModels(
        p_true=np.stack([m[2] for m in per_model]),
        correct=np.stack([m[3] for m in per_model]),
        train_accuracy=np.array([m[0] for m in per_model]),
        train_loss=np.array([m[1] for m in per_model]),
        train_size=design.train_size,
        family=family,
        keep=design.keep,
    )


def score_model(p_train: np.ndarray, y_train: np.ndarray, p_cand: np.ndarray, y_cand: np.ndarray):
    """One model's ``(train accuracy, train loss, p_true, correct)`` from its class probabilities."""
    acc = float(np.mean(p_train.argmax(1) == y_train))
    loss = float(-np.mean(np.log(np.clip(p_train[np.arange(len(y_train)), y_train], PROB_FLOOR, 1.0))))
    p_true = np.clip(p_cand[np.arange(len(y_cand)), y_cand], PROB_FLOOR, 1.0)
    return acc, loss, p_true, p_cand.argmax(1) == y_cand


def train_reference(
    X: np.ndarray,
    y: np.ndarray,
    candidates: np.ndarray,
    design: Design,
    *,
    n_classes: int,
    family: str,
    progress: ProgressFn | None = None,
) -> ReferenceModels:
    """Train one scikit-learn model of ``family`` per row set of ``design`` and score the candidates with each.

    ``X``, ``y``: every record (members, then population); ``candidates``: the indices scored.
    """
    from sklearn.exceptions import ConvergenceWarning

    report = as_progress(progress)
    k_models = design.n_models
    per_model = []
    for k, (rows, seed) in enumerate(zip(design.rows, design.seeds, strict=True)):
        report(k / k_models, f"training reference model {k + 1} of {k_models} ({family}, {len(rows):,} records)")
        model = make_model(family, seed=seed)
        with warnings.catch_warnings(), blas_threads(1):
            warnings.simplefilter("ignore", ConvergenceWarning)  # a capped iteration count is part of the family
            model.fit(X[rows], y[rows])
        per_model.append(score_model(_full_proba(model, X[rows], n_classes), y[rows],
                                     _full_proba(model, X[candidates], n_classes), y[candidates]))  # fmt: skip
    report(1.0, f"trained {k_models} reference models")
    return summarise(design, family, per_model)
