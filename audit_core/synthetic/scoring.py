"""The attacks on the distances: KDE membership probabilities, the distance threshold, the density ratio.

From the distances of the attack set and of the auxiliary records to the synthetic table
(computed once by :func:`audit_core.synthetic.audit.audit_synthetic`), docs/methods.md §1:

- the *true-distribution attack*: KDEs fitted on the true labels, cross-fitted over the
  folds so no record scores itself (an upper bound on risk);
- the *realistic attack*: KDEs fitted on the auxiliary records pseudo-labelled by a
  distance quantile (:func:`audit_core.synthetic.attack_set.pseudo_labels`);
- the hard-label baseline "Method 1" (member iff d < tau), with tau the non-members' or the
  auxiliary records' median distance;
- the DOMIAS-style density ratio ``log(d_aux + eps) - log(d + eps)`` (:func:`density_ratio_score`).

:func:`rescore` re-fits only the 1-D densities for a new bandwidth or prior; the distances
are reused, so the dashboard's sliders answer at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from audit_core.common.roc import AttackMetrics, evaluate_attack, hard_label_metrics
from audit_core.synthetic.density import ZERO_TOL, MembershipPosterior, fit_posterior
from audit_core.synthetic.result import DistanceThreshold, SyntheticAudit

__all__ = ["AttackScores", "density_ratio_score", "rescore", "score_attacks"]

_EPS = 1e-6  # added to distances before taking logs in the density-ratio score


@dataclass(frozen=True)
class AttackScores:
    """Everything that depends on the bandwidth and the prior, from fixed distances (:func:`score_attacks`).

    Attributes
    ----------
    p_true, p_real : ndarray of float
        ``P(member | d)`` of each attack record under the true-distribution attack (cross-fitted)
        and the realistic attack.
    supported_true, supported_real : ndarray of bool
        Whether that probability rests on data (:meth:`MembershipPosterior.supported`).
    posterior_true, posterior_real : MembershipPosterior
        The densities of each attack fitted on all its records (for plots).
    attacks : dict of str to AttackMetrics
        ``"true_distribution"`` and ``"realistic"``, scored by ``P(member | d)``.
    distance_threshold, distance_threshold_realistic : DistanceThreshold
        Method 1 with tau the non-members' and the auxiliary records' median distance.
    """

    p_true: np.ndarray
    p_real: np.ndarray
    supported_true: np.ndarray
    supported_real: np.ndarray
    posterior_true: MembershipPosterior
    posterior_real: MembershipPosterior
    attacks: dict[str, AttackMetrics]
    distance_threshold: DistanceThreshold
    distance_threshold_realistic: DistanceThreshold


def _fit(
    d_m: np.ndarray, d_n: np.ndarray, settings: Mapping[str, Any], *, non_member_zero_pseudo_count: float = 1.0
) -> MembershipPosterior:
    return fit_posterior(
        d_m,
        d_n,
        bandwidth=settings["bandwidth"],
        scale=settings["bandwidth_scale"],
        prior=settings["prior"],
        non_member_zero_pseudo_count=non_member_zero_pseudo_count,
    )


def score_attacks(
    distance: np.ndarray,
    is_member: np.ndarray,
    folds: np.ndarray,
    aux_d: np.ndarray,
    pseudo: np.ndarray,
    settings: Mapping[str, Any],
) -> AttackScores:
    """Score the attack records by the true-distribution and realistic attacks and the distance threshold.

    Parameters
    ----------
    distance, is_member, folds : ndarray
        Each attack record's distance to the synthetic table, membership and cross-fitting fold.
    aux_d, pseudo : ndarray
        The auxiliary records' distances and the realistic attacker's pseudo-labels of them.
    settings : mapping
        The audit's recorded settings (:attr:`SyntheticAudit.settings`): ``prior``, ``bandwidth``,
        ``bandwidth_scale`` and ``n_folds`` are read.
    """
    p_true = np.empty(distance.size)
    supported_true = np.zeros(distance.size, dtype=bool)
    for f in range(int(settings["n_folds"])):
        test = folds == f
        if not test.any():
            continue
        fit_on = ~test
        post = _fit(distance[fit_on & is_member], distance[fit_on & ~is_member], settings)
        p_true[test] = post.p_member(distance[test])
        supported_true[test] = post.supported(distance[test])  # fitted without the record itself
    posterior_true = _fit(distance[is_member], distance[~is_member], settings)
    # The pseudo-non-members are by definition the auxiliary records farthest from S: when
    # all of them have d > 0, an exact copy cannot be one of them (structural zero, not
    # an unseen event), so their point mass gets no add-one smoothing. Otherwise the
    # realistic attacker, whose auxiliary data hold no copies, would score copies at the
    # prior, below near-copies (docs/methods.md §1.6: a copy must come out at the top).
    far = aux_d[~pseudo]
    posterior_real = _fit(aux_d[pseudo], far, settings, non_member_zero_pseudo_count=1.0 if np.any(far <= ZERO_TOL) else 0.0)
    p_real = posterior_real.p_member(distance)
    supported_real = posterior_real.supported(distance)

    tau_true = float(np.median(distance[~is_member]))
    tau_real = float(np.median(aux_d))
    return AttackScores(
        p_true=p_true,
        p_real=p_real,
        supported_true=supported_true,
        supported_real=supported_real,
        posterior_true=posterior_true,
        posterior_real=posterior_real,
        attacks={
            "true_distribution": evaluate_attack(p_true, is_member, threshold=0.5),
            "realistic": evaluate_attack(p_real, is_member, threshold=0.5),
        },
        distance_threshold=DistanceThreshold(
            threshold=tau_true,
            rule="median distance of the non-members",
            metrics=hard_label_metrics(distance < tau_true, is_member),
        ),
        distance_threshold_realistic=DistanceThreshold(
            threshold=tau_real,
            rule="median distance of the auxiliary records",
            metrics=hard_label_metrics(distance < tau_real, is_member),
        ),
    )


def density_ratio_score(distance: np.ndarray, to_auxiliary: np.ndarray) -> np.ndarray:
    """The DOMIAS-style score of each attack record (van Breugel et al., 2023): ``log(d_aux + eps) - log(d + eps)``.

    ``d`` is the distance to the nearest synthetic record, ``d_aux`` to the nearest auxiliary
    record; a record much closer to the synthetic table than to the population scores high.
    """
    return np.log(to_auxiliary + _EPS) - np.log(distance + _EPS)


def rescore(
    audit: SyntheticAudit,
    *,
    bandwidth: str | float | None = None,
    prior: float | None = None,
    bandwidth_scale: float | None = None,
) -> SyntheticAudit:
    """Re-fit the densities for a new bandwidth or prior, reusing the distances.

    Costs a few 1-D KDE fits on the stored distances (milliseconds for tens of
    thousands of records); the folds and pseudo-labels stay the same, so only the
    changed setting moves the numbers. The new values are checked by the tabular audit's knobs
    (``TabularSettings``): a value the page and the CLI refuse raises their :class:`InputError`
    sentence, never a clamp.

    Parameters
    ----------
    audit : SyntheticAudit
        A result of :func:`audit_core.synthetic.audit.audit_synthetic`.
    bandwidth, prior, bandwidth_scale : optional
        New values; None keeps the audit's.

    Returns
    -------
    SyntheticAudit

    Raises
    ------
    InputError
        A bandwidth, scale or prior outside its knob (``--bandwidth must be ...``).
    """
    from audit_core.synthetic.spec import TabularSettings

    settings = dict(audit.settings)
    if bandwidth is not None:
        settings["bandwidth"] = bandwidth if isinstance(bandwidth, str) else float(bandwidth)
    if prior is not None:
        settings["prior"] = float(prior)
    if bandwidth_scale is not None:
        settings["bandwidth_scale"] = float(bandwidth_scale)
    TabularSettings.checked(prior=settings["prior"], bandwidth=settings["bandwidth"],
                            bandwidth_scale=settings["bandwidth_scale"])  # fmt: skip
    d = audit.records["distance"].to_numpy(dtype=np.float64)
    is_member = audit.records["is_member"].to_numpy(dtype=bool)
    scored = score_attacks(d, is_member, audit.folds, audit.aux_distances, audit.aux_pseudo_member, settings)
    records = audit.records.copy()
    records["p_member_true"] = scored.p_true
    records["p_member_realistic"] = scored.p_real
    records["p_member_true_supported"] = scored.supported_true
    records["p_member_realistic_supported"] = scored.supported_real
    return replace(
        audit,
        records=records,
        attacks={**audit.attacks, **scored.attacks},
        distance_threshold=scored.distance_threshold,
        distance_threshold_realistic=scored.distance_threshold_realistic,
        posterior_true=scored.posterior_true,
        posterior_realistic=scored.posterior_real,
        settings=settings,
    )
