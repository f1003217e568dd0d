"""The DP claim check: train with DP-SGD at the claimed (epsilon, delta) with canaries, and audit the claim in one run.

The table is encoded as the LiRA audit encodes it (:func:`audit_core.lira.design.prepare_design`),
split into test rows, m canaries and base rows (:mod:`audit_core.dp.canaries`); one model is
trained by DP-SGD at the claim and one, the same, without DP (:mod:`audit_core.dp.training`)
on the base rows and the included canaries. Each canary is scored by LiRA's logit
confidence in its (trained) label, and :func:`audit_core.dp.onerun.one_run_audit` turns
the scores into the largest epsilon the run disproves at 95 % confidence.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.dp.canaries import Canaries, draw_canaries
from audit_core.dp.onerun import CONFIDENCE, OneRunBound, ceiling, one_run_audit
from audit_core.dp.training import BATCH_SIZE, MAX_GRAD_NORM, TrainedModel, train
from audit_core.fabrication.threads import cpu_threads
from audit_core.lira.design import prepare_design

__all__ = ["DpAuditResult", "ModelAudit", "run_dp_audit"]


@dataclass(frozen=True)
class ModelAudit:
    """One trained model's audit: its bound, accuracies, and every canary's score."""

    bound: OneRunBound
    train_accuracy: float
    test_accuracy: float
    scores: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class DpAuditResult:
    """A finished DP claim check (``to_json`` is the CLI's ``--json``)."""

    epsilon: float
    delta: float
    accountant_epsilon: float
    noise_multiplier: float
    steps: int
    epochs: int
    model: str
    dp: ModelAudit
    non_dp: ModelAudit
    ceiling: float
    canaries: Canaries = field(repr=False)
    n_rows: int
    n_train: int
    seed: int

    @property
    def disproved(self) -> bool:
        return self.dp.bound.epsilon > self.epsilon

    def canary_table(self) -> pd.DataFrame:
        """One row per canary: its table row, whether it was trained on, and both models' scores."""
        c = self.canaries
        return pd.DataFrame({"row": c.rows, "included": c.included, "label": c.y,
                             "score_dp": self.dp.scores, "score_non_dp": self.non_dp.scores})  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        c = self.canaries
        return {
            "claimed": {"epsilon": self.epsilon, "delta": self.delta},
            "accountant_epsilon": self.accountant_epsilon,
            "epsilon_lower_bound": self.dp.bound.to_json(),
            "ceiling": self.ceiling,
            "train_accuracy": self.dp.train_accuracy,
            "test_accuracy": self.dp.test_accuracy,
            "non_dp": {
                "epsilon_lower_bound": self.non_dp.bound.to_json(),
                "train_accuracy": self.non_dp.train_accuracy,
                "test_accuracy": self.non_dp.test_accuracy,
            },
            "training": {
                "model": self.model,
                "epochs": self.epochs,
                "steps": self.steps,
                "noise_multiplier": self.noise_multiplier,
                "max_grad_norm": MAX_GRAD_NORM,
                "expected_batch_size": BATCH_SIZE,
                "accountant": "opacus rdp",
            },
            "canaries": {"m": c.m, "kind": c.kind, "included": int(c.included.sum())},
            "rows": {"table": self.n_rows, "train": self.n_train, "test": len(c.test)},
            "seed": self.seed,
        }


def _audit_model(trained: TrainedModel, c: Canaries, X, y, train_rows, *, delta: float, seed: int) -> ModelAudit:
    scores = trained.scores(X[c.rows], c.y)
    bound = one_run_audit(scores, c.included, delta=delta, confidence=CONFIDENCE, seed=seed)
    return ModelAudit(bound=bound, train_accuracy=trained.accuracy(X[train_rows], y[train_rows]),
                      test_accuracy=trained.accuracy(X[c.test], y[c.test]), scores=scores)  # fmt: skip


def run_dp_audit(
    df: pd.DataFrame,
    *,
    target: str,
    epsilon: float,
    delta: float,
    m: int = 1000,
    kind: str = "population",
    model: str = "logistic",
    epochs: int = 10,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> DpAuditResult:
    """Draw the canaries, train with and without DP-SGD, audit both runs (see the module docstring)."""
    report = as_progress(progress)
    design = prepare_design(df, target=target)
    c = draw_canaries(design.y, m=m, kind=kind, n_classes=design.n_classes, seed=seed)
    X, y = design.X, design.y
    rows = np.concatenate([c.base, c.rows[c.included]])
    Xt = X[rows]
    yt = np.concatenate([y[c.base], c.y[c.included]])
    fit = functools.partial(train, Xt, yt, n_classes=design.n_classes, model=model, epochs=epochs, seed=seed)
    with cpu_threads(1):  # small batches: one thread is faster on shared cores, and the sums do not depend on them
        report(0.05, f"Training with DP-SGD at epsilon {epsilon:g}, delta {delta:g}")
        private = fit(dp=(epsilon, delta))
        report(0.6, "Training the same model without DP")
        plain = fit(dp=None)
    assert private.accountant_epsilon is not None  # trained with DP: the accountant's epsilon and the noise are known
    assert private.noise_multiplier is not None
    report(0.95, "Auditing the canaries")
    base = c.base  # train accuracy on the true labels of the records always trained on
    result = DpAuditResult(
        epsilon=epsilon, delta=delta, accountant_epsilon=float(private.accountant_epsilon),
        noise_multiplier=float(private.noise_multiplier), steps=private.steps, epochs=epochs, model=model,
        dp=_audit_model(private, c, X, y, base, delta=delta, seed=seed),
        non_dp=_audit_model(plain, c, X, y, base, delta=delta, seed=seed),
        ceiling=ceiling(c.m, delta, confidence=CONFIDENCE), canaries=c, n_rows=len(df), n_train=len(rows), seed=seed,
    )  # fmt: skip
    report(1.0, "Done")
    return result
