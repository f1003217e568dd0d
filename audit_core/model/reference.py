"""Reference models: trained here, of a family chosen to resemble the target (by the steward, or by fidelity).

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
:mod:`audit_core.model.images`, same output): ``logistic``, ``mlp``, ``gbdt``
(HistGradientBoosting), ``random_forest`` and ``extra_trees``, each made the way the target was
when the target is of its kind and its file says how (:mod:`audit_core.model.recipe`), else with
the family's defaults; ``auto`` trains them all and keeps the one that behaves most like the
target (:mod:`audit_core.model.choice`). Features for the reference models are the LiRA
page's encoding (:func:`audit_core.lira.design.prepare_design`: standardised numerics,
one-hot categoricals), computed on the feature columns only (no label enters it).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from audit_core.common.runtime import ProgressFn, as_progress, blas_threads
from audit_core.model.design import Design
from audit_core.model.recipe import NO_RECIPE, Recipe

__all__ = [
    "AUTO",
    "FAMILIES",
    "PROB_FLOOR",
    "REFERENCE_FAMILIES",
    "ReferenceModels",
    "family_recipe",
    "join",
    "make_model",
    "score_model",
    "summarise",
    "train_reference",
]

FAMILIES = ("logistic", "mlp", "gbdt", "random_forest", "extra_trees")
AUTO = "auto"
REFERENCE_FAMILIES = (AUTO, *FAMILIES)
"""The ``--reference-family`` choices: ``auto`` (choose by fidelity, :mod:`audit_core.model.choice`) or one family."""
PROB_FLOOR = 1e-7
"""Probabilities are clipped to ``[PROB_FLOOR, 1]`` before any log or ratio (a fully grown tree says 0 and 1)."""

_DEFAULTS: dict[str, Recipe] = {
    "logistic": Recipe("logistic", "LogisticRegression", {"max_iter": 1000}),
    "mlp": Recipe("mlp", "MLPClassifier", {"hidden_layer_sizes": [64], "max_iter": 300}),
    "gbdt": Recipe("gbdt", "HistGradientBoostingClassifier", {"max_iter": 200, "early_stopping": False}),
    "random_forest": Recipe("random_forest", "RandomForestClassifier", {"n_estimators": 100}),
    "extra_trees": Recipe("extra_trees", "ExtraTreesClassifier", {"n_estimators": 100}),
}
"""Each family when the target's file says nothing of its kind: fully grown forests, 200 boosting rounds, one
hidden layer of 64 units."""
_CLASSES = {
    "LogisticRegression": "sklearn.linear_model",
    "MLPClassifier": "sklearn.neural_network",
    "HistGradientBoostingClassifier": "sklearn.ensemble",
    "GradientBoostingClassifier": "sklearn.ensemble",
    "RandomForestClassifier": "sklearn.ensemble",
    "ExtraTreesClassifier": "sklearn.ensemble",
}
"""The only classes a reference model may be (a recipe names one of them; nothing else is imported)."""


def family_recipe(family: str, target: Recipe = NO_RECIPE) -> Recipe:
    """How the reference models of ``family`` are made: the target's own recipe when it is of that kind, else the default.

    ``random_forest`` and ``extra_trees`` share a forest's recipe read from ONNX (the graph cannot tell them apart).
    """
    if target.family == family and target.estimator in _CLASSES:
        return target
    if family == "extra_trees" and target.family == "random_forest" and target.source == "onnx":
        return Recipe("extra_trees", "ExtraTreesClassifier", target.params, target.source, target.notes)
    return _DEFAULTS[family]


def make_model(family: str, seed: int, target: Recipe = NO_RECIPE):
    """A fresh, seeded scikit-learn classifier of ``family`` (:func:`family_recipe`), one thread.

    Parameters read from a file that this scikit-learn refuses fall back to the family's defaults.
    """
    import importlib

    recipe = family_recipe(family, target)
    cls = getattr(importlib.import_module(_CLASSES[recipe.estimator]), recipe.estimator)
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in recipe.params.items()}
    try:
        model = cls(**params)
        model._validate_params()
    except Exception:  # an unknown or invalid parameter (another scikit-learn version wrote the file)
        if recipe is _DEFAULTS[family]:
            raise
        return make_model(family, seed)
    threads = {"n_jobs": 1} if recipe.estimator in ("RandomForestClassifier", "ExtraTreesClassifier") else {}
    return model.set_params(random_state=seed, **threads)


def _full_proba(model, X: np.ndarray, n_classes: int) -> np.ndarray:
    """``(n, n_classes)`` probabilities; a class the model never saw gets probability 0."""
    p = model.predict_proba(X)
    out = np.zeros((X.shape[0], n_classes))
    out[:, model.classes_.astype(int)] = p
    return out


@dataclass(frozen=True)
class ReferenceModels:
    """The reference models' probabilities of the true label on the candidates and the pool, and their fidelity numbers.

    Attributes
    ----------
    p_true : ndarray, shape (K, n_candidates)
        ``Pr(y_x | x, theta_k)``, clipped to ``[PROB_FLOOR, 1]``.
    correct : ndarray of bool, shape (K, n_candidates)
        Whether model ``k`` predicts each candidate's label (its test accuracy on the candidates it did not see).
    train_accuracy, train_loss : ndarray, shape (K,)
        On each model's own training sample.
    train_losses : ndarray, shape (K, train_size)
        Each model's loss on each of its training records (the choice of a family compares their distribution).
    train_size : int
        Records per reference model.
    keep : ndarray of bool, shape (K, n_candidates)
        Which candidates each model was trained on (:class:`audit_core.model.design.Design`; all False offline).
    pool_p_true, pool_correct, pool_seen : ndarray, shape (K, n_pool)
        The same on the reference pool (records no attack scores), and which pool records each model trained on.
    """

    p_true: np.ndarray
    correct: np.ndarray
    train_accuracy: np.ndarray
    train_loss: np.ndarray
    train_size: int
    family: str
    keep: np.ndarray
    train_losses: np.ndarray
    pool_p_true: np.ndarray
    pool_correct: np.ndarray
    pool_seen: np.ndarray

    def fidelity(self, non_member: np.ndarray) -> dict[str, float]:
        """Mean train / test accuracy and loss; test = the non-member candidates each model did not see."""
        unseen = ~self.keep & non_member[None, :]
        return {
            "train_accuracy": float(self.train_accuracy.mean()),
            "test_accuracy": float(self.correct[unseen].mean()),
            "train_loss": float(self.train_loss.mean()),
            "test_loss": float(-np.mean(np.log(np.clip(self.p_true[unseen], PROB_FLOOR, 1.0)))),
        }


def summarise(design: Design, family: str, per_model: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]], *,
              n_candidates: int, pool: np.ndarray) -> ReferenceModels:  # fmt: skip
    """:class:`ReferenceModels` from each model's :func:`score_model` on the candidates, then the pool (in that order)."""
    p_eval = np.stack([m[2] for m in per_model])
    correct = np.stack([m[3] for m in per_model])
    losses = np.stack([m[1] for m in per_model])
    return ReferenceModels(
        p_true=p_eval[:, :n_candidates],
        correct=correct[:, :n_candidates],
        train_accuracy=np.array([m[0] for m in per_model]),
        train_loss=losses.mean(1),
        train_size=design.train_size,
        family=family,
        keep=design.keep,
        train_losses=losses,
        pool_p_true=p_eval[:, n_candidates:],
        pool_correct=correct[:, n_candidates:],
        pool_seen=np.stack([np.isin(pool, rows) for rows in design.rows]),
    )


