"""The DP claim check: train with DP-SGD at the claimed (epsilon, delta) with canaries, and audit the claim in one run.

The table is encoded as the LiRA audit encodes it (:func:`audit_core.lira.design.prepare_design`),
split into test rows, m canaries and base rows (:mod:`audit_core.dp.canaries`); one model is
trained by DP-SGD at the claim and one, the same, without DP (:mod:`audit_core.dp.training`)
on the base rows and the included canaries. Each canary is scored by LiRA's logit
confidence in its (trained) label, and :func:`audit_core.dp.bounds.audit_bounds` turns the
scores into the largest epsilon the run disproves at 95 %: the f-DP bound against the
curve of the DP-SGD run the claim describes (its sampling rate and steps), beside Steinke
et al.'s bound. With ``white_box`` the DP-SGD run also carries m gradient canaries
(:mod:`audit_core.dp.whitebox`), audited the same way from the weights of every step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.dp.bounds import AuditedBounds, audit_bounds
from audit_core.dp.canaries import Canaries, draw_canaries
from audit_core.dp.onerun import CONFIDENCE
from audit_core.dp.tradeoff import Family, dp_sgd_family
from audit_core.dp.training import BATCH_SIZE, MAX_GRAD_NORM, TrainedModel, train
from audit_core.dp.whitebox import GradientCanaries, canary_scores, draw_gradient_canaries
from audit_core.fabrication.threads import cpu_threads
from audit_core.lira.design import prepare_design

__all__ = ["DpAuditResult", "ModelAudit", "WhiteBoxAudit", "run_dp_audit"]


@dataclass(frozen=True)
class ModelAudit:
    """One trained model's audit: its bounds, accuracies, and every canary's score."""

    bound: AuditedBounds
    train_accuracy: float
    test_accuracy: float
    scores: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class WhiteBoxAudit:
    """The DP-SGD run's gradient canaries: their bounds and scores (the same run as ``DpAuditResult.dp``)."""

    bound: AuditedBounds
    statistic: str
    canaries: GradientCanaries = field(repr=False)
    scores: np.ndarray = field(repr=False)

    def to_json(self, accountant_epsilon: float) -> dict[str, Any]:
        c = self.canaries
        return {"epsilon_lower_bound": self.bound.to_json(), "statistic": self.statistic,
                "share_of_accountant_epsilon": self.bound.epsilon / accountant_epsilon if accountant_epsilon > 0 else None,
                "canaries": {"m": c.m, "kind": "dirac gradient", "included": int(c.included.sum())}}  # fmt: skip


@dataclass(frozen=True)
class DpAuditResult:
    """A finished DP claim check (``to_json`` is the CLI's ``--json``)."""

    epsilon: float
    delta: float
    accountant_epsilon: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    epochs: int
    model: str
    dp: ModelAudit
    non_dp: ModelAudit
    canaries: Canaries = field(repr=False)
    n_rows: int
    n_train: int
    seed: int
    white_box: WhiteBoxAudit | None = None

    @property
    def ceiling(self) -> float:
        """The largest bound the reported method can give with these canaries (every guess right)."""
        return self.dp.bound.ceiling

    @property
    def disproved(self) -> bool:
        return self.dp.bound.epsilon > self.epsilon

    @property
    def white_box_disproved(self) -> bool:
        return self.white_box is not None and self.white_box.bound.epsilon > self.epsilon

    def canary_table(self) -> pd.DataFrame:
        """One row per canary: its table row, whether it was trained on, and both models' scores (and the white-box one)."""
        c = self.canaries
        table = pd.DataFrame({"row": c.rows, "included": c.included, "label": c.y,
                              "score_dp": self.dp.scores, "score_non_dp": self.non_dp.scores})  # fmt: skip
        if self.white_box is not None:
            table["white_box_included"] = self.white_box.canaries.included
            table["score_white_box"] = self.white_box.scores
        return table

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
            "white_box": None if self.white_box is None else self.white_box.to_json(self.accountant_epsilon),
            "training": {
                "model": self.model,
                "epochs": self.epochs,
                "steps": self.steps,
                "noise_multiplier": self.noise_multiplier,
                "sample_rate": self.sample_rate,
                "max_grad_norm": MAX_GRAD_NORM,
                "expected_batch_size": BATCH_SIZE,
                "accountant": "opacus rdp",
            },
            "canaries": {"m": c.m, "kind": c.kind, "included": int(c.included.sum())},
            "rows": {"table": self.n_rows, "train": self.n_train, "test": len(c.test)},
            "seed": self.seed,
        }


