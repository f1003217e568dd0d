"""Fabricated members, the run (docs/methods.md §3): the headline attack on every non-member, the MIAs, MFD and
AR-MIA on members, non-members and fabricated points, and the sweeps (:func:`run_fabrication`).

Trial notes (docs/methods.md §3) explain the regimes: since ``grad CE = (1 - p_y) * ...``
the gradient-norm collapse appears only where fabricated points are pushed *past* the
members' confidence. :func:`run_fabrication` therefore reports the median confidence of
members and fabricated points next to every AUC.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from torch import nn

from audit_core.common.runtime import ProgressFn, as_progress, null_progress, sub_progress
from audit_core.fabrication.attacks import ATTACK_COST, ATTACK_LABELS, eps255, fabricate_grid, radii_text
from audit_core.fabrication.choices import DEFAULT_EPSILON, LAMBDAS, SETUP_SHARE
from audit_core.fabrication.gradients import input_gradient_norms
from audit_core.fabrication.images import LabelledImages
from audit_core.fabrication.inference import model_device, predict_logits
from audit_core.fabrication.mia import mia_scores, model_view
from audit_core.fabrication.progress import check_cpu_time, plan
from audit_core.fabrication.result import FabricationResult, Groups
from audit_core.fabrication.setup import FabricationSetup, setup_fabrication
from audit_core.fabrication.sweeps import (
    DEFAULT_BETAS,
    DEFAULT_BUDGETS,
    DEFAULT_COMPARED,
    DEFAULT_EPSILONS,
    Baseline,
    Headline,
    Sweep,
    adaptive_points,
    budget_points,
    regime_points,
)
from audit_core.fabrication.threads import cpu_threads

__all__ = ["fabrication_audit", "run_fabrication"]

_FORWARD_COST = 1 / 3
"""Time of scoring one image with one model, relative to one attack step (a forward pass, no backward); for progress."""
_GALLERY = 8
"""Non-members the result keeps with their fabricated images, for the gallery."""


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
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    compare_attacks: Sequence[str] = DEFAULT_COMPARED,
    adaptive_betas: Sequence[float] = DEFAULT_BETAS,
    n_compare: int = 100,
    seed: int,
    progress: ProgressFn | None = None,
) -> FabricationResult:
    """Fabricate members from the non-members and measure MIA, MFD and AR-MIA (docs/methods.md §3).

    Parameters
    ----------
    setup : FabricationSetup
        From :func:`~audit_core.fabrication.setup.prepare_audit`.
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
    headline = Headline(attack, float(epsilon), int(steps))
    sweep = Sweep(tuple(float(e) for e in epsilons), tuple(budgets), tuple(compare_attacks), tuple(adaptive_betas))
    data, model = setup.data, setup.model
    members, non_members = data.group(data.members), data.group(data.non_members)
    rows = _comparison_rows(len(non_members.labels), n_compare, seed)
    step = _plan(progress, setup, headline, sweep, n_compare=rows.size)
    x_fab, regime_x = _fabricate(model, non_members, headline, sweep, progress=step("fabricate"))
    step("scores")(0.0, "")
    scores, norms, conf = _score_groups(setup, members, non_members, x_fab)
    baseline = Baseline(float(lam), setup.g_ref, conf.members, norms.members, conf.non_members, norms.non_members)
    regime = regime_points(model, regime_x, non_members.labels, headline=headline, sweep=sweep, baseline=baseline)
    compared, at_rows = non_members.take(rows), baseline.rows(rows)
    budget = budget_points(model, compared, [x[rows] for x in regime_x], headline=headline, sweep=sweep,
                           baseline=at_rows, progress=step("budgets"))  # fmt: skip
    adaptive = adaptive_points(model, compared, x_fab[rows], headline=headline, sweep=sweep, baseline=at_rows,
                               progress=step("adaptive"))  # fmt: skip
    progress(1.0, "done")
    g = min(_GALLERY, len(non_members.labels))
    return FabricationResult(
        dataset=data.name, epsilon=headline.epsilon, steps=headline.steps, attack=attack, lam=float(lam), seed=seed,
        g_ref=setup.g_ref, g_ref_source=setup.g_ref_source, scores=scores, norms=norms, confidence=conf,
        gallery_original=non_members.images[:g], gallery_fabricated=x_fab[:g], gallery_labels=non_members.labels[:g],
        lambdas=tuple(float(v) for v in lambdas), regime=tuple(regime), budgets=tuple(budget), adaptive=tuple(adaptive),
        model_accuracy=_accuracy(model, members=members, non_members=non_members),
        reference_architecture=setup.reference_architecture, budget_rows=rows, inputs=setup.inputs,
    )  # fmt: skip


