"""Audit an uploaded model: per-record membership risk from LOSS, RMIA and LiRA, after a fidelity check.

The steward gives the trained model, the members (its training records, with their labels) and a
population from the same distribution that was not used for training, as either kind:

- a table model (ONNX or skops, :mod:`audit_core.model.loading`) with a training table and a
  population table: both are typed and validated as on the synthetic page
  (:func:`audit_core.common.alignment.align_tables`); the model gets the feature columns in table
  order; the reference models are of a scikit-learn family the steward picks;
- an image model (safetensors weights of the fabrication architectures,
  :mod:`audit_core.model.images`) with members and population as ``.npz`` images: the
  reference models are of the uploaded architecture.

Then, for either kind (:func:`_audit_case`):

1. the population is split in half at random (seeded): candidate non-members, and the pool the
   reference models are trained on (:mod:`audit_core.model.design`: no offline reference model
   sees a candidate; each online one holds about half of them);
2. every attack scores every candidate (:mod:`audit_core.model.attacks`), and each is evaluated
   as every audit in this tool evaluates attacks: ROC and AUC, the TPR at 0.1 / 1 / 10 % FPR with
   its interval (:func:`audit_core.common.roc.tpr_at_fpr`), the epsilon lower bound
   (:mod:`audit_core.common.privacy_bound`);
3. the fidelity check compares the target's and the reference models' train and test accuracy:
   reference models that do not behave like the target make the RMIA / LiRA numbers
   untrustworthy (they then understate the risk); LOSS needs no reference model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.alignment import align_tables
from audit_core.common.column_types import infer_column_types
from audit_core.common.errors import InputError, columns_sentence
from audit_core.common.privacy_bound import DEFAULT_DELTA, epsilon_lower_bound
from audit_core.common.roc import DEFAULT_FPRS, _fpr_key, roc_curve, tpr_at_fpr
from audit_core.common.runtime import ProgressFn, sub_progress
from audit_core.model.attacks import (
    DEFAULT_ATTACKS,
    OFFLINE_ATTACKS,
    REFERENCE_ATTACKS,
    RMIA_A,
    SUPERVISED_FOLDS,
    lira_offline_scores,
    lira_online_scores,
    lira_variance,
    loss_scores,
    rmia_scores,
    supervised_features,
    supervised_scores,
)
from audit_core.model.choice import RULE, FamilyFidelity, choose, family_fidelity, target_side, tolerance
from audit_core.model.design import Design, offline_design, online_design
from audit_core.model.images import ImageSet
from audit_core.model.loading import is_safetensors, label_text, load_model
from audit_core.model.recipe import NO_RECIPE, Recipe
from audit_core.model.reference import (
    AUTO,
    FAMILIES,
    PROB_FLOOR,
    ReferenceModels,
    family_recipe,
    join,
    train_reference,
)
from audit_core.scores.audit import AttackCheck

__all__ = ["REFERENCE_EPOCHS", "Fidelity", "ModelAudit", "audit_model"]

_FIDELITY_MARGIN = 0.10
"""Largest gap in train or test accuracy between the target and the reference models for the check to pass."""
_MIN_MEMBERS = 10
_MIN_POPULATION = 20
_EXPOSED_ROWS = 20
REFERENCE_EPOCHS = 30
"""Epochs of an image model's reference models (``--reference-epochs``)."""


