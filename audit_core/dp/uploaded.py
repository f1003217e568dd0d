"""The DP claim check of an uploaded model: a team that trained with canaries audits its own model in one run.

Before training, the team drew m canaries and put each in the training data by a fair coin
flip (probability 1/2, independently). The canary file lists every canary drawn, one row
each: its feature columns, its label as trained (a mislabelled canary's wrong label) and
whether it was included. The model is read as the own-model audit reads it
(:func:`audit_core.model.loading.load_model`: ONNX or skops, no code run, never a pickle)
and gets the feature columns as they are (every column but the label and the inclusion
column, in table order).

Each canary's score is the model's confidence in its label, ``log(p / (1 - p))`` with ``p`` its
probability from :func:`label_probability` (the one place a model is asked about canaries) and
clipped to ``[PROB_FLOOR, 1 - PROB_FLOOR]`` as the own-model audit clips it. It ranks the
canaries exactly as the loss ``-log p`` does, keeps canaries the model is almost sure of apart
(their ``log p`` all sit near 0), and is the train-here mode's score. A LiRA-style score would
need reference models trained with and without each canary by the team's own training code,
which an uploaded model does not come with. Scores within :data:`_SCORE_RESOLUTION` of each
other count as ties (broken at random, seeded). The scores go through the train-here mode's
one-run tests (:func:`audit_core.dp.bounds.audit_bounds`: the same grid of r, each tested at
5 % / grid size, Steinke's bound and the f-DP bound): when the claim states its DP-SGD run
(noise multiplier, sampling rate, steps) the f-DP bound against that run's curve is reported,
otherwise Steinke's bound (the rule of :mod:`audit_core.dp.bounds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from audit_core.common.alignment import align_tables
from audit_core.common.column_types import infer_column_types
from audit_core.common.errors import InputError, columns_sentence
from audit_core.common.limits import CANARIES
from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.common.yes_no import yes_no_flags, yes_no_note
from audit_core.dp.bounds import AuditedBounds, audit_bounds
from audit_core.dp.choices import INCLUDED_COLUMN
from audit_core.dp.onerun import CONFIDENCE
from audit_core.dp.tradeoff import dp_sgd_family
from audit_core.model.loading import TargetModel, label_text, load_model
from audit_core.model.reference import PROB_FLOOR

__all__ = ["CanaryFile", "UploadedDpResult", "audit_uploaded_model", "label_probability"]

_SCORE = "log(p / (1 - p)) of the canary's label under the model (ranks as the loss does; no reference models)"
_SCORE_RESOLUTION = 1e-4
"""Scores less than this above the lowest score of their group (groups do not chain) count as that score: ties,
broken at random (seeded) by the one-run test. ONNX computes in float32, so without it one model saved as ONNX and
as skops could rank two equal canaries differently (a forest's 23/50 is not always the same float32)."""
_FAIR_COIN_P = 0.001
"""Below this two-sided binomial p-value, the included share is said to be unlikely for a fair coin per canary."""


@dataclass(frozen=True)
class CanaryFile:
    """The canaries of an uploaded model, as read from the team's file.

    Attributes
    ----------
    features : pandas.DataFrame
        ``(m, d)`` the feature columns in table order (numbers as float64, categories as ``str``).
    labels : tuple of str
        Each canary's label as trained (``label_text``).
    included : np.ndarray
        ``(m,)`` bool: the canary was in the training data.
    name, target, included_column : str
        The file's name and its two named columns.
    notes : tuple of str
        How the file was read where that is worth saying (yes/no text, odd columns, a lopsided coin).
    """

    features: pd.DataFrame = field(repr=False)
    labels: tuple[str, ...]
    included: np.ndarray = field(repr=False)
    name: str
    target: str
    included_column: str
    notes: tuple[str, ...] = ()

    @property
    def m(self) -> int:
        return len(self.labels)


def _check_columns(table: pd.DataFrame, *, target: str, included_column: str, name: str) -> None:
    for column, what in ((target, "label"), (included_column, "inclusion")):
        if column not in table.columns:
            flag = "--target" if what == "label" else "--included-column"
            raise InputError(f"The {what} column '{column}' ({flag}) is not in canary file '{name}'; "
                             + columns_sentence(table.columns, column))  # fmt: skip
    if target == included_column:
        raise InputError(f"The label and the inclusion column are both '{target}'; name two different columns.")
    if table.shape[1] < 3:
        raise InputError(f"Canary file '{name}' has no feature column besides '{target}' and '{included_column}'; "
                         "the model needs each canary's features.")  # fmt: skip


def _check_sides(included: np.ndarray, *, name: str, column: str) -> None:
    m = len(included)
    if not CANARIES.low <= m <= CANARIES.high:
        raise InputError(f"Canary file '{name}' has {m:,} canaries; the one-run test takes {CANARIES.low:,} to "
                         f"{CANARIES.high:,} (10 canaries can prove at most epsilon 0.68; 1,000 about 5.3).")  # fmt: skip
    k = int(included.sum())
    if k == 0 or k == m:
        side = "included (1)" if k == 0 else "left out (0)"
        raise InputError(f"No canary of '{name}' is marked {side} in column '{column}': the audit compares canaries "
                         "trained on with canaries left out, so it needs both.")  # fmt: skip


def _check_distinct(canaries: pd.DataFrame, *, name: str) -> None:
    """Each canary once: two rows with the same features and label are one record counted twice (its coin flipped
    twice, or contradicting itself), which the one-run test's independent coins do not allow."""
    repeated = canaries.duplicated(keep=False).to_numpy()
    if repeated.any():
        first, again = (int(i) for i in np.flatnonzero(repeated)[:2])
        raise InputError(f"Canary file '{name}' lists the same canary more than once ({int(repeated.sum()):,} rows, "
                         f"first rows {first} and {again}: the same features and label); each canary must be a distinct "
                         "record with its own coin flip.")  # fmt: skip


def _coin_note(included: np.ndarray, *, column: str) -> str | None:
    k, m = int(included.sum()), len(included)
    p = float(stats.binomtest(k, m, 0.5).pvalue)
    if p >= _FAIR_COIN_P:
        return None
    return (f"{k:,} of {m:,} canaries are marked included in '{column}', unlikely with a fair coin per canary "
            f"(two-sided binomial p = {p:.1g}); the one-run test assumes each canary was included with probability "
            "1/2, independently, before training: if they were chosen otherwise, the bound is not valid.")  # fmt: skip


def _read_canary_file(table: pd.DataFrame, *, target: str, included_column: str = INCLUDED_COLUMN,
                     name: str = "canaries") -> CanaryFile:  # fmt: skip
    """The canaries from the team's table (see the module docstring); :class:`InputError`, one sentence, when unusable."""
    _check_columns(table, target=target, included_column=included_column, name=name)
    included = yes_no_flags(table[included_column], column=included_column, table=name, yes="included", no="left out")
    _check_sides(included, name=name, column=included_column)
    labels = table[target]
    empty = int(labels.isna().sum())
    if empty:
        raise InputError(f"The label column '{target}' of '{name}' has {empty:,} empty cell{'s' * (empty > 1)}; "
                         "every canary needs the label it was trained with.")  # fmt: skip
    x = table.drop(columns=[target, included_column])
    _check_distinct(table.drop(columns=[included_column]), name=name)
    aligned = align_tables({name: x}, types=infer_column_types(x))
    features = aligned[name].reindex(columns=[str(c) for c in x.columns])  # every column, in table order, as the model
    notes = [yes_no_note(table[included_column], column=included_column, yes="included", no="left out"),
             _coin_note(included, column=included_column), *aligned.warnings]  # fmt: skip
    return CanaryFile(features=features, labels=tuple(label_text(v) for v in labels), included=included, name=name,
                      target=target, included_column=included_column, notes=tuple(n for n in notes if n))  # fmt: skip


def _classes(model: TargetModel, labels: Sequence[str]) -> list[str]:
    """The model's classes when it names them (every label must be one), else the labels in scikit-learn's order."""
    seen = sorted(set(labels), key=lambda c: (0, float(c), c) if _is_number(c) else (1, 0.0, c))
    if model.classes is None:
        return seen
    unknown = [c for c in seen if c not in model.classes]
    if unknown:
        raise InputError(f"The canaries' label(s) {', '.join(repr(c) for c in unknown[:10])} are not among the model's "
                         f"classes ({', '.join(repr(c) for c in model.classes[:10])}); give each canary the label it was "
                         "trained with, in the model's own coding.")  # fmt: skip
    return list(model.classes)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _near_ties_merged(scores: np.ndarray) -> np.ndarray:
    """Each score replaced by the lowest score of its group: sorted, a group takes what lies within the resolution."""
    order = np.argsort(scores, kind="stable")
    ranked = scores[order]
    merged = ranked.copy()
    start = ranked[0]
    for i, value in enumerate(ranked):
        start = value if value - start > _SCORE_RESOLUTION else start
        merged[i] = start
    out = np.empty_like(scores)
    out[order] = merged
    return out


def _label_logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, PROB_FLOOR, 1.0 - PROB_FLOOR)
    return np.log(p) - np.log1p(-p)


