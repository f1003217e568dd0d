"""The sweeps around the headline attack (docs/methods.md §3): the regime map (the headline attack over radii), the
attack comparison (attacks x step budgets x radii) and the adaptive attacker (its weight beta), each point measured
on the audited model against the same members and clean non-members."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from audit_core.common.runtime import ProgressFn
from audit_core.fabrication.attacks import ATTACK_COST, ATTACK_LABELS, eps255, fabricate_grid, radii_text
from audit_core.fabrication.gradients import input_gradient_norms, true_class_stats
from audit_core.fabrication.images import LabelledImages
from audit_core.fabrication.inference import predict_logits
from audit_core.fabrication.metrics import auc
from audit_core.fabrication.mia import ar_weight
from audit_core.fabrication.progress import split
from audit_core.fabrication.result import AdaptivePoint, EpsilonPoint

__all__ = [
    "DEFAULT_BETAS", "DEFAULT_BUDGETS", "DEFAULT_COMPARED", "DEFAULT_EPSILONS", "Baseline", "Headline", "Sweep",
    "adaptive_points", "budget_points", "regime_points",
]  # fmt: skip

DEFAULT_EPSILONS = (4 / 255, 8 / 255, 16 / 255, 32 / 255, 64 / 255)
"""The regime map's radii (and the attack comparison's)."""
DEFAULT_BUDGETS = (5, 40)
"""The attack comparison's step budgets T."""
DEFAULT_COMPARED = ("mfa", "ipgd", "icw")
"""The attacks the comparison runs."""
DEFAULT_BETAS = (0.0, 0.01, 0.03, 0.1)
"""The adaptive attacker's weights of the gradient-norm term (0: plain MFA)."""


@dataclass(frozen=True)
class Headline:
    """The headline attack, run on every evaluation non-member: the sweeps are measured around it."""

    attack: str
    epsilon: float
    steps: int


@dataclass(frozen=True)
class Sweep:
    """What a run measures around the headline attack; an empty part is skipped.

    ``epsilons``: the regime map (the headline attack at these radii, every non-member) and
    the radii of the attack comparison (``compare_attacks`` x ``budgets``); ``betas``: the
    adaptive attacker at the headline radius. The comparison and the adaptive attacker run
    on a subset of the non-members.
    """

    epsilons: tuple[float, ...] = DEFAULT_EPSILONS
    budgets: tuple[int, ...] = DEFAULT_BUDGETS
    compare_attacks: tuple[str, ...] = DEFAULT_COMPARED
    betas: tuple[float, ...] = DEFAULT_BETAS

    def radii(self, headline: Headline) -> list[float]:
        """The radii the headline attack runs at: its own first, then the regime map's (each once)."""
        return list(dict.fromkeys([headline.epsilon, *self.epsilons]))

    def budget_runs(self, headline: Headline) -> list[tuple[str, int]]:
        """The (attack, T) pairs the comparison runs: the headline attack at its own T is the headline run."""
        return [(a, t) for t in self.budgets for a in self.compare_attacks if (a, t) != (headline.attack, headline.steps)]

    def adaptive_runs(self, headline: Headline) -> list[float]:
        """The weights the adaptive attacker runs at: beta = 0 with MFA is plain MFA, the headline run."""
        return [b for b in self.betas if not (b == 0 and headline.attack == "mfa")]


@dataclass(frozen=True)
class Baseline:
    """What every sweep point is compared with: the members' confidences and input-gradient norms, the clean
    non-members' (on the rows the point covers), and AR-MIA's lambda and scale g_ref."""

    lam: float
    g_ref: float
    mem_conf: np.ndarray
    mem_norm: np.ndarray
    non_conf: np.ndarray
    non_norm: np.ndarray

    def rows(self, rows: np.ndarray) -> Baseline:
        """The baseline of the clean non-members at ``rows`` only (the comparison's subset)."""
        return dataclasses.replace(self, non_conf=self.non_conf[rows], non_norm=self.non_norm[rows])