@dataclass(frozen=True)
class Fidelity:
    """The target's and the reference models' (mean) train and test accuracy and loss, and whether they agree.

    ``reference`` are the offline reference models (the online ones when only LiRA online ran);
    ``online`` the online ones when both kinds were trained.
    """

    target: dict[str, float]
    reference: dict[str, float]
    margin: float
    ok: bool
    online: dict[str, float] | None = None

    def gaps(self) -> dict[str, float]:
        return {k: self.reference[k] - self.target[k] for k in ("train_accuracy", "test_accuracy")}

    def to_json(self) -> dict[str, Any]:
        """``{target: {...}, reference: {...}, margin, ok}`` (and ``reference_online`` when online models ran too)."""
        out = {"target": self.target, "reference": self.reference, "margin": self.margin, "ok": self.ok}
        return out if self.online is None else {**out, "reference_online": self.online}

    def sentence(self) -> str:
        t, r = self.target, self.reference
        both = (f"target train / test accuracy {t['train_accuracy']:.3f} / {t['test_accuracy']:.3f}, reference models "
                f"{r['train_accuracy']:.3f} / {r['test_accuracy']:.3f}")  # fmt: skip
        if self.online is not None:
            both += f", online reference models {self.online['train_accuracy']:.3f} / {self.online['test_accuracy']:.3f}"
        if self.ok:
            return f"The reference models behave like the target ({both}, within {self.margin:g})."
        return (
            f"The reference models do not mimic the target ({both}, a gap above {self.margin:g}), so the RMIA and LiRA "
            "numbers are not trustworthy and likely understate the risk; the LOSS attack needs no reference model and stands."
        )


def _fidelity(target: dict[str, float], refs: dict[str, ReferenceModels], non_member: np.ndarray) -> Fidelity:
    sides = {kind: r.fidelity(non_member) for kind, r in refs.items()}
    ok = all(abs(side[k] - target[k]) <= _FIDELITY_MARGIN for side in sides.values() for k in ("train_accuracy", "test_accuracy"))
    reference = sides.get("offline", sides.get("online"))
    online = sides["online"] if len(sides) == 2 else None
    return Fidelity(target=target, reference=reference, margin=_FIDELITY_MARGIN, ok=bool(ok), online=online)  # type: ignore[arg-type]


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


@dataclass(frozen=True)
class _Case:
    """What the attacks need, whatever the kind of model: the target's probabilities and a reference trainer.

    Records are the members (``y_m``, ``prob_m``), then the population (``y_p``, ``prob_p``).
    ``train(family, candidates, pool, design, progress)`` trains one reference model of ``family`` per row set of
    ``design``; ``family`` is the requested one (``auto`` for tables: one of ``families``, chosen by fidelity);
    ``values(rows)`` are the members' values at ``rows`` for the exposed-records table.
    """

    prob_m: np.ndarray
    prob_p: np.ndarray
    y_m: np.ndarray
    y_p: np.ndarray
    classes: list[str]
    model: dict[str, Any]
    family: str
    families: tuple[str, ...]
    train: Callable[[str, np.ndarray, np.ndarray, Design, ProgressFn], ReferenceModels]
    values: Callable[[np.ndarray], pd.DataFrame]
    duplicated: np.ndarray
    warnings: tuple[str, ...] = ()
    reference_extra: dict[str, Any] = field(default_factory=dict)
    recipe: Recipe = NO_RECIPE


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
    from audit_core.lira.design import prepare_design

    dummy = "__label__" if "__label__" not in features.columns else "__label__" + "_" * len(features.columns)
    labelled = features.assign(**{dummy: np.arange(len(features)) % 2})
    return prepare_design(labelled, target=dummy, min_rows=2).X


