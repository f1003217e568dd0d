"""The LiRA audit's result: the pool, its evaluation at alpha and the what-if over M, as the page and the CLI show it.

:func:`evaluate_pool` makes one from a trained pool (the run stage: it re-runs when alpha
moves); :func:`run_lira` trains the pool and evaluates it in one call (docs/methods.md §2).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from audit_core.common.groups import GroupRisk, risk_by_group
from audit_core.common.privacy_bound import epsilon_bound_json, target_model_scores
from audit_core.common.runtime import ProgressFn, as_progress, sub_progress
from audit_core.lira.choices import ModelType
from audit_core.lira.evaluation import LiraEvaluation, evaluate_lira
from audit_core.lira.fpc import FpcSimulation, fpc_sweep
from audit_core.lira.pool import ModelPool, train_pool
from audit_core.lira.sweep import ModelsSweep, models_sweep
from audit_core.lira.training import TrainOptions

__all__ = ["LiraResult", "evaluate_pool", "run_lira"]


@dataclass(frozen=True)
class LiraResult:
    """Pool + evaluation + what-if, as shown by the page and written by the CLI.

    Attributes
    ----------
    pool : ModelPool
    evaluation : LiraEvaluation
    sweep : ModelsSweep
    columns : dict[str, pandas.Series], optional
        The records' feature values, for the risk by group.
    groups : GroupRisk, optional
        The risk by group of model 0 (the audited target).
    seed : int
    """

    pool: ModelPool
    evaluation: LiraEvaluation
    sweep: ModelsSweep
    columns: dict[str, pd.Series] | None = field(default=None, repr=False)
    groups: GroupRisk | None = None
    seed: int = 0

    @functools.cached_property
    def fpc_sims(self) -> tuple[FpcSimulation, ...]:
        """The finite-population what-if at this M (the page's tab and the report; not part of the JSON)."""
        return fpc_sweep(n_models=self.pool.n_models, repeats=100, seed=self.seed)

    def with_groups(self, column: str | None) -> LiraResult:
        """This result with its risk by group: model 0's offline LiRA score per record, grouped by ``column``."""
        if not self.columns:
            return self
        scores, members = target_model_scores(self.pool.scores, self.pool.keep, target=0)
        return replace(self, groups=risk_by_group(self.columns, scores, members, column=column))

    def to_json(self) -> dict[str, Any]:
        """The reproducible result: the same data, settings and seed give the same JSON, byte for byte.

        The wall-clock training time is not part of it (see :meth:`timing`).
        """
        out = self.evaluation.to_json()
        out.update(
            {
                "model": self.pool.model,
                "target": self.pool.target,
                "train_accuracy": float(self.pool.train_accuracy.mean()),
                "test_accuracy": float(self.pool.test_accuracy.mean()),
                "models_sweep": self.sweep.table().to_dict(orient="records"),
            }
        )
        # Empirical epsilon lower bound of model 0 as the audited target (offline LiRA score, one per record).
        target_scores, target_members = target_model_scores(self.pool.scores, self.pool.keep, target=0)
        out["epsilon_lower_bound"] = epsilon_bound_json(target_scores, target_members, seed=0) | {"target_model": 0}
        if self.groups is not None:
            out["groups"] = self.groups.to_json()
        return out

    def scores_table(self) -> pd.DataFrame:
        """Every model's score on every record and the keep-matrix, long: ``model``, ``record``, ``score``, ``in_training``.

        ``record`` is the record's 0-based row in the table; ``in_training`` says whether it
        trained that model (the keep-matrix). What ``lira --scores-out FILE`` writes as Parquet,
        so that any other membership tool can be run on the same models.
        """
        m, n = self.pool.scores.shape
        return pd.DataFrame({
            "model": np.repeat(np.arange(m, dtype=np.int64), n),
            "record": np.tile(np.arange(n, dtype=np.int64), m),
            "score": self.pool.scores.ravel(),
            "in_training": self.pool.keep.ravel(),
        })  # fmt: skip

    def scores_parquet(self) -> bytes:
        """:meth:`scores_table` as Parquet bytes (``--scores-out``)."""
        return self.scores_table().to_parquet(index=False)

    def timing(self) -> dict[str, float]:
        """Wall-clock seconds of the batched training: varies run to run, so kept out of :meth:`to_json`."""
        return {"train_seconds": self.pool.seconds}


def evaluate_pool(
    pool: ModelPool,
    *,
    fpr: float,
    seed: int = 0,
    n_bootstrap: int = 200,
    progress: ProgressFn | None = None,
) -> LiraResult:
    """Evaluate a trained pool at alpha and run the what-if over M: the cheap, re-run part.

    The page calls it each time alpha moves and the CLI once, with the same seed for the
    record bootstrap and the model subsets, so both show the same numbers. Called directly, it
    refuses what they refuse (``LiraSettings``: alpha's bound, and an alpha the pool's records x M
    cannot measure), with their :class:`~audit_core.common.errors.InputError` sentence.
    """
    from audit_core.lira.spec import LiraSettings

    settings = LiraSettings.checked(target=pool.target, model=pool.model, models=pool.n_models, fpr=fpr)
    settings.check_measurable(pool.n_samples)
    report = as_progress(progress)
    report(0.0, "Evaluating naive, post-processed and per-sample rules")
    ev = evaluate_lira(pool.scores, pool.keep, fpr=fpr, n_bootstrap=n_bootstrap, seed=seed)
    sw = models_sweep(pool.scores, pool.keep, fpr=fpr, seed=seed, progress=sub_progress(progress, 0.3, 1.0))
    return LiraResult(pool=pool, evaluation=ev, sweep=sw, seed=seed)


def run_lira(
    df: pd.DataFrame,
    *,
    target: str,
    model: ModelType = "logistic",
    n_models: int,
    fpr: float = 0.01,
    seed: int = 0,
    n_bootstrap: int = 200,
    device: torch.device | str | None = None,
    progress: ProgressFn | None = None,
    options: TrainOptions = TrainOptions(),
) -> LiraResult:
    """Train the pool, evaluate at alpha, and run the what-if over M (docs/methods.md §2).

    Its settings are checked by the LiRA audit's knobs (``LiraSettings``) in :func:`train_pool` and
    :func:`evaluate_pool`: what the page and the CLI refuse raises their sentence.
    """
    pool = train_pool(df, target=target, model=model, n_models=n_models, seed=seed, device=device,
                      progress=sub_progress(progress, 0.0, 0.85), options=options)  # fmt: skip
    return evaluate_pool(pool, fpr=fpr, seed=seed, n_bootstrap=n_bootstrap, progress=sub_progress(progress, 0.85, 1.0))
