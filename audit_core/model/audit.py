"""Audit an uploaded model: per-record membership risk from LOSS, RMIA and LiRA, after a fidelity check.

The steward gives the trained model (ONNX or skops, :mod:`audit_core.model.loading`), the
members (its training table, with the label column) and a population table from the same
distribution that was not used for training. Then:

1. both tables are typed and validated as on the synthetic page
   (:func:`audit_core.common.tables.align_tables`); the model gets the feature columns in
   table order (the input contract of :mod:`audit_core.model.loading`);
2. the population is split in half at random (seeded): candidate non-members, and the pool the
   reference models are trained on (:mod:`audit_core.model.reference`: no reference model sees
   a candidate);
3. every attack scores every candidate (:mod:`audit_core.model.attacks`), and each is evaluated
   as every audit in this tool evaluates attacks: ROC and AUC, the TPR at 0.1 / 1 / 10 % FPR with
   its interval (:func:`audit_core.common.roc.tpr_at_fpr`), the epsilon lower bound
   (:mod:`audit_core.common.privacy_bound`);
4. the fidelity check compares the target's and the reference models' train and test accuracy:
   reference models that do not behave like the target make the RMIA / LiRA numbers
   untrustworthy (they then understate the risk); LOSS needs no reference model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.privacy_bound import DEFAULT_DELTA, epsilon_lower_bound
from audit_core.common.roc import DEFAULT_FPRS, _fpr_key, roc_curve, tpr_at_fpr
from audit_core.common.runtime import ProgressFn, sub_progress
from audit_core.common.tables import align_tables, columns_sentence, infer_column_types
from audit_core.model.attacks import (
    ATTACKS,
    REFERENCE_ATTACKS,
    RMIA_A,
    lira_offline_scores,
    loss_scores,
    rmia_scores,
)
from audit_core.model.loading import label_text, load_model
from audit_core.model.reference import PROB_FLOOR, train_reference
from audit_core.scores.audit import AttackCheck

FIDELITY_MARGIN = 0.10
"""Largest gap in train or test accuracy between the target and the reference models for the check to pass."""
MIN_MEMBERS = 10
MIN_POPULATION = 20
EXPOSED_ROWS = 20


@dataclass(frozen=True)
class Fidelity:
    """The target's and the reference models' (mean) train and test accuracy and loss, and whether they agree."""

    target: dict[str, float]
    reference: dict[str, float]
    margin: float
    ok: bool

    def gaps(self) -> dict[str, float]:
        return {k: self.reference[k] - self.target[k] for k in ("train_accuracy", "test_accuracy")}

    def to_json(self) -> dict[str, Any]:
        """``{target: {...}, reference: {...}, margin, ok}``."""
        return {"target": self.target, "reference": self.reference, "margin": self.margin, "ok": self.ok}

    def sentence(self) -> str:
        t, r = self.target, self.reference
        both = (f"target train / test accuracy {t['train_accuracy']:.3f} / {t['test_accuracy']:.3f}, reference models "
                f"{r['train_accuracy']:.3f} / {r['test_accuracy']:.3f}")  # fmt: skip
        if self.ok:
            return f"The reference models behave like the target ({both}, within {self.margin:g})."
        return (
            f"The reference models do not mimic the target ({both}, a gap above {self.margin:g}), so the RMIA and LiRA "
            "numbers are not trustworthy and likely understate the risk; the LOSS attack needs no reference model and stands."
        )


@dataclass(frozen=True)
class ModelAudit:
    """The audit of one uploaded model (see the module docstring)."""

    attacks: dict[str, AttackCheck]
    fidelity: Fidelity
    records: pd.DataFrame = field(repr=False)
    exposed: pd.DataFrame = field(repr=False)
    model: dict[str, Any]
    reference: dict[str, Any]
    rmia_by_k: dict[str, dict[str, Any]]
    n_members: int
    n_non_members: int
    fprs: tuple[float, ...]
    delta: float
    seed: int
    settings: dict[str, Any]
    warnings: tuple[str, ...] = ()

    def best(self) -> AttackCheck:
        """The strongest attack: the highest lower bound of the TPR at 1 % FPR, then the AUC."""
        return max(self.attacks.values(), key=lambda a: (a.tpr_at_fpr["0.01"].ci_low, a.auc))

    def to_json(self) -> dict[str, Any]:
        return {
            "audit": "model",
            "model": self.model,
            "n_members": self.n_members,
            "n_non_members": self.n_non_members,
            "attacks": {name: a.to_json() for name, a in self.attacks.items()},
            "fidelity": self.fidelity.to_json(),
            "reference": self.reference,
            "rmia_by_reference_models": self.rmia_by_k,
            "settings": self.settings,
            "warnings": list(self.warnings),
        }


def _labels(train: pd.Series, population: pd.Series, *, target: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The classes (sorted as scikit-learn sorts ``classes_``), as label texts, and each table's class index."""
    both = pd.concat([train, population], ignore_index=True)
    if both.isna().any():
        raise InputError(f"The target column '{target}' has {int(both.isna().sum())} missing values; drop those rows.")
    if pd.api.types.is_numeric_dtype(train.dtype) and pd.api.types.is_numeric_dtype(population.dtype):
        order = [label_text(v) for v in np.unique(both.to_numpy())]
    else:
        order = sorted({label_text(v) for v in both})
    classes = list(dict.fromkeys(order))
    if len(classes) < 2:
        raise InputError(f"The target column '{target}' has a single class; a membership audit needs a classifier.")
    index = {c: i for i, c in enumerate(classes)}
    return classes, np.array([index[label_text(v)] for v in train]), np.array([index[label_text(v)] for v in population])


