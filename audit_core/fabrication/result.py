"""The fabrication audit's result (docs/methods.md §3): per-group scores, norms and confidences, the sweeps' points,
re-scoring at another AR-MIA lambda without a model call, and the ``--json`` document."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from audit_core.common.privacy_bound import epsilon_bound_json
from audit_core.common.report import InputSummary
from audit_core.common.roc import AttackMetrics, TprAtFpr
from audit_core.fabrication.metrics import auc, evaluate, tpr_json
from audit_core.fabrication.mia import ar_weight

__all__ = ["AdaptivePoint", "EpsilonPoint", "FabricationResult", "Groups", "LambdaPoint", "MiaSummary"]


@dataclass(frozen=True)
class Groups:
    """One quantity for members, clean non-members and fabricated non-members."""

    members: np.ndarray
    non_members: np.ndarray
    fabricated: np.ndarray

    def medians(self) -> dict[str, float]:
        """Median per group (JSON keys ``members``, ``non_members``, ``fabricated``)."""
        return {k: float(np.median(getattr(self, k))) for k in ("members", "non_members", "fabricated")}


@dataclass(frozen=True)
class MiaSummary:
    """An MIA on members (positives) vs clean and vs fabricated non-members (negatives).

    ``clean`` and ``fabricated`` carry AUC, EER and the TPR at each low FPR with its
    interval (:func:`~audit_core.fabrication.metrics.evaluate`).
    """

    clean: AttackMetrics = field(repr=False)
    fabricated: AttackMetrics = field(repr=False)

    @property
    def auc_clean(self) -> float:
        """AUC, members vs clean non-members."""
        return self.clean.auc

    @property
    def auc_fabricated(self) -> float:
        """AUC, members vs fabricated non-members."""
        return self.fabricated.auc

    @property
    def eer_clean(self) -> float:
        """Equal error rate, members vs clean non-members."""
        return self.clean.eer

    @property
    def eer_fabricated(self) -> float:
        """Equal error rate, members vs fabricated non-members (higher = MIA fooled more)."""
        return self.fabricated.eer

    @property
    def tpr_clean(self) -> dict[str, TprAtFpr]:
        """TPR at each target FPR (keys "0.001", "0.01", "0.1"), members vs clean non-members."""
        return self.clean.tpr_at_fpr

    @property
    def tpr_fabricated(self) -> dict[str, TprAtFpr]:
        """TPR at each target FPR, members vs fabricated non-members (the FPR counts fabricated images)."""
        return self.fabricated.tpr_at_fpr

    @property
    def error_area(self) -> float:
        """1 - AUC on members vs fabricated (higher = MIA fooled more)."""
        return 1.0 - self.auc_fabricated

    def to_json(self) -> dict:
        """AUCs and EERs, and ``tpr_at_fpr_clean`` / ``tpr_at_fpr_fabricated`` with their intervals."""
        return {
            "auc_clean": self.auc_clean, "auc_fabricated": self.auc_fabricated,
            "eer_clean": self.eer_clean, "eer_fabricated": self.eer_fabricated,
            "tpr_at_fpr_clean": tpr_json(self.tpr_clean), "tpr_at_fpr_fabricated": tpr_json(self.tpr_fabricated),
        }


@dataclass(frozen=True)
class LambdaPoint:
    """AR-MIA at one normalised lambda."""

    lam: float
    auc_clean: float
    auc_fabricated: float


@dataclass(frozen=True)
class EpsilonPoint:
    """One column of the regime map (docs/methods.md §3 trial notes)."""

    epsilon: float
    attack: str
    steps: int
    mia_auc_fabricated: float
    mfd_auc: float
    ar_auc_fabricated: float
    ar_auc_clean: float
    median_conf_fabricated: float
    median_norm_fabricated: float
    conf_fabricated: np.ndarray = field(repr=False, compare=False)
    """The fabricated images' true-class confidences (AR-MIA is re-scored on them at another lambda)."""
    norms_fabricated: np.ndarray = field(repr=False, compare=False)
    """The fabricated images' input-gradient norms."""


@dataclass(frozen=True)
class AdaptivePoint:
    """The adaptive attacker at one weight beta of the gradient-norm term."""

    beta: float
    mia_auc_fabricated: float
    mfd_auc: float
    median_norm_fabricated: float