def join(first: ReferenceModels, rest: ReferenceModels) -> ReferenceModels:
    """The models of ``first`` then those of ``rest`` (one family, one design split by :meth:`Design.take`)."""
    stack = {name: np.concatenate([getattr(first, name), getattr(rest, name)])
             for name in ("p_true", "correct", "train_accuracy", "train_loss", "keep", "train_losses", "pool_p_true",
                          "pool_correct", "pool_seen")}  # fmt: skip
    return ReferenceModels(train_size=first.train_size, family=first.family, **stack)


def score_model(p_train: np.ndarray, y_train: np.ndarray, p_eval: np.ndarray, y_eval: np.ndarray):
    """One model's ``(train accuracy, train losses, p_true, correct)`` from its class probabilities."""
    acc = float(np.mean(p_train.argmax(1) == y_train))
    losses = -np.log(np.clip(p_train[np.arange(len(y_train)), y_train], PROB_FLOOR, 1.0))
    p_true = np.clip(p_eval[np.arange(len(y_eval)), y_eval], PROB_FLOOR, 1.0)
    return acc, losses, p_true, p_eval.argmax(1) == y_eval


def train_reference(
    X: np.ndarray,
    y: np.ndarray,
    candidates: np.ndarray,
    pool: np.ndarray,
    design: Design,
    *,
    n_classes: int,
    family: str,
    target: Recipe = NO_RECIPE,
    progress: ProgressFn | None = None,
) -> ReferenceModels:
    """Train one scikit-learn model of ``family`` per row set of ``design``; score the candidates and the pool with each.

    ``X``, ``y``: every record (members, then population); ``candidates``, ``pool``: indices into them.
    ``target``: the target's recipe (:mod:`audit_core.model.recipe`), used when it is of ``family``'s kind.
    """
    from sklearn.exceptions import ConvergenceWarning

    report = as_progress(progress)
    k_models = design.n_models
    scored = np.r_[candidates, pool]
    per_model = []
    for k, (rows, seed) in enumerate(zip(design.rows, design.seeds, strict=True)):
        report(k / k_models, f"training reference model {k + 1} of {k_models} ({family}, {len(rows):,} records)")
        model = make_model(family, seed, target)
        with warnings.catch_warnings(), blas_threads(1):
            warnings.simplefilter("ignore", ConvergenceWarning)  # a capped iteration count is part of the family
            model.fit(X[rows], y[rows])
            per_model.append(score_model(_full_proba(model, X[rows], n_classes), y[rows],
                                         _full_proba(model, X[scored], n_classes), y[scored]))  # fmt: skip
    report(1.0, f"trained {k_models} reference models")
    return summarise(design, family, per_model, n_candidates=candidates.size, pool=pool)
