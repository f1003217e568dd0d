"""``--reference-family auto``: the reference family whose models behave most like the target, by fidelity alone.

RMIA and LiRA are as strong as their reference models are close to the target, and the family
moves the result a lot (issue 29: TPR at 1 % FPR 0.49 with logistic references, 0.20 with gbdt,
on the same overfit forest). ``auto`` trains the first offline reference model of every family
(:data:`audit_core.model.reference.FAMILIES`, on the same rows and seed), keeps the family with
the smallest **fidelity distance** to the target and trains its other K - 1 models (so ``auto``
costs K + 4 models, not 5 K, and its result equals naming the chosen family). The distance is the
sum of

- the gap in train accuracy (the target on its members; each reference model on its own rows),
- the gap in test accuracy (the target, and each reference model, on pool records it never saw),
- the Kolmogorov-Smirnov distance between the training-loss distributions (the target's
  per-member losses; the reference models' losses on their own training records), which tells
  a model that memorises (losses near 0) from one that generalises,
- the Kolmogorov-Smirnov distance between the loss distributions on unseen population records
  (the target on the pool; each reference model on the pool records it did not train on).

With one reference model a family the distances carry noise (a KS statistic between two samples of
200 losses varies by about 0.1 when nothing differs), so families within :func:`tolerance` of the
smallest distance (the KS test's 5 % critical value for the two training-loss samples,
``1.36 sqrt((n + m) / (n m))``) are taken as equally close, and among them the family of the
target's own kind, when its file says what it is (:mod:`audit_core.model.recipe`), is kept; else
the closest.

The choice reads no candidate (the records the attacks score) and no attack's result, so it cannot
pick the family that attacks best on the records it is judged on (which would inflate the TPR:
the maximum of several noisy TPRs). Every family's distance and what its one reference model's
offline attacks find are reported beside the choice, so a reader sees what the others would have
said.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from audit_core.model.reference import PROB_FLOOR, ReferenceModels

__all__ = ["RULE", "FamilyFidelity", "TargetSide", "choose", "family_fidelity", "target_side", "tolerance"]

RULE = ("auto: the family whose reference models behave most like the target (the smallest sum of the train and test "
        "accuracy gaps and the KS distances between the train and population loss distributions, on records no attack "
        "scores; within the tolerance of the smallest, the family of the target's own kind); never the family that "
        "attacks best")  # fmt: skip


def _losses(p_true: np.ndarray) -> np.ndarray:
    return -np.log(np.clip(p_true, PROB_FLOOR, 1.0))


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    a, b = np.sort(np.ravel(a)), np.sort(np.ravel(b))
    if not a.size or not b.size:
        return 1.0
    grid = np.concatenate([a, b])
    gap = np.searchsorted(a, grid, side="right") / a.size - np.searchsorted(b, grid, side="right") / b.size
    return float(np.abs(gap).max())


@dataclass(frozen=True)
class TargetSide:
    """The target's side of the comparison: on its members (train) and on the pool (test)."""

    train_accuracy: float
    test_accuracy: float
    train_losses: np.ndarray
    test_losses: np.ndarray


def target_side(prob_m: np.ndarray, y_m: np.ndarray, prob_pool: np.ndarray, y_pool: np.ndarray) -> TargetSide:
    """The target's accuracy and per-record losses on its members and on the pool records (``prob``: (n, C))."""
    return TargetSide(
        train_accuracy=float(np.mean(prob_m.argmax(1) == y_m)),
        test_accuracy=float(np.mean(prob_pool.argmax(1) == y_pool)),
        train_losses=_losses(prob_m[np.arange(y_m.size), y_m]),
        test_losses=_losses(prob_pool[np.arange(y_pool.size), y_pool]),
    )


@dataclass(frozen=True)
class FamilyFidelity:
    """One family's reference models against the target (module docstring); smaller ``distance`` = closer."""

    family: str
    train_accuracy: float
    test_accuracy: float
    train_gap: float
    test_gap: float
    ks_train_loss: float
    ks_test_loss: float

    @property
    def distance(self) -> float:
        return self.train_gap + self.test_gap + self.ks_train_loss + self.ks_test_loss

    def to_json(self) -> dict[str, Any]:
        return {"train_accuracy": self.train_accuracy, "test_accuracy": self.test_accuracy, "train_gap": self.train_gap,
                "test_gap": self.test_gap, "ks_train_loss": self.ks_train_loss, "ks_test_loss": self.ks_test_loss,
                "distance": self.distance}  # fmt: skip


def family_fidelity(target: TargetSide, refs: ReferenceModels) -> FamilyFidelity:
    """The fidelity distance of one family's (offline) reference models; pool records each model trained on are left out."""
    unseen = ~refs.pool_seen
    train_acc = float(refs.train_accuracy.mean())
    test_acc = float(refs.pool_correct[unseen].mean()) if unseen.any() else float("nan")
    return FamilyFidelity(
        family=refs.family,
        train_accuracy=train_acc,
        test_accuracy=test_acc,
        train_gap=abs(train_acc - target.train_accuracy),
        test_gap=abs(test_acc - target.test_accuracy) if unseen.any() else 1.0,
        ks_train_loss=_ks(refs.train_losses, target.train_losses),
        ks_test_loss=_ks(_losses(refs.pool_p_true[unseen]), target.test_losses),
    )


def tolerance(n_reference_rows: int, n_members: int) -> float:
    """Distances this close count as equal: the two-sample KS 5 % critical value for the training-loss samples."""
    n, m = max(n_reference_rows, 1), max(n_members, 1)
    return float(1.36 * np.sqrt((n + m) / (n * m)))


def choose(fits: list[FamilyFidelity], *, own_kind: str | None = None, within: float = 0.0) -> FamilyFidelity:
    """The family with the smallest distance, or ``own_kind`` when its distance is within ``within`` of it.

    Ties: the first in the list.
    """
    best = min(fits, key=lambda f: f.distance)
    own = next((f for f in fits if f.family == own_kind), None)
    return own if own is not None and own.distance <= best.distance + within else best