@dataclass(frozen=True)
class FabricationResult:
    """Everything the page, the report and the CLI show (docs/methods.md §3).

    Scores are per MIA (``loss``, and ``lira`` / ``rmia`` with reference models),
    non-negative and oriented higher = member. ``norms`` are input-gradient norms of the
    audited model. Regime map, budget comparison and adaptive points are precomputed;
    changing lambda only re-scores (:func:`ar_mia`).
    """

    dataset: str
    epsilon: float
    steps: int
    attack: str
    lam: float
    seed: int
    g_ref: float
    g_ref_source: str
    scores: dict[str, Groups] = field(repr=False)
    norms: Groups = field(repr=False)
    confidence: Groups = field(repr=False)
    gallery_original: np.ndarray = field(repr=False)
    gallery_fabricated: np.ndarray = field(repr=False)
    gallery_labels: np.ndarray = field(repr=False)
    lambdas: tuple[float, ...]
    regime: tuple[EpsilonPoint, ...]
    budgets: tuple[EpsilonPoint, ...]
    adaptive: tuple[AdaptivePoint, ...]
    model_accuracy: dict[str, float]
    reference_architecture: str | None = None
    budget_rows: np.ndarray | None = field(repr=False, default=None)
    """The non-members the budget comparison ran on (its AR-MIA AUCs are re-scored on them)."""
    inputs: tuple[InputSummary, ...] = field(repr=False, default=())
    """The files the audit read (SHA-256 as given), for the report."""

    @property
    def mias(self) -> tuple[str, ...]:
        """Names of the MIAs scored."""
        return tuple(self.scores)

    def mia(self, name: str = "loss", *, lam: float | None = None) -> MiaSummary:
        """MIA ``name`` on members vs clean and vs fabricated non-members, with TPR intervals.

        ``lam`` None: the vanilla MIA; a number: AR-MIA at that normalised lambda
        (:meth:`ar_scores`; no model call).
        """
        s = self.scores[name] if lam is None else self.ar_scores(lam=lam, mia=name)
        return MiaSummary(clean=evaluate(s.members, s.non_members), fabricated=evaluate(s.members, s.fabricated))

    def mfd(self) -> AttackMetrics:
        """MFD (low gradient norm = fabricated): fabricated images (positives) vs real members (negatives).

        Its TPR at FPR alpha is the share of fabricated images flagged while flagging at
        most alpha of the real members.
        """
        return evaluate(-self.norms.fabricated, -self.norms.members)

    @property
    def mfd_auc(self) -> float:
        """AUC of MFD (low norm = fabricated): fabricated vs real members."""
        return auc(-self.norms.fabricated, -self.norms.members)

    def ar_scores(self, *, lam: float, mia: str = "loss") -> Groups:
        """AR-MIA scores ``score * tanh(lambda * norm / g_ref)`` per group."""
        s, n = self.scores[mia], self.norms
        w = {k: ar_weight(getattr(n, k), lam=lam, g_ref=self.g_ref) for k in ("members", "non_members", "fabricated")}
        return Groups(s.members * w["members"], s.non_members * w["non_members"], s.fabricated * w["fabricated"])

    def ar_mia(self, *, lam: float, mia: str = "loss") -> LambdaPoint:
        """AR-MIA AUCs at one lambda (cheap: no model call)."""
        g = self.ar_scores(lam=lam, mia=mia)
        return LambdaPoint(lam, auc(g.members, g.non_members), auc(g.members, g.fabricated))

    def regime_at(self, *, lam: float) -> list[LambdaPoint]:
        """AR-MIA (LOSS) AUCs at ``lam`` for every epsilon of the regime map (no model call)."""
        w = lambda g: ar_weight(g, lam=lam, g_ref=self.g_ref)  # noqa: E731
        c, n = self.confidence, self.norms
        mem = c.members * w(n.members)
        clean = auc(mem, c.non_members * w(n.non_members))
        return [LambdaPoint(lam, clean, auc(mem, p.conf_fabricated * w(p.norms_fabricated))) for p in self.regime]

    def at_lambda(self, lam: float) -> FabricationResult:
        """The result re-scored at another AR-MIA lambda: every AR-MIA number, those of the regime map and of the
        budget table included, as ``run_fabrication(lam=lam)`` computes them (no model call)."""
        if float(lam) == self.lam:
            return self
        w = lambda g: ar_weight(g, lam=lam, g_ref=self.g_ref)  # noqa: E731
        c, n = self.confidence, self.norms
        mem = c.members * w(n.members)

        def rescored(points: tuple[EpsilonPoint, ...], rows: np.ndarray | slice) -> tuple[EpsilonPoint, ...]:
            clean = auc(mem, c.non_members[rows] * w(n.non_members[rows]))
            return tuple(dataclasses.replace(p, ar_auc_clean=clean, ar_auc_fabricated=auc(
                mem, p.conf_fabricated * w(p.norms_fabricated))) for p in points)  # fmt: skip

        budget_rows = self.budget_rows if self.budget_rows is not None else slice(None)
        return dataclasses.replace(self, lam=float(lam), regime=rescored(self.regime, slice(None)),
                                   budgets=rescored(self.budgets, budget_rows))  # fmt: skip

    def by_lambda(self, mia: str = "loss") -> list[LambdaPoint]:
        """AR-MIA over the lambda grid."""
        return [self.ar_mia(lam=lam, mia=mia) for lam in self.lambdas]

    def to_json(self) -> dict:
        """docs/contract.md's fabrication keys (``mia.*``, ``mfd.*``, ``ar_mia.*``) plus per-MIA detail.

        Added keys: ``mia.tpr_at_fpr_clean`` / ``mia.tpr_at_fpr_fabricated``, the same
        under ``ar_mia`` and in each ``by_attack`` entry, and ``mfd.tpr_at_fpr``: per target
        FPR ("0.001", "0.01", "0.1") ``{tpr, ci_low, ci_high, achieved_fpr, n_neg, supported,
        threshold, n_pos, target_fpr}``; ``reference_architecture``.
        """
        vanilla = {m: self.mia(m).to_json() for m in self.mias}
        for m in self.mias:  # empirical epsilon lower bound of each MIA: real members vs clean non-members
            g = self.scores[m]
            member = np.r_[np.ones(g.members.size, dtype=bool), np.zeros(g.non_members.size, dtype=bool)]
            vanilla[m]["epsilon_lower_bound"] = epsilon_bound_json(np.r_[g.members, g.non_members], member, seed=self.seed)
        robust = {m: self.mia(m, lam=self.lam).to_json() for m in self.mias}
        loss, ar = vanilla["loss"], robust["loss"]
        mfd = self.mfd()
        return {
            "dataset": self.dataset,
            "epsilon": self.epsilon,
            "steps": self.steps,
            "attack": self.attack,
            "lambda": self.lam,
            "seed": self.seed,
            "g_ref": self.g_ref,
            "g_ref_source": self.g_ref_source,
            "reference_architecture": self.reference_architecture,
            "n_members": int(self.norms.members.size),
            "n_non_members": int(self.norms.non_members.size),
            "model_accuracy": self.model_accuracy,
            "mia": {
                **loss,
                "error_area_fabricated": 1.0 - loss["auc_fabricated"],
                "by_attack": vanilla,
            },
            "mfd": {"auc": mfd.auc, "median_grad_norm": self.norms.medians(), "eer": mfd.eer,
                    "tpr_at_fpr": tpr_json(mfd.tpr_at_fpr)},
            "median_confidence": self.confidence.medians(),
            "ar_mia": {
                "auc_clean": ar["auc_clean"],
                "auc_fabricated": ar["auc_fabricated"],
                "tpr_at_fpr_clean": ar["tpr_at_fpr_clean"],
                "tpr_at_fpr_fabricated": ar["tpr_at_fpr_fabricated"],
                "by_lambda": [
                    {"lambda": p.lam, "auc_clean": p.auc_clean, "auc_fabricated": p.auc_fabricated}
                    for p in self.by_lambda()
                ],
                "by_attack": robust,
            },
            "regime": [
                _point_json(p) | {"ar_mia_auc_clean": a.auc_clean, "ar_mia_auc_fabricated": a.auc_fabricated}
                for p, a in zip(self.regime, self.regime_at(lam=self.lam), strict=True)
            ],
            "budgets": [_point_json(p) for p in self.budgets],
            "adaptive": [
                {"beta": p.beta, "mia_auc_fabricated": p.mia_auc_fabricated, "mfd_auc": p.mfd_auc,
                 "median_grad_norm_fabricated": p.median_norm_fabricated}
                for p in self.adaptive
            ],
        }


def _point_json(p: EpsilonPoint) -> dict:
    return {
        "epsilon": p.epsilon, "attack": p.attack, "steps": p.steps,
        "mia_auc_fabricated": p.mia_auc_fabricated, "mfd_auc": p.mfd_auc,
        "ar_mia_auc_clean": p.ar_auc_clean, "ar_mia_auc_fabricated": p.ar_auc_fabricated,
        "median_confidence_fabricated": p.median_conf_fabricated,
        "median_grad_norm_fabricated": p.median_norm_fabricated,
    }