def label_probability(model: TargetModel, inputs: Any, labels: Sequence[str]) -> np.ndarray:
    """``(n,)`` each record's probability of its own label under the model: the one call the canaries are scored by.

    ``inputs`` is what ``model.predict_proba`` takes (a table's feature columns); ``labels`` are label texts.
    """
    classes = _classes(model, labels)
    p = model.predict_proba(inputs, classes=classes)
    column = {c: i for i, c in enumerate(classes)}
    return p[np.arange(len(labels)), [column[c] for c in labels]]


@dataclass(frozen=True)
class UploadedDpResult:
    """A finished DP claim check of an uploaded model (``to_json`` is ``dp-audit-model --json``)."""

    epsilon: float
    delta: float
    bound: AuditedBounds
    canaries: CanaryFile = field(repr=False)
    scores: np.ndarray = field(repr=False)
    model: dict[str, Any]
    seed: int

    mechanism: tuple[float, float, int] | None = None
    """The claim's DP-SGD run (noise multiplier, sampling rate, steps) when it states it."""

    @property
    def ceiling(self) -> float:
        """The largest bound the reported method can give with these canaries."""
        return self.bound.ceiling

    @property
    def disproved(self) -> bool:
        return self.bound.epsilon > self.epsilon

    def canary_table(self) -> pd.DataFrame:
        """One row per canary, in file order: its row, label, inclusion and score."""
        c = self.canaries
        return pd.DataFrame({"row": np.arange(c.m), "label": list(c.labels), "included": c.included,
                             "score": self.scores})  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The train-here mode's keys; what an upload cannot tell (the accountant, accuracies, no-DP contrast) is null."""
        c = self.canaries
        return {
            "claimed": {"epsilon": self.epsilon, "delta": self.delta},
            "claimed_mechanism": None if self.mechanism is None else
            dict(zip(("noise_multiplier", "sample_rate", "steps"), self.mechanism, strict=True)),
            "accountant_epsilon": None,
            "epsilon_lower_bound": self.bound.to_json(),
            "ceiling": self.ceiling,
            "train_accuracy": None,
            "test_accuracy": None,
            "non_dp": None,
            "canaries": {
                "m": c.m,
                "kind": None,
                "included": int(c.included.sum()),
                "file": c.name,
                "target": c.target,
                "included_column": c.included_column,
            },
            "model": self.model,
            "score": _SCORE,
            "notes": list(c.notes),
            "seed": self.seed,
        }


