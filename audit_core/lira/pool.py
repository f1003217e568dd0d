"""The model pool: M models trained on balanced random halves of a table, and every record scored by each.

The slow, setup stage of the LiRA audit (docs/methods.md §2): :func:`train_pool` encodes the
table (:mod:`audit_core.lira.design`), draws the keep-matrix (:mod:`audit_core.lira.keep_matrix`),
trains the M models as one batched computation (:mod:`audit_core.lira.training`) and keeps
the ``(M, N)`` matrix of LiRA scores ``s = log(p_y / (1 - p_y))`` with the keep-matrix.
Everything after it (:mod:`audit_core.lira.evaluation`) is cheap and re-runs when alpha moves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from audit_core.common.runtime import ProgressFn, as_progress, sub_progress
from audit_core.lira.batched_models import BatchedModels
from audit_core.lira.choices import ModelType
from audit_core.lira.design import Design, prepare_design
from audit_core.lira.keep_matrix import balanced_keep_matrix
from audit_core.lira.training import TrainingDivergedError, TrainOptions, train_models

__all__ = ["ModelPool", "train_pool"]


@dataclass(frozen=True)
class ModelPool:
    """The trained pool: LiRA scores of every model on every record.

    Attributes
    ----------
    scores : np.ndarray
        ``(M, N)`` float64 logit-scaled confidences on the true label.
    keep : np.ndarray
        ``(M, N)`` bool, True where record x trained model m. Rows come in
        complementary pairs (2k, 2k+1).
    model : {"logistic", "mlp"}
    target : str
    classes : tuple[str, ...]
    n_features : int
    train_accuracy, test_accuracy : np.ndarray
        ``(M,)`` accuracy of each model on its own half and on the other half.
    seconds : float
        Wall time of the batched training.
    """

    scores: np.ndarray = field(repr=False)
    keep: np.ndarray = field(repr=False)
    model: ModelType
    target: str
    classes: tuple[str, ...]
    n_features: int
    train_accuracy: np.ndarray = field(repr=False)
    test_accuracy: np.ndarray = field(repr=False)
    seconds: float

    @property
    def n_models(self) -> int:
        """M, the number of models."""
        return int(self.scores.shape[0])

    @property
    def n_samples(self) -> int:
        """N, the number of records."""
        return int(self.scores.shape[1])


def train_pool(
    df: pd.DataFrame,
    *,
    target: str,
    model: ModelType = "logistic",
    n_models: int,
    seed: int = 0,
    device: torch.device | str | None = None,
    progress: ProgressFn | None = None,
    client: Any = None,
    options: TrainOptions = TrainOptions(),
) -> ModelPool:
    """Train M models on balanced random halves of ``df`` and score every record.

    Parameters
    ----------
    df : pandas.DataFrame
        The data set D (N_+ records) of docs/methods.md §2.
    target : str
        Class column.
    model : {"logistic", "mlp"}
    n_models : int
        M: even, 8 to 1,024 (the ``--models`` knob's bound, ``LIRA_MODELS``); no default here: the knob's
        (``LiraSettings.models``, 64) is the one default.
    seed : int
    device : torch.device or str, optional
    progress : callable, optional
    client : distributed.Client, optional
        Train the M models in batches on this Dask cluster (same keep-matrix, same
        models: :func:`audit_core.lira.training.train_models`); None: in this process.
    options : TrainOptions
        How the models are trained (:class:`audit_core.lira.training.TrainOptions`: MLP size,
        epochs, learning rate...); the audit uses the defaults.

    Returns
    -------
    ModelPool

    Raises
    ------
    InputError
        A target column or a table the models cannot be trained on (:func:`audit_core.lira.design.prepare_design`);
        ``TrainingDivergedError`` (a subclass) when training produces a non-finite loss; a model type or M
        the ``--model`` / ``--models`` knobs refuse (``LiraSettings``), with their sentence.
    """
    from audit_core.lira.spec import LiraSettings

    LiraSettings.checked(target=target, model=model, models=n_models)
    report = as_progress(progress)
    report(0.0, "Encoding the table")
    design = prepare_design(df, target=target)
    keep = balanced_keep_matrix(len(design.y), n_models=n_models, seed=seed)
    t0 = time.perf_counter()
    models = train_models(design.X, design.y, keep, kind=model, n_classes=design.n_classes, options=options, seed=seed,
                          client=client, device=device, progress=sub_progress(progress, 0.02, 0.97))  # fmt: skip
    seconds = time.perf_counter() - t0
    report(0.97, "Scoring every record with every model")
    pool = _score_pool(models, design, keep, model=model, target=target, seconds=seconds)
    report(1.0, "Done")
    return pool


def _score_pool(
    models: BatchedModels, design: Design, keep: np.ndarray, *, model: ModelType, target: str, seconds: float
) -> ModelPool:
    """Score every record with every trained model, and measure each model on its own half and on the other."""
    scores = models.scores(design.X, design.y)
    if not np.all(np.isfinite(scores)):
        raise TrainingDivergedError("Training produced non-finite scores; lower the learning rate or check the features.")
    correct = models.predict(design.X) == design.y[None, :]
    train_acc = (correct & keep).sum(1) / keep.sum(1)
    test_acc = (correct & ~keep).sum(1) / (~keep).sum(1)
    return ModelPool(
        scores=scores,
        keep=keep,
        model=model,
        target=target,
        classes=design.classes,
        n_features=design.X.shape[1],
        train_accuracy=train_acc,
        test_accuracy=test_acc,
        seconds=seconds,
    )
