"""Fabricated members, the run (docs/methods.md §3): the headline attack on every non-member, the MIAs, MFD and
AR-MIA on members, non-members and fabricated points, and the sweeps (:func:`run_fabrication`).

Trial notes (docs/methods.md §3) explain the regimes: since ``grad CE = (1 - p_y) * ...``
the gradient-norm collapse appears only where fabricated points are pushed *past* the
members' confidence. :func:`run_fabrication` therefore reports the median confidence of
members and fabricated points next to every AUC.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from audit_core.common.runtime import ProgressFn, as_progress, null_progress, sub_progress
from audit_core.fabrication.attacks import ATTACK_COST, ATTACK_LABELS, eps255, fabricate_grid, radii_text
from audit_core.fabrication.choices import DEFAULT_EPSILON, LAMBDAS, SETUP_SHARE
from audit_core.fabrication.gradients import input_gradient_norms
from audit_core.fabrication.inference import predict_logits
from audit_core.fabrication.mia import mia_scores, model_view
from audit_core.fabrication.progress import plan
from audit_core.fabrication.result import FabricationResult, Groups
from audit_core.fabrication.setup import FabricationSetup, setup_fabrication
from audit_core.fabrication.sweeps import DEFAULT_EPSILONS, adaptive_points, budget_points, budget_runs, measure_point
from audit_core.fabrication.threads import cpu_threads

__all__ = ["fabrication_audit", "run_fabrication"]

FORWARD_COST = 1 / 3
"""Time of scoring one image with one model, relative to one attack step (a forward pass, no backward); for progress."""


@cpu_threads()
def run_fabrication(
    setup: FabricationSetup,
    *,
    epsilon: float,
    steps: int = 40,
    attack: str = "mfa",
    lam: float = 1.0,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    lambdas: Sequence[float] = LAMBDAS,
    budgets: Sequence[int] = (5, 40),
    compare_attacks: Sequence[str] = ("mfa", "ipgd", "icw"),
    adaptive_betas: Sequence[float] = (0.0, 0.01, 0.03, 0.1),
    n_compare: int = 100,
    seed: int,
    progress: ProgressFn | None = None,
) -> FabricationResult:
    """Fabricate members from the non-members and measure MIA, MFD and AR-MIA (docs/methods.md §3).

    Parameters
    ----------
    setup : FabricationSetup
        From :func:`prepare_audit`.
    epsilon, steps, attack : float, int, str
        The headline attack, run on every evaluation non-member.
    lam : float
        Normalised AR-MIA lambda for the headline numbers (the grid ``lambdas`` is
        reported too).
    epsilons : sequence of float
        The regime map: the headline attack over these radii (all non-members),
        plus the budget comparison (``compare_attacks`` x ``budgets`` x ``epsilons``) and
        the adaptive attacker (``adaptive_betas`` at ``epsilon``) on a random subset of
        ``n_compare`` non-members. Empty sequences skip a part.
    seed : int
        Seed of the subset choice (attacks are deterministic).
    """
    progress = as_progress(progress)
    data, model = setup.data, setup.model
    mem, non = data.members, data.non_members
    x_mem, y_mem = data.images[mem], data.labels[mem]
    x_non, y_non = data.images[non], data.labels[non]
    n_cmp = min(n_compare, non.size)
    epsilons = [float(e) for e in epsilons]
    label = ATTACK_LABELS[attack]
    radii = list(dict.fromkeys([float(epsilon), *epsilons]))  # the headline radius first, then the regime map's
    runs_compared = budget_runs(budgets, compare_attacks, attack=attack, steps=steps)
    adaptive_runs = [b for b in adaptive_betas if not (b == 0 and attack == "mfa")]  # beta 0 is the headline MFA
    n_scored = mem.size + 2 * non.size + (setup.refs.population.size if setup.refs is not None else 0)
    n_models = 1 + (len(setup.refs.models) if setup.refs is not None else 0)
    planned = {
        "fabricate": (f"fabricating members ({label}, T = {steps}, on {non.size} non-members) at {eps255(epsilon)}"
                      + (f" and the regime map's {radii_text(radii[1:])}, as one batch" if radii[1:] else ""),
                      non.size * steps * len(radii)),
        "scores": ("scoring the MIAs and gradient norms", FORWARD_COST * n_scored * n_models
                   + non.size * len(radii)),
        "budgets": (f"attack comparison ({', '.join(ATTACK_LABELS[a] for a in compare_attacks)}, "
                    f"T = {', '.join(map(str, budgets))}, on {n_cmp} non-members)",
                    n_cmp * len(epsilons) * sum(t * ATTACK_COST[a] for a, t in runs_compared)),
        "adaptive": (f"adaptive attacker (beta {', '.join(f'{b:g}' for b in adaptive_betas)}, on {n_cmp} non-members)",
                     n_cmp * steps * ATTACK_COST["adaptive"] * len(adaptive_runs)),
    }  # fmt: skip
    run = {k: v for k, v in planned.items() if v[1] > 0}
    part = dict(zip(run, plan(progress, list(run.values()), what="the attacks"), strict=True))
    part_of = lambda key: part.get(key, null_progress)  # noqa: E731
    fabricated = fabricate_grid(model, x_non, y_non, epsilons=radii, steps=steps, attack=attack,
                                progress=part_of("fabricate"))  # fmt: skip
    x_fab, regime_x = fabricated[0], [fabricated[radii.index(e)] for e in epsilons]
    part_of("scores")(0.0, "")
    scores, norms, conf = _score_groups(setup, (x_mem, y_mem), (x_non, y_non), x_fab)
    common = {"lam": lam, "mem_conf": conf.members, "mem_norm": norms.members}
    regime = [measure_point(setup, xe, y_non, epsilon=e, attack=attack, steps=steps, non_conf=conf.non_members,
                          non_norm=norms.non_members, **common) for e, xe in zip(epsilons, regime_x, strict=True)]
    rng = np.random.default_rng(seed)
    sub = np.sort(rng.choice(non.size, size=n_cmp, replace=False))
    sub_common = {**common, "non_conf": conf.non_members[sub], "non_norm": norms.non_members[sub]}
    cmp_points = budget_points(setup, x_non, y_non, sub, regime_x, epsilons=epsilons, budgets=budgets,
                                compare_attacks=compare_attacks, attack=attack, steps=steps,
                                progress=part_of("budgets"), **sub_common)
    adaptive = adaptive_points(setup, x_non, y_non, sub, x_fab, betas=adaptive_betas, epsilon=epsilon, steps=steps,
                                attack=attack, progress=part_of("adaptive"), **sub_common)
    acc = {k: float((predict_logits(model, x).argmax(1).cpu().numpy() == y).mean())
           for k, (x, y) in {"members": (x_mem, y_mem), "non_members": (x_non, y_non)}.items()}
    g = min(8, non.size)
    progress(1.0, "done")
    return FabricationResult(
        dataset=data.name, epsilon=float(epsilon), steps=int(steps), attack=attack, lam=float(lam), seed=seed,
        g_ref=setup.g_ref, g_ref_source=setup.g_ref_source, scores=scores, norms=norms, confidence=conf,
        gallery_original=x_non[:g], gallery_fabricated=x_fab[:g], gallery_labels=y_non[:g],
        lambdas=tuple(float(v) for v in lambdas), regime=tuple(regime), budgets=tuple(cmp_points),
        adaptive=tuple(adaptive), model_accuracy=acc, reference_architecture=setup.reference_architecture,
        budget_rows=sub, inputs=setup.inputs,
    )


def _score_groups(setup: FabricationSetup, members, non_members, x_fab) -> tuple[dict[str, Groups], Groups, Groups]:
    """Each MIA's scores, the input-gradient norms and the confidences of members, non-members and fabricated points.

    ``members`` and ``non_members`` are ``(images, labels)``; the fabricated points carry the
    non-members' labels. LiRA and RMIA are scored only when the setup has reference models.
    """
    data, model = setup.data, setup.model
    (x_mem, y_mem), (x_non, y_non) = members, non_members
    views = {k: model_view(model, setup.refs, x, y) for k, (x, y) in
             {"members": (x_mem, y_mem), "non_members": (x_non, y_non), "fabricated": (x_fab, y_non)}.items()}
    pop_view = None
    mias = ["loss"]
    if setup.refs is not None:
        mias += ["lira", "rmia"]
        pop = setup.refs.population
        pop_view = model_view(model, setup.refs, data.images[pop], data.labels[pop])
    scores = {m: Groups(*(mia_scores(views[g], mia=m, population=pop_view)
                          for g in ("members", "non_members", "fabricated"))) for m in mias}
    norms = Groups(input_gradient_norms(model, x_mem, y_mem), input_gradient_norms(model, x_non, y_non),
                   input_gradient_norms(model, x_fab, y_non))
    conf = Groups(views["members"].conf, views["non_members"].conf, views["fabricated"].conf)
    return scores, norms, conf


def fabrication_audit(
    *,
    dataset: str = "digits",
    epsilon: float | None = None,
    steps: int = 40,
    attack: str = "mfa",
    lam: float = 1.0,
    n_reference_models: int = 4,
    seed: int = 0,
    progress: ProgressFn | None = None,
    **run_kwargs,
) -> FabricationResult:
    """The default audit on a bundled data set: load, train, attack, measure.

    ``epsilon`` None takes the default, :data:`audit_core.fabrication.choices.DEFAULT_EPSILON`.
    """
    setup = setup_fabrication(dataset=dataset, n_reference_models=n_reference_models, seed=seed,
                              progress=sub_progress(progress, 0.0, SETUP_SHARE))
    return run_fabrication(setup, epsilon=DEFAULT_EPSILON if epsilon is None else epsilon, steps=steps, attack=attack, lam=lam,
                           seed=seed, progress=sub_progress(progress, SETUP_SHARE, 1.0), **run_kwargs)