def _table_case(model_bytes: bytes, train: pd.DataFrame, population: pd.DataFrame, *, target: str | None, family: str,
                trusted: Sequence[str], names: tuple[str, str, str]) -> _Case:  # fmt: skip
    """The case of a table model (ONNX / skops) on a training table and a population table."""
    model_name, train_name, pop_name = names
    if target is None:
        raise InputError("--target (Label column) is required: the label column of the members' and the population's tables.")
    x_m, x_p, warnings = _features(train, population, target=target, names=(train_name, pop_name))
    classes, y_m, y_p = _labels(train[target].reset_index(drop=True), population[target].reset_index(drop=True),
                                target=target)  # fmt: skip
    model = load_model(model_bytes, model_name, trusted=trusted)
    prob = model.predict_proba(pd.concat([x_m, x_p], ignore_index=True), classes=classes)
    X = _reference_design(pd.concat([x_m, x_p], ignore_index=True))
    y = np.r_[y_m, y_p]
    dup = pd.concat([x_m.assign(__y=y_m), x_p.assign(__y=y_p)], ignore_index=True).duplicated(keep=False).to_numpy()
    features = train.drop(columns=[target])
    return _Case(
        prob_m=prob[: len(x_m)], prob_p=prob[len(x_m) :], y_m=y_m, y_p=y_p, classes=classes,
        model={"file": model_name, "format": model.format, "description": model.description, "sha256": model.sha256,
               "classes": classes},
        family=family, families=FAMILIES,
        train=lambda fam, cand, pool, design, progress: train_reference(X, y, cand, pool, design, n_classes=len(classes),
                                                                        family=fam, target=model.recipe,
                                                                        progress=progress),
        values=lambda rows: features.iloc[rows].reset_index(drop=True),
        duplicated=dup, warnings=tuple(warnings), recipe=model.recipe,
    )  # fmt: skip


def _image_case(model_bytes: bytes, train: ImageSet, population: ImageSet, *, epochs: int, model_name: str) -> _Case:
    """The case of an image model (safetensors) on member and population images (:mod:`audit_core.model.images`)."""
    from audit_core.model.images import check_images, duplicated, load_image_model, probabilities, train_image_reference

    model = load_image_model(model_bytes, model_name)
    check_images(model, train, population)
    images = np.concatenate([train.images, population.images])
    labels = np.r_[train.labels, population.labels]
    prob = probabilities(model.module, images)
    classes = [str(i) for i in range(model.n_classes)]
    return _Case(
        prob_m=prob[: len(train)], prob_p=prob[len(train) :], y_m=train.labels, y_p=population.labels, classes=classes,
        model={"file": model_name, "format": "safetensors", "description": model.description(), "sha256": model.sha256,
               "classes": classes, "architecture": model.architecture},
        family=model.architecture, families=(model.architecture,),
        train=lambda _, cand, pool, design, progress: train_image_reference(images, labels, cand, pool, design,
                                                                            model=model, epochs=epochs,
                                                                            progress=progress),
        values=lambda rows: pd.DataFrame({"image": [f"{train.name}[{int(r)}]" for r in rows]}),
        duplicated=duplicated(images, labels),
        reference_extra={"epochs": epochs, "device": str(next(model.module.parameters()).device.type)},
    )  # fmt: skip


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


def _case(model_bytes: bytes, train: Any, population: Any, *, target: str | None, family: str, trusted: Sequence[str],
          epochs: int, names: tuple[str, str, str]) -> _Case:  # fmt: skip
    """The table or the image case, after refusing a model with the other kind of records (one sentence)."""
    images = [isinstance(x, ImageSet) for x in (train, population)]
    model_name = names[0]
    if is_safetensors(model_bytes):
        if not all(images):
            raise InputError(f"Model '{model_name}' is a safetensors image model (small_cnn or resnet18): give the "
                             "members and the population as .npz images (arrays 'images' and 'labels'), not tables.")  # fmt: skip
        if target is not None:
            raise InputError("--target names the label column of a table; the .npz images carry their labels in "
                             "'labels', so leave --target out.")  # fmt: skip
        return _image_case(model_bytes, train, population, epochs=epochs, model_name=model_name)
    if any(images):
        raise InputError(f"Model '{model_name}' is a table model (ONNX or skops): give the members and the population as "
                         "CSV or Parquet tables; .npz images go with a .safetensors image model.")  # fmt: skip
    return _table_case(model_bytes, train, population, target=target, family=family, trusted=trusted, names=names)


