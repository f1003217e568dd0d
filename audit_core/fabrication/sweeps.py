"""The sweeps around the headline attack (docs/methods.md §3): the regime map (epsilon), the attack comparison
(attacks x step budgets x radii) and the adaptive attacker (its weight beta), each point measured on the audited model."""

from __future__ import annotations

import numpy as np
import torch

from audit_core.fabrication.attacks import ATTACK_COST, ATTACK_LABELS, eps255, fabricate_grid, radii_text
from audit_core.fabrication.gradients import input_gradient_norms, true_class_stats
from audit_core.fabrication.inference import predict_logits
from audit_core.fabrication.metrics import auc
from audit_core.fabrication.mia import ar_weight
from audit_core.fabrication.progress import split
from audit_core.fabrication.result import AdaptivePoint, EpsilonPoint

__all__ = ["DEFAULT_EPSILONS", "adaptive_points", "budget_points", "budget_runs", "measure_point"]

DEFAULT_EPSILONS = (4 / 255, 8 / 255, 16 / 255, 32 / 255, 64 / 255)


def measure_point(setup, x_fab, y, *, epsilon, attack, steps, lam, mem_conf, mem_norm, non_conf, non_norm) -> EpsilonPoint:
    conf, _ = true_class_stats(predict_logits(setup.model, x_fab).cpu(), torch.as_tensor(y))
    norm = input_gradient_norms(setup.model, x_fab, y)
    w = lambda g: ar_weight(g, lam=lam, g_ref=setup.g_ref)  # noqa: E731
    return EpsilonPoint(
        epsilon=float(epsilon), attack=attack, steps=int(steps),
        mia_auc_fabricated=auc(mem_conf, conf), mfd_auc=auc(-norm, -mem_norm),
        ar_auc_fabricated=auc(mem_conf * w(mem_norm), conf * w(norm)),
        ar_auc_clean=auc(mem_conf * w(mem_norm), non_conf * w(non_norm)),
        median_conf_fabricated=float(np.median(conf)), median_norm_fabricated=float(np.median(norm)),
        conf_fabricated=conf, norms_fabricated=norm,
    )


def budget_runs(budgets, compare_attacks, *, attack, steps) -> list[tuple[str, int]]:
    """The (attack, T) pairs the comparison runs: the headline attack at its own T is the headline run."""
    return [(a, t) for t in budgets for a in compare_attacks if (a, t) != (attack, steps)]


def budget_points(setup, x_non, y_non, sub, regime_x, *, epsilons, budgets, compare_attacks, attack, steps, progress,
                   **point) -> list[EpsilonPoint]:
    """Every attack of ``compare_attacks`` at every step budget and radius, on the non-members ``sub``.

    The headline attack at its own budget reuses the regime map's images ``regime_x`` (one
    array per radius of ``epsilons``, over all non-members).
    """
    runs = budget_runs(budgets, compare_attacks, attack=attack, steps=steps)
    items = split(progress, [(f"{ATTACK_LABELS[a]}, T = {t}, at {radii_text(epsilons)} ({k + 1} of {len(runs)})",
                              t * ATTACK_COST[a]) for k, (a, t) in enumerate(runs)])  # fmt: skip
    by_run = {run: fabricate_grid(setup.model, x_non[sub], y_non[sub], epsilons=epsilons, steps=run[1], attack=run[0],
                                  progress=cb) for run, cb in zip(runs, items, strict=True)}  # fmt: skip
    points = []
    for e_index, e in enumerate(epsilons):
        for t in budgets:
            for a in compare_attacks:
                # the headline attack at its own T ran on every non-member: reuse the subset
                xe = regime_x[e_index][sub] if (a, t) == (attack, steps) else by_run[(a, t)][e_index]
                points.append(measure_point(setup, xe, y_non[sub], epsilon=e, attack=a, steps=t, **point))
    return points


def adaptive_points(setup, x_non, y_non, sub, x_fab, *, betas, epsilon, steps, attack, progress,
                     **point) -> list[AdaptivePoint]:
    """The adaptive attacker (MFA that also keeps the gradient norm up) at each of ``betas``, on the non-members ``sub``."""
    runs = [b for b in betas if not (b == 0 and attack == "mfa")]  # beta = 0 is plain MFA: the headline run
    (item,) = split(progress, [(f"adaptive MFA at {eps255(epsilon)}, beta {', '.join(f'{b:g}' for b in runs)}, "
                                "as one batch", 1.0)])  # fmt: skip
    xs = fabricate_grid(setup.model, x_non[sub], y_non[sub], epsilons=[epsilon], betas=runs, steps=steps,
                        attack="adaptive", progress=item)  # fmt: skip
    xs = dict(zip(runs, xs, strict=True))
    adaptive = []
    for beta in betas:
        xe = x_fab[sub] if beta not in xs else xs[beta]
        pt = measure_point(setup, xe, y_non[sub], epsilon=epsilon, attack="adaptive", steps=steps, **point)
        adaptive.append(AdaptivePoint(float(beta), pt.mia_auc_fabricated, pt.mfd_auc, pt.median_norm_fabricated))
    return adaptive