def audit_uploaded_model(
    model_bytes: bytes,
    canary_table: pd.DataFrame,
    *,
    target: str,
    epsilon: float,
    delta: float,
    included_column: str = INCLUDED_COLUMN,
    trusted: Sequence[str] = (),
    mechanism: tuple[float, float, int] | None = None,
    seed: int = 0,
    names: tuple[str, str] = ("model", "canaries"),
    progress: ProgressFn | None = None,
) -> UploadedDpResult:
    """Score every canary with the uploaded model and run the one-run test of the claim (see the module docstring).

    Parameters
    ----------
    model_bytes : bytes
        The model file (ONNX or skops; never a pickle).
    canary_table : pandas.DataFrame
        One row per canary: feature columns, ``target`` and ``included_column``.
    epsilon, delta : float
        The claim.
    mechanism : (noise multiplier, sampling rate, steps), optional
        The claim's DP-SGD run, when it states it.
    trusted : sequence of str
        skops types trusted beyond skops' defaults.
    names : (model, canary file) names, for messages and the JSON.

    The settings are the uploaded-model DP check's knobs (``DpModelSettings``), checked here: what the
    page and the CLI refuse raises their :class:`~audit_core.common.errors.InputError` sentence.
    """
    from audit_core.dp.spec import DpModelSettings

    noise, rate, steps = mechanism if mechanism is not None else (None, None, None)
    DpModelSettings.checked(target=target, epsilon=epsilon, delta=delta, included_column=included_column,
                            trust_skops_types=tuple(trusted), noise_multiplier=noise, sample_rate=rate,
                            steps=steps)  # fmt: skip
    report = as_progress(progress)
    canaries = _read_canary_file(canary_table, target=target, included_column=included_column, name=names[1])
    report(0.1, f"Reading the model {names[0]}")
    model = load_model(model_bytes, names[0], trusted=trusted)
    report(0.4, f"Scoring {canaries.m:,} canaries")
    scores = _near_ties_merged(_label_logit(label_probability(model, canaries.features, canaries.labels)))
    report(0.8, "Auditing the claim")
    family = None
    if mechanism is not None:
        family = dp_sgd_family(sample_rate=mechanism[1], steps=mechanism[2], delta=delta)
    bound = audit_bounds(scores, canaries.included, delta=delta, mechanism=family, confidence=CONFIDENCE, seed=seed)
    info = {"file": names[0], "format": model.format, "description": model.description, "sha256": model.sha256,
            "classes": list(model.classes) if model.classes is not None else None}  # fmt: skip
    result = UploadedDpResult(epsilon=epsilon, delta=delta, bound=bound, canaries=canaries, scores=scores, model=info,
                              mechanism=mechanism, seed=seed)  # fmt: skip
    report(1.0, "Done")
    return result