def audit_model(
    model_bytes: bytes,
    train: pd.DataFrame | ImageSet,
    population: pd.DataFrame | ImageSet,
    *,
    target: str | None = None,
    attacks: Sequence[str] = DEFAULT_ATTACKS,
    n_reference: int = 4,
    family: str = AUTO,
    variance: str = "auto",
    epochs: int = REFERENCE_EPOCHS,
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
        The model file (ONNX, skops or safetensors; never a pickle).
    train, population : pandas.DataFrame or ImageSet
        The members (the model's training records) and records from the same distribution it was not trained on:
        tables for an ONNX / skops model, images (:func:`audit_core.model.images.read_images`) for a safetensors one.
    target : str
        The label column (in both tables); None for images.
    attacks : sequence of str
        Among :data:`audit_core.model.attacks.ATTACKS`.
    n_reference : int
        Reference models K (of each kind: offline for RMIA / LiRA offline, online for LiRA online).
    family : {"auto", "logistic", "mlp", "gbdt", "random_forest", "extra_trees"}
        The reference models' family (tables; an image model's reference models are of its architecture). ``auto``
        trains every family and keeps the one that behaves most like the target (:mod:`audit_core.model.choice`).
    variance : {"auto", "global", "per_sample"}
        LiRA online's variance (``auto``: global below 64 reference models).
    epochs : int
        Training epochs of an image model's reference models.
    trusted : sequence of str
        skops types trusted beyond skops' defaults.
    names : (model, train, population) file names, for messages and the report.

    The settings are the model audit's knobs (``ModelSettings``), checked here: what the page and the
    CLI refuse raises their sentence.
    """
    from audit_core.model.spec import ModelSettings

    ModelSettings.checked(target=target, attacks=tuple(attacks), reference_models=n_reference, reference_family=family,
                          lira_variance=variance, reference_epochs=epochs, trust_skops_types=tuple(trusted))  # fmt: skip
    attacks = tuple(dict.fromkeys(attacks))
    if len(train) < _MIN_MEMBERS or len(population) < _MIN_POPULATION:
        raise InputError(
            f"The audit needs at least {_MIN_MEMBERS} members and {_MIN_POPULATION} population records (half of them are "
            f"candidate non-members, half train the reference models); got {len(train):,} and {len(population):,}."
        )
    case = _case(model_bytes, train, population, target=target, family=family, trusted=trusted, epochs=epochs, names=names)
    settings = {"target": target, "attacks": list(attacks), "reference_models": n_reference, "reference_family": family,
                "trusted_skops_types": list(trusted), "seed": seed, "lira_variance": variance}  # fmt: skip
    if isinstance(train, ImageSet):
        settings["reference_epochs"] = epochs
    return _audit_case(case, attacks=attacks, n_reference=n_reference, variance=variance, seed=seed, delta=delta,
                       settings=settings, progress=progress)  # fmt: skip


@dataclass(frozen=True)
class _Split:
    """The candidates (members, then the candidate half of the population) and the pool, as indices into every record."""

    n_m: int
    cand_p: np.ndarray  # population rows that are candidate non-members
    pool: np.ndarray  # indices (members + population) of the reference pool
    member: np.ndarray  # per candidate

    @property
    def candidates(self) -> np.ndarray:
        return np.r_[np.arange(self.n_m), self.n_m + self.cand_p]


def _split(n_m: int, n_p: int, seed: int) -> _Split:
    perm = np.random.default_rng(seed).permutation(n_p)
    cand_p, pool = np.sort(perm[: n_p // 2]), np.sort(perm[n_p // 2 :])
    member = np.r_[np.ones(n_m, dtype=bool), np.zeros(cand_p.size, dtype=bool)]
    return _Split(n_m=n_m, cand_p=cand_p, pool=n_m + pool, member=member)


@dataclass(frozen=True)
class _References:
    """The reference models the attacks use, and, under ``auto``, every family tried with its fidelity."""

    refs: dict[str, ReferenceModels]  # "offline" (the family used), "online"
    family: str
    tried: dict[str, ReferenceModels]  # auto: every family's first offline model (the one the choice reads)
    fits: list[FamilyFidelity]  # auto only, in the order tried
    within: float = 0.0  # auto: distances this close to the smallest count as equal


def _train_references(case: _Case, split: _Split, attacks: tuple[str, ...], *, n_reference: int, variance: str, seed: int,
                      progress: ProgressFn | None) -> _References:  # fmt: skip
    """The offline reference models (every family under ``auto``) and the online ones (the family used)."""
    online = "lira_online" in attacks
    auto = case.family == AUTO
    offline = auto or any(a in OFFLINE_ATTACKS for a in attacks) or not online
    share = 0.45 if online and offline else 0.9
    cand, n_m = split.candidates, split.n_m
    families = case.families if auto else (case.family,)
    family = families[0]
    refs: dict[str, ReferenceModels] = {}
    tried: dict[str, ReferenceModels] = {}
    fits: list[FamilyFidelity] = []
    within = 0.0
    if offline:
        design = offline_design(split.pool, cand.size, n_models=n_reference, train_size=n_m, seed=seed)
        if auto:  # one model a family (the design's first) decides; the chosen family then gets the other K - 1
            probe = design.take(slice(0, 1))
            part = share / (len(families) + n_reference - 1)
            for i, fam in enumerate(families):
                tried[fam] = case.train(fam, cand, split.pool, probe, sub_progress(progress, part * i, part * (i + 1)))
            pool_p = split.pool - n_m
            side = target_side(case.prob_m, case.y_m, case.prob_p[pool_p], case.y_p[pool_p])
            fits = [family_fidelity(side, tried[f]) for f in families]
            within = tolerance(design.train_size, n_m)
            family = choose(fits, own_kind=case.recipe.family, within=within).family
            refs["offline"] = tried[family]
            if n_reference > 1:
                rest = case.train(family, cand, split.pool, design.take(slice(1, None)),
                                  sub_progress(progress, part * len(families), share))  # fmt: skip
                refs["offline"] = join(tried[family], rest)
        else:
            refs["offline"] = tried[family] = case.train(family, cand, split.pool, design, sub_progress(progress, 0.0, share))
    if online:
        min_in = 2 if lira_variance(variance, n_reference) == "per_sample" else 1
        design = online_design(cand, split.pool, n_models=n_reference, train_size=n_m, seed=seed, min_in=min_in)
        refs["online"] = case.train(family, cand, split.pool, design, sub_progress(progress, 0.9 - share, 0.9))
    return _References(refs=refs, family=family, tried=tried, fits=fits, within=within)


def _scores(attacks: tuple[str, ...], case: _Case, split: _Split, p_target: np.ndarray, refs: dict[str, ReferenceModels],
            z_index: np.ndarray, *, variance: str, n_reference: int,
            seed: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:  # fmt: skip
    scores: dict[str, np.ndarray] = {}
    extra: dict[str, Any] = {}
    for name in attacks:
        if name == "loss":
            scores[name] = loss_scores(p_target)
        elif name == "rmia":
            scores[name] = rmia_scores(p_target, refs["offline"].p_true, z_index)
        elif name == "lira_offline":
            scores[name], extra["lira_sigma"] = lira_offline_scores(p_target, refs["offline"].p_true)
        elif name == "lira_online":
            on = refs["online"]
            scores[name], info = lira_online_scores(p_target, on.p_true, on.keep,
                                                    variance=lira_variance(variance, n_reference))  # fmt: skip
            extra["online"] = {"models": n_reference, "train_size": on.train_size, "in_models_min": info["min_in"],
                               "in_models_max": int(on.keep.sum(0).max()), "out_models_min": info["min_out"],
                               "variance": info["variance"], "sigma": info["sigma"]}  # fmt: skip
        elif name == "supervised":
            prob = np.r_[case.prob_m, case.prob_p[split.cand_p]]
            y = np.r_[case.y_m, case.y_p[split.cand_p]]
            offline = refs.get("offline")
            features, names = supervised_features(prob, y, None if offline is None else offline.p_true)
            scores[name] = supervised_scores(features, split.member, seed=seed)
            extra["supervised"] = {"folds": SUPERVISED_FOLDS, "features": names,
                                   "classifier": "HistGradientBoostingClassifier(max_iter=100, max_leaf_nodes=15, "
                                                 "min_samples_leaf=20, l2_regularization=1.0)"}  # fmt: skip
    return scores, extra


def _family_results(references: _References, attacks: tuple[str, ...], p_target: np.ndarray, member: np.ndarray,
                    z_index: np.ndarray, own_kind: str | None) -> dict[str, Any]:  # fmt: skip
    """Under ``auto``: every family's fidelity and what its reference models' offline attacks find (never used to choose)."""
    if not references.fits:
        return {}
    out: dict[str, Any] = {}
    for fit in references.fits:
        p_ref = references.tried[fit.family].p_true
        found: dict[str, Any] = {}
        for name in (a for a in attacks if a in OFFLINE_ATTACKS):
            s = rmia_scores(p_target, p_ref, z_index) if name == "rmia" else lira_offline_scores(p_target, p_ref)[0]
            found[name] = {"auc": roc_curve(s, member).auc, "tpr_at_fpr": {"0.01": tpr_at_fpr(s, member, 0.01).to_json()}}
        out[fit.family] = {**fit.to_json(), "attacks": found}
    return {"rule": RULE, "chosen": references.family, "own_kind": own_kind, "tolerance": references.within,
            "reference_models_per_family": 1, "families": out}


def _rmia_by_k(p_target: np.ndarray, refs: dict[str, ReferenceModels], member: np.ndarray, z_index: np.ndarray,
               n_reference: int) -> dict[str, dict[str, Any]]:  # fmt: skip
    out: dict[str, dict[str, Any]] = {}
    for k in (1, 2, 4, 8, 16, 32, 64):
        if k <= n_reference:
            s = rmia_scores(p_target, refs["offline"].p_true[:k], z_index)
            out[str(k)] = {"auc": roc_curve(s, member).auc, "tpr_at_fpr": {"0.01": tpr_at_fpr(s, member, 0.01).to_json()}}
    return out


def _warnings(case: _Case, refs: dict[str, ReferenceModels], split: _Split) -> list[str]:
    n_m = split.n_m
    warnings = list(case.warnings)
    if "offline" in refs and refs["offline"].train_size < n_m:
        warnings.append(
            f"The reference models were trained on {refs['offline'].train_size:,} records each (half of the reference "
            f"pool, which is half the population), fewer than the target's {n_m:,}; a population table of at least four "
            "times the members makes them closer to the target."
        )
    if "online" in refs and refs["online"].train_size < n_m:
        warnings.append(
            f"The online reference models were trained on {refs['online'].train_size:,} records each (half of the "
            f"candidates and all of the pool), fewer than the target's {n_m:,}; a larger population table fixes it."
        )
    dup = case.duplicated
    n_dup = int(dup[:n_m].sum())
    if n_dup and dup[n_m:].any():
        warnings.append(
            f"{n_dup:,} member record(s) also appear, identical, in the population table (or in the members twice); a "
            "record in both is counted as a member and as a non-member, which blurs every attack."
        )
    return warnings


def _records(case: _Case, split: _Split, p_target: np.ndarray, scores: dict[str, np.ndarray],
             checks: dict[str, AttackCheck]) -> tuple[pd.DataFrame, pd.DataFrame]:  # fmt: skip
    """The per-candidate table (best attack first) and the most exposed members with their values."""
    member, y_cand = split.member, np.r_[case.y_m, case.y_p[split.cand_p]]
    records = pd.DataFrame({
        "table": np.where(member, "train", "population"),
        "row": np.r_[np.arange(split.n_m), split.cand_p],
        "is_member": member,
        "label": [case.classes[i] for i in y_cand],
        "p_target": p_target,
    })  # fmt: skip
    for name, s in scores.items():
        records[f"{name}_score"] = s
        records[f"{name}_fpr"] = _share_at_least(s, s[~member])
    best = max(checks.values(), key=lambda a: (a.tpr_at_fpr["0.01"].ci_low, a.auc)).name
    records = records.iloc[np.argsort(-scores[best], kind="mergesort")].reset_index(drop=True)
    top = records[records["is_member"]].head(_EXPOSED_ROWS)
    exposed = pd.concat([top[["row", f"{best}_score", f"{best}_fpr", "label"]].reset_index(drop=True),
                         case.values(top["row"].to_numpy())], axis=1)  # fmt: skip
    return records, exposed


def _target_fidelity(case: _Case, split: _Split) -> dict[str, float]:
    y_c = case.y_p[split.cand_p]
    prob_c = case.prob_p[split.cand_p]
    return {
        "train_accuracy": float(np.mean(case.prob_m.argmax(1) == case.y_m)),
        "test_accuracy": float(np.mean(prob_c.argmax(1) == y_c)),
        "train_loss": _mean_log(case.prob_m[np.arange(split.n_m), case.y_m]),
        "test_loss": _mean_log(prob_c[np.arange(y_c.size), y_c]),
    }


def _audit_case(case: _Case, *, attacks: tuple[str, ...], n_reference: int, variance: str, seed: int, delta: float,
                settings: dict[str, Any], progress: ProgressFn | None) -> ModelAudit:  # fmt: skip
    n_m = case.y_m.size
    split = _split(n_m, case.y_p.size, seed)
    y_c = case.y_p[split.cand_p]
    p_target = np.clip(np.r_[case.prob_m[np.arange(n_m), case.y_m], case.prob_p[split.cand_p, y_c]], PROB_FLOOR, 1.0)
    references = _train_references(case, split, attacks, n_reference=n_reference, variance=variance, seed=seed,
                                   progress=progress)  # fmt: skip
    refs = references.refs
    z_index = np.arange(n_m, n_m + split.cand_p.size)
    scores, extra = _scores(attacks, case, split, p_target, refs, z_index, variance=variance, n_reference=n_reference,
                            seed=seed)  # fmt: skip
    checks = {n: _check(s, split.member, name=n, fprs=DEFAULT_FPRS, delta=delta, seed=seed) for n, s in scores.items()}
    records, exposed = _records(case, split, p_target, scores, checks)
    recipe = family_recipe(references.family, case.recipe) if references.family in FAMILIES else None
    return ModelAudit(
        attacks=checks,
        fidelity=_fidelity(_target_fidelity(case, split), refs, ~split.member),
        records=records,
        exposed=exposed,
        model=case.model | ({"recipe": case.recipe.to_json()} if case.family in (AUTO, *FAMILIES) else {}),
        reference={"family": references.family, "models": n_reference,
                   "train_size": (refs.get("offline") or refs["online"]).train_size,
                   "pool_size": int(split.pool.size), "target_train_size": n_m, "rmia_a": RMIA_A, "rmia_gamma": 1.0,
                   **({"estimator": recipe.estimator, "params": recipe.params,
                       "params_from": recipe.source if recipe.source != "none" else "the family's defaults"}
                      if recipe is not None else {}),
                   **({"family_choice": _family_results(references, attacks, p_target, split.member, z_index,
                                                        case.recipe.family)}
                      if references.fits else {}),
                   **extra, **case.reference_extra,
                   "attacks_using_them": [a for a in attacks if a in REFERENCE_ATTACKS]},
        rmia_by_k=_rmia_by_k(p_target, refs, split.member, z_index, n_reference) if "rmia" in attacks else {},
        n_members=n_m,
        n_non_members=int(split.cand_p.size),
        fprs=tuple(DEFAULT_FPRS),
        delta=delta,
        seed=seed,
        settings=settings,
        warnings=tuple(_warnings(case, refs, split)),
    )  # fmt: skip