def _features(train: pd.DataFrame, population: pd.DataFrame, *, target: str, names: tuple[str, str]):
    for frame, name in zip((train, population), names, strict=True):
        if target not in frame.columns:
            raise InputError(f"The target column '{target}' is not in table '{name}'; "
                             + columns_sentence(frame.columns, target))
    columns = [str(c) for c in train.columns if c != target]
    if not columns:
        raise InputError(f"Table '{names[0]}' has no column besides the target '{target}'; the model needs features.")
    x_train, x_pop = train.drop(columns=[target]), population.drop(columns=[target])
    aligned = align_tables({names[0]: x_train, names[1]: x_pop}, types=infer_column_types(x_train))
    # the model gets every feature column in table order; a column align_tables dropped (all missing) stays, as NaN
    return aligned[names[0]].reindex(columns=columns), aligned[names[1]].reindex(columns=columns), aligned.warnings


def _reference_design(features: pd.DataFrame) -> np.ndarray:
    """The reference models' features: the LiRA page's encoding, fitted on the feature columns (no label)."""
    from audit_core.lira.batched_models import prepare_design

    dummy = "__label__" if "__label__" not in features.columns else "__label__" + "_" * len(features.columns)
    labelled = features.assign(**{dummy: np.arange(len(features)) % 2})
    return prepare_design(labelled, target=dummy, min_rows=2).X


def _mean_log(p: np.ndarray) -> float:
    return float(-np.mean(np.log(np.clip(p, PROB_FLOOR, 1.0))))


def _share_at_least(scores: np.ndarray, negatives: np.ndarray) -> np.ndarray:
    """Per record: the share of non-members scoring at least as high (the FPR at which it would be flagged)."""
    neg = np.sort(negatives)
    return (neg.size - np.searchsorted(neg, scores, side="left")) / neg.size


def _check(scores: np.ndarray, member: np.ndarray, *, name: str, fprs: Sequence[float], delta: float, seed: int):
    return AttackCheck(
        name=name,
        curve=roc_curve(scores, member),
        tpr_at_fpr={_fpr_key(f): tpr_at_fpr(scores, member, f) for f in fprs},
        epsilon=epsilon_lower_bound(scores, member, delta=delta, seed=seed),
    )