def _measure_point(
    model: nn.Module, x_fab: np.ndarray, y: np.ndarray, *, epsilon: float, attack: str, steps: int, baseline: Baseline
) -> EpsilonPoint:
    """The vanilla MIA (LOSS), MFD and AR-MIA on fabricated images ``x_fab`` (labels ``y``) against the baseline."""
    conf, _ = true_class_stats(predict_logits(model, x_fab).cpu(), torch.as_tensor(y))
    norm = input_gradient_norms(model, x_fab, y)
    b = baseline
    w = lambda g: ar_weight(g, lam=b.lam, g_ref=b.g_ref)  # noqa: E731
    return EpsilonPoint(
        epsilon=float(epsilon), attack=attack, steps=int(steps),
        mia_auc_fabricated=auc(b.mem_conf, conf), mfd_auc=auc(-norm, -b.mem_norm),
        ar_auc_fabricated=auc(b.mem_conf * w(b.mem_norm), conf * w(norm)),
        ar_auc_clean=auc(b.mem_conf * w(b.mem_norm), b.non_conf * w(b.non_norm)),
        median_conf_fabricated=float(np.median(conf)), median_norm_fabricated=float(np.median(norm)),
        conf_fabricated=conf, norms_fabricated=norm,
    )  # fmt: skip


def regime_points(
    model: nn.Module, regime_x: list[np.ndarray], y: np.ndarray, *, headline: Headline, sweep: Sweep, baseline: Baseline
) -> list[EpsilonPoint]:
    """The regime map: the headline attack's images at each radius of the sweep (``regime_x``, every non-member)."""
    return [_measure_point(model, xe, y, epsilon=e, attack=headline.attack, steps=headline.steps, baseline=baseline)
            for e, xe in zip(sweep.epsilons, regime_x, strict=True)]  # fmt: skip


def budget_points(
    model: nn.Module,
    compared: LabelledImages,
    regime_x: list[np.ndarray],
    *,
    headline: Headline,
    sweep: Sweep,
    baseline: Baseline,
    progress: ProgressFn,
) -> list[EpsilonPoint]:
    """Every attack of the comparison at every step budget and radius, on the non-members ``compared``.

    The headline attack at its own budget reuses the regime map's images ``regime_x`` (one
    array per radius of the sweep, on the same non-members).
    """
    runs = sweep.budget_runs(headline)
    items = split(progress, [(f"{ATTACK_LABELS[a]}, T = {t}, at {radii_text(sweep.epsilons)} ({k + 1} of {len(runs)})",
                              t * ATTACK_COST[a]) for k, (a, t) in enumerate(runs)])  # fmt: skip
    by_run = {run: fabricate_grid(model, compared.images, compared.labels, epsilons=sweep.epsilons, steps=run[1],
                                  attack=run[0], progress=cb) for run, cb in zip(runs, items, strict=True)}  # fmt: skip
    points = []
    for e_index, e in enumerate(sweep.epsilons):
        for t in sweep.budgets:
            for a in sweep.compare_attacks:
                xe = regime_x[e_index] if (a, t) == (headline.attack, headline.steps) else by_run[(a, t)][e_index]
                points.append(_measure_point(model, xe, compared.labels, epsilon=e, attack=a, steps=t, baseline=baseline))
    return points


def adaptive_points(
    model: nn.Module,
    compared: LabelledImages,
    x_fab: np.ndarray,
    *,
    headline: Headline,
    sweep: Sweep,
    baseline: Baseline,
    progress: ProgressFn,
) -> list[AdaptivePoint]:
    """The adaptive attacker (MFA that also keeps the gradient norm up) at each weight of the sweep, on the
    non-members ``compared``; beta = 0 with MFA reuses the headline attack's images ``x_fab``."""
    runs = sweep.adaptive_runs(headline)
    (item,) = split(progress, [(f"adaptive MFA at {eps255(headline.epsilon)}, beta {', '.join(f'{b:g}' for b in runs)}, "
                                "as one batch", 1.0)])  # fmt: skip
    fabricated = fabricate_grid(model, compared.images, compared.labels, epsilons=[headline.epsilon], betas=runs,
                                steps=headline.steps, attack="adaptive", progress=item)  # fmt: skip
    by_beta = dict(zip(runs, fabricated, strict=True))
    points = []
    for beta in sweep.betas:
        pt = _measure_point(model, by_beta.get(beta, x_fab), compared.labels, epsilon=headline.epsilon, attack="adaptive",
                           steps=headline.steps, baseline=baseline)  # fmt: skip
        points.append(AdaptivePoint(float(beta), pt.mia_auc_fabricated, pt.mfd_auc, pt.median_norm_fabricated))
    return points
