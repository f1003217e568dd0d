"""The no-signal check: does each rule hold alpha at this M? (docs/methods.md §2, ``holds_alpha``).

Every rule is re-run on simulated scores without any membership signal at the audit's M
(:func:`no_signal_readings`); a rule whose TPR there sits clearly above alpha
(:func:`alpha_tolerance`) overstates the exposure at this M, and :func:`holds_alpha` says so.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from audit_core.common.limits import MIN_MODELS
from audit_core.lira.keep_matrix import balanced_keep_matrix
from audit_core.lira.rules import read_rules

__all__ = ["alpha_tolerance", "holds_alpha", "no_signal_readings"]

#: Rules whose FPR is alpha by construction for Gaussian out-scores at every M (the split test).
_EXACT_RULES = ("per_sample_mean", "per_sample_mean_uncorrected")


def _null_records(n_models: int) -> int:
    """Records of the no-signal pool: about 600,000 scores, 2,000 to 20,000 records."""
    return min(20_000, max(2_000, 600_000 // n_models))


def alpha_tolerance(n_models: int, fpr: float) -> float:
    """How far above alpha a rule's no-signal reading may sit and still count as holding alpha.

    10 % of alpha plus two standard errors of the simulation itself (a count over the
    no-signal pool's in-scores, with a design effect of 2 for the records' shared
    parameters). At alpha = 0.05: 0.057 at M = 16 (the post-processed Student-t rule reads
    0.067 there, fails) and 0.057 at M = 64 (0.059, fails), 0.057 at M = 256 (0.055, holds).
    """
    m = max(n_models - n_models % 2, MIN_MODELS)
    entries = _null_records(m) * m / 2
    return 0.1 * fpr + 2 * 2 * math.sqrt(fpr * (1 - fpr) / entries)


def no_signal_readings(n_models: int, fpr: float, *, seed: int = 0) -> dict[str, float]:
    """:func:`_no_signal_readings`, remembered per ``(n_models, fpr, seed)`` (a fresh dict each call)."""
    return dict(_no_signal_readings(n_models, fpr, seed))


@functools.lru_cache(maxsize=64)
def _no_signal_readings(n_models: int, fpr: float, seed: int) -> tuple[tuple[str, float], ...]:
    """Every rule's TPR at alpha on simulated scores with no membership signal, at this M.

    Gaussian scores whose in- and out-scores share one distribution per record
    (heterogeneous records: means N(0, 2^2), sds U(0.3, 2)), on a balanced keep-matrix of
    ``n_models`` models and 2,000-20,000 records (about 600,000 scores). A rule that holds
    alpha reads alpha here (the per-sample average exactly, in expectation); one that
    reads clearly more (:func:`alpha_tolerance`) overstates the exposure at this M.
    Seeded: the same M, alpha and seed give the same readings.
    """
    m = max(n_models - n_models % 2, MIN_MODELS)
    n = _null_records(m)
    keep = balanced_keep_matrix(n, n_models=m, seed=seed)
    rng = np.random.default_rng(seed)
    scores = rng.normal(rng.normal(0.0, 2.0, n), rng.uniform(0.3, 2.0, n), size=(m, n))
    return tuple(read_rules(scores, keep, fpr, population=None, seed=seed).tpr.items())


def holds_alpha(readings: dict[str, float], n_models: int, fpr: float) -> dict[str, bool]:
    """Per rule: whether its no-signal reading (:func:`no_signal_readings`) stays within alpha's tolerance.

    The split-test rules (``_EXACT_RULES``) hold alpha by construction.
    """
    return {k: k in _EXACT_RULES or bool(v <= fpr + alpha_tolerance(n_models, fpr)) for k, v in readings.items()}