def audit_model(
    model_bytes: bytes,
    train: pd.DataFrame,
    population: pd.DataFrame,
    *,
    target: str,
    attacks: Sequence[str] = ATTACKS,
    n_reference: int = 4,
    family: str = "logistic",
    trusted: Sequence[str] = (),
    seed: int = 0,
    delta: float = DEFAULT_DELTA,
    names: tuple[str, str, str] = ("model", "train", "population"),
    progress: ProgressFn | None = None,
) -> ModelAudit:
    """Run the audit (see the module docstring); :class:`InputError` (one sentence) for anything refused.

    Parameters
    ----------
    model_bytes : bytes
        The model file (ONNX or skops; never a pickle).
    train, population : pandas.DataFrame
        The members (the model's training table) and records from the same distribution it was not trained on.
    target : str
        The label column (in both tables).
    attacks : sequence of str
        Among :data:`audit_core.model.attacks.ATTACKS`.
    n_reference : int
        Reference models K (RMIA, LiRA offline).
    family : {"logistic", "mlp", "gbdt"}
        The reference models' family.
    trusted : sequence of str
        skops types trusted beyond skops' defaults.
    names : (model, train, population) file names, for messages and the report.
    """
    attacks = tuple(dict.fromkeys(attacks))
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown or not attacks:
        raise InputError(f"Attacks must be among {', '.join(ATTACKS)}; got {', '.join(unknown) or 'none'}.")
    if len(train) < MIN_MEMBERS or len(population) < MIN_POPULATION:
        raise InputError(
            f"The audit needs at least {MIN_MEMBERS} members and {MIN_POPULATION} population records (half of them are "
            f"candidate non-members, half train the reference models); got {len(train):,} and {len(population):,}."
        )
    model_name, train_name, pop_name = names
    x_m, x_p, warnings = _features(train, population, target=target, names=(train_name, pop_name))
    classes, y_m, y_p = _labels(train[target].reset_index(drop=True), population[target].reset_index(drop=True),
                                target=target)  # fmt: skip
    model = load_model(model_bytes, model_name, trusted=trusted)
    prob = model.predict_proba(pd.concat([x_m, x_p], ignore_index=True), classes=classes)
    prob_m, prob_p = prob[: len(x_m)], prob[len(x_m) :]

    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(x_p))
    cand_p, pool = np.sort(perm[: len(x_p) // 2]), np.sort(perm[len(x_p) // 2 :])
    n_m, n_c = len(x_m), len(cand_p)
    member = np.r_[np.ones(n_m, dtype=bool), np.zeros(n_c, dtype=bool)]
    y_cand = np.r_[y_m, y_p[cand_p]]
    p_target = np.clip(np.r_[prob_m[np.arange(n_m), y_m], prob_p[cand_p, y_p[cand_p]]], PROB_FLOOR, 1.0)

    X = _reference_design(pd.concat([x_m, x_p], ignore_index=True))
    X_m, X_p = X[:n_m], X[n_m:]
    ref = train_reference(X_p[pool], y_p[pool], np.vstack([X_m, X_p[cand_p]]), y_cand, n_models=n_reference,
                          train_size=n_m, n_classes=len(classes), family=family, seed=seed,
                          progress=sub_progress(progress, 0.0, 0.9))  # fmt: skip
    z_index = np.arange(n_m, n_m + n_c)
    fprs = DEFAULT_FPRS
    scores: dict[str, np.ndarray] = {}
    extra: dict[str, Any] = {}
    for name in attacks:
        if name == "loss":
            scores[name] = loss_scores(p_target)
        elif name == "rmia":
            scores[name] = rmia_scores(p_target, ref.p_true, z_index)
        elif name == "lira_offline":
            scores[name], extra["lira_sigma"] = lira_offline_scores(p_target, ref.p_true)
    checks = {n: _check(s, member, name=n, fprs=fprs, delta=delta, seed=seed) for n, s in scores.items()}

    rmia_by_k: dict[str, dict[str, Any]] = {}
    if "rmia" in attacks:
        for k in (1, 2, 4, 8, 16, 32, 64):
            if k <= n_reference:
                s = rmia_scores(p_target, ref.p_true[:k], z_index)
                at = tpr_at_fpr(s, member, 0.01).to_json()
                rmia_by_k[str(k)] = {"auc": roc_curve(s, member).auc, "tpr_at_fpr": {"0.01": at}}

    nonmem = ~member
    t_fid = {
        "train_accuracy": float(np.mean(prob_m.argmax(1) == y_m)),
        "test_accuracy": float(np.mean(prob_p[cand_p].argmax(1) == y_p[cand_p])),
        "train_loss": _mean_log(prob_m[np.arange(n_m), y_m]),
        "test_loss": _mean_log(prob_p[cand_p, y_p[cand_p]]),
    }
    r_fid = {
        "train_accuracy": float(ref.train_accuracy.mean()),
        "test_accuracy": float(ref.correct[:, nonmem].mean()),
        "train_loss": float(ref.train_loss.mean()),
        "test_loss": _mean_log(ref.p_true[:, nonmem]),
    }
    ok = all(abs(r_fid[k] - t_fid[k]) <= FIDELITY_MARGIN for k in ("train_accuracy", "test_accuracy"))
    fidelity = Fidelity(target=t_fid, reference=r_fid, margin=FIDELITY_MARGIN, ok=bool(ok))

    warnings = list(warnings)
    if ref.train_size < n_m:
        warnings.append(
            f"The reference models were trained on {ref.train_size:,} records each (half of the reference pool, which is "
            f"half the population), fewer than the target's {n_m:,}; a population table of at least four times the "
            "members makes them closer to the target."
        )
    dup = pd.concat([x_m.assign(__y=y_m), x_p.assign(__y=y_p)], ignore_index=True).duplicated(keep=False).to_numpy()
    n_dup = int(dup[:n_m].sum())
    if n_dup and dup[n_m:].any():
        warnings.append(
            f"{n_dup:,} member record(s) also appear, identical, in the population table (or in the members twice); a "
            "record in both is counted as a member and as a non-member, which blurs every attack."
        )

    table_rows = np.r_[np.arange(n_m), cand_p]
    records = pd.DataFrame({
        "table": np.where(member, "train", "population"),
        "row": table_rows,
        "is_member": member,
        "label": [classes[i] for i in y_cand],
        "p_target": p_target,
    })  # fmt: skip
    for name, s in scores.items():
        records[f"{name}_score"] = s
        records[f"{name}_fpr"] = _share_at_least(s, s[nonmem])
    best = max(checks.values(), key=lambda a: (a.tpr_at_fpr["0.01"].ci_low, a.auc)).name
    order = np.argsort(-scores[best], kind="mergesort")
    records = records.iloc[order].reset_index(drop=True)
    top = records[records["is_member"]].head(EXPOSED_ROWS)
    exposed = pd.concat(
        [top[["row", f"{best}_score", f"{best}_fpr", "label"]].reset_index(drop=True),
         train.drop(columns=[target]).iloc[top["row"].to_numpy()].reset_index(drop=True)],
        axis=1,
    )  # fmt: skip
    return ModelAudit(
        attacks=checks,
        fidelity=fidelity,
        records=records,
        exposed=exposed,
        model={"file": model_name, "format": model.format, "description": model.description, "sha256": model.sha256,
               "classes": classes},
        reference={"family": family, "models": n_reference, "train_size": ref.train_size, "pool_size": int(pool.size),
                   "target_train_size": n_m, "rmia_a": RMIA_A, "rmia_gamma": 1.0, **extra,
                   "attacks_using_them": [a for a in attacks if a in REFERENCE_ATTACKS]},
        rmia_by_k=rmia_by_k,
        n_members=n_m,
        n_non_members=n_c,
        fprs=tuple(fprs),
        delta=delta,
        seed=seed,
        settings={"target": target, "attacks": list(attacks), "reference_models": n_reference,
                  "reference_family": family, "trusted_skops_types": list(trusted), "seed": seed},
        warnings=tuple(warnings),
    )