def _comparison_rows(n_non_members: int, n_compare: int, seed: int) -> np.ndarray:
    """The non-members (positions, sorted) the attack comparison and the adaptive attacker run on: a random subset."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_non_members, size=min(n_compare, n_non_members), replace=False))


def _plan(
    progress: ProgressFn, setup: FabricationSetup, headline: Headline, sweep: Sweep, *, n_compare: int
) -> Callable[[str], ProgressFn]:
    """The run's numbered steps (fabricate, scores, budgets, adaptive), each weighted by its expected work in
    image-steps; a step with no work is left out (its callback does nothing)."""
    n_mem, n_non = setup.data.members.size, setup.data.non_members.size
    refs, radii = setup.refs, sweep.radii(headline)
    n_scored = n_mem + 2 * n_non + (refs.population.size if refs is not None else 0)
    n_models = 1 + (len(refs.models) if refs is not None else 0)
    label, steps = ATTACK_LABELS[headline.attack], headline.steps
    planned = {
        "fabricate": (f"fabricating members ({label}, T = {steps}, on {n_non} non-members) at {eps255(headline.epsilon)}"
                      + (f" and the regime map's {radii_text(radii[1:])}, as one batch" if radii[1:] else ""),
                      n_non * steps * len(radii)),
        "scores": ("scoring the MIAs and gradient norms", _FORWARD_COST * n_scored * n_models + n_non * len(radii)),
        "budgets": (f"attack comparison ({', '.join(ATTACK_LABELS[a] for a in sweep.compare_attacks)}, "
                    f"T = {', '.join(map(str, sweep.budgets))}, on {n_compare} non-members)",
                    n_compare * len(sweep.epsilons) * sum(t * ATTACK_COST[a] for a, t in sweep.budget_runs(headline))),
        "adaptive": (f"adaptive attacker (beta {', '.join(f'{b:g}' for b in sweep.betas)}, on {n_compare} non-members)",
                     n_compare * steps * ATTACK_COST["adaptive"] * len(sweep.adaptive_runs(headline))),
    }  # fmt: skip
    run = {k: v for k, v in planned.items() if v[1] > 0}
    device_type = model_device(setup.model).type
    check_cpu_time(sum(w for _, w in run.values()), pixels=math.prod(setup.data.shape),
                   arch=setup.reference_architecture or "small_cnn", device_type=device_type,
                   what=f"The attacks on {n_non:,} non-members (T = {steps}, {len(radii)} radii)",
                   fix="use fewer images, fewer attack steps, or a machine with a GPU")  # fmt: skip
    part = dict(zip(run, plan(progress, list(run.values()), what="the attacks"), strict=True))
    return lambda key: part.get(key, null_progress)


def _fabricate(
    model: nn.Module, non_members: LabelledImages, headline: Headline, sweep: Sweep, *, progress: ProgressFn
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The headline attack on every non-member at its radius and at each of the regime map's, as one batch:
    ``(fabricated at the headline radius, [fabricated at each regime radius])``."""
    radii = sweep.radii(headline)
    fabricated = fabricate_grid(model, non_members.images, non_members.labels, epsilons=radii, steps=headline.steps,
                                attack=headline.attack, progress=progress)  # fmt: skip
    return fabricated[0], [fabricated[radii.index(e)] for e in sweep.epsilons]


def _score_groups(
    setup: FabricationSetup, members: LabelledImages, non_members: LabelledImages, x_fab: np.ndarray
) -> tuple[dict[str, Groups], Groups, Groups]:
    """Each MIA's scores, the input-gradient norms and the confidences of members, non-members and fabricated points.

    The fabricated points carry the non-members' labels. LiRA and RMIA are scored only when
    the setup has reference models.
    """
    data, model = setup.data, setup.model
    fabricated = LabelledImages(x_fab, non_members.labels)
    groups = {"members": members, "non_members": non_members, "fabricated": fabricated}
    views = {k: model_view(model, setup.refs, g.images, g.labels) for k, g in groups.items()}
    pop_view = None
    mias = ["loss"]
    if setup.refs is not None:
        mias += ["lira", "rmia"]
        pop = setup.refs.population
        pop_view = model_view(model, setup.refs, data.images[pop], data.labels[pop])
    scores = {m: Groups(*(mia_scores(views[g], mia=m, population=pop_view) for g in groups)) for m in mias}
    norms = Groups(*(input_gradient_norms(model, g.images, g.labels) for g in groups.values()))
    conf = Groups(views["members"].conf, views["non_members"].conf, views["fabricated"].conf)
    return scores, norms, conf


def _accuracy(model: nn.Module, **groups: LabelledImages) -> dict[str, float]:
    """The model's accuracy on each group, by name."""
    return {k: float((predict_logits(model, g.images).argmax(1).cpu().numpy() == g.labels).mean())
            for k, g in groups.items()}  # fmt: skip


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
    **run_kwargs: Any,
) -> FabricationResult:
    """The default audit on a bundled data set: load, train, attack, measure.

    ``epsilon`` None takes the default, :data:`audit_core.fabrication.choices.DEFAULT_EPSILON`.
    """
    setup = setup_fabrication(dataset=dataset, n_reference_models=n_reference_models, seed=seed,
                              progress=sub_progress(progress, 0.0, SETUP_SHARE))
    return run_fabrication(setup, epsilon=DEFAULT_EPSILON if epsilon is None else epsilon, steps=steps, attack=attack, lam=lam,
                           seed=seed, progress=sub_progress(progress, SETUP_SHARE, 1.0), **run_kwargs)