def _audit_model(trained: TrainedModel, c: Canaries, X, y, train_rows, *, delta: float, mechanism: Family,
                 seed: int) -> ModelAudit:  # fmt: skip
    scores = trained.scores(c.features(X), c.y)
    bound = audit_bounds(scores, c.included, delta=delta, mechanism=mechanism, confidence=CONFIDENCE, seed=seed)
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
    white_box: bool = False,
    statistic: str = "sum",
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> DpAuditResult:
    """Draw the canaries, train with and without DP-SGD, audit both runs (see the module docstring).

    The settings are the DP claim audit's knobs (``DpSettings``: ``m`` is ``--canaries``, ``kind``
    ``--canary-kind``, ``statistic`` ``--white-box-statistic``), checked here: what the page and the CLI
    refuse raises their :class:`~audit_core.common.errors.InputError` sentence.
    """
    from audit_core.dp.spec import DpSettings

    DpSettings.checked(target=target, epsilon=epsilon, delta=delta, canaries=m, canary_kind=kind, model=model,
                       epochs=epochs, white_box=white_box, white_box_statistic=statistic)  # fmt: skip
    report = as_progress(progress)
    design = prepare_design(df, target=target)
    c = draw_canaries(design.y, m=m, kind=kind, n_classes=design.n_classes, seed=seed, n_features=design.X.shape[1])
    gradient = draw_gradient_canaries(m, n_classes=design.n_classes, seed=seed) if white_box else None
    X, y = design.X, design.y
    rows = np.concatenate([c.base, c.rows[c.included]])
    Xc = c.features(X)
    Xt = np.vstack([X[c.base], Xc[c.included]])
    yt = np.concatenate([y[c.base], c.y[c.included]])
    fit = functools.partial(train, Xt, yt, n_classes=design.n_classes, model=model, epochs=epochs, seed=seed)
    with cpu_threads(1):  # small batches: one thread is faster on shared cores, and the sums do not depend on them
        report(0.05, f"Training with DP-SGD at epsilon {epsilon:g}, delta {delta:g}"
               + (f", with {m:,} gradient canaries" if white_box else ""))  # fmt: skip
        private = fit(dp=(epsilon, delta), gradient_canaries=gradient)
        report(0.5, "Training the same model without DP")
        plain = fit(dp=None)
    assert private.accountant_epsilon is not None  # trained with DP: the accountant's epsilon and the noise are known
    assert private.noise_multiplier is not None
    assert private.sample_rate is not None
    mechanism = dp_sgd_family(sample_rate=private.sample_rate, steps=private.steps, delta=delta)
    base = c.base  # train accuracy on the true labels of the records always trained on
    report(0.7, "Auditing the DP-SGD model's canaries (Steinke et al. and f-DP bounds)")
    dp = _audit_model(private, c, X, y, base, delta=delta, mechanism=mechanism, seed=seed)
    report(0.8, "Auditing the same canaries without DP")
    non_dp = _audit_model(plain, c, X, y, base, delta=delta, mechanism=mechanism, seed=seed)
    wb = None
    if gradient is not None:
        report(0.9, "Auditing the gradient canaries (white-box)")
        assert private.gradient_canary_steps is not None
        scores = canary_scores(private.gradient_canary_steps, statistic=statistic,
                               noise_multiplier=private.noise_multiplier, sample_rate=private.sample_rate)  # fmt: skip
        wb = WhiteBoxAudit(bound=audit_bounds(scores, gradient.included, delta=delta, mechanism=mechanism,
                                              confidence=CONFIDENCE, seed=seed),
                           statistic=statistic, canaries=gradient, scores=scores)  # fmt: skip
    result = DpAuditResult(
        epsilon=epsilon, delta=delta, accountant_epsilon=float(private.accountant_epsilon),
        noise_multiplier=float(private.noise_multiplier), sample_rate=float(private.sample_rate), steps=private.steps,
        epochs=epochs, model=model, dp=dp, non_dp=non_dp, canaries=c, n_rows=len(df), n_train=len(rows), seed=seed,
        white_box=wb,
    )  # fmt: skip
    report(1.0, "Done")
    return result
