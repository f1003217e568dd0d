"""The finite-population correction of efficient LiRA, by simulation (docs/methods.md §2).

Shadow models trained on subsets of size N drawn without replacement from one finite
pool of N_+ records vary less than models trained on independent draws from the
population: ``sigma_emp^2 ~= FPC * sigma_ana^2`` with ``FPC = 1 - N/N_+``. Dividing the
empirical variance by FPC corrects it. :func:`fpc_simulation` shows this on Gaussian
data with the subset mean as the "model"; :func:`fpc_sweep` does so over a range of
N/N_+. The correction itself, applied to LiRA scores, is a variant in
:func:`audit_core.lira.evaluation.evaluate_lira`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["FpcSimulation", "fpc_simulation", "fpc_sweep"]


@dataclass(frozen=True)
class FpcSimulation:
    """Gaussian simulation of the finite-population correction (docs/methods.md §2).

    Each repeat draws a population of N_+ values from N(0, 1), M subsets of size N
    without replacement, and takes each subset's mean as the "model". sigma_emp is the
    spread (ddof = 1) of the M means, sigma_ana = 1/sqrt(N) the spread over independent
    draws from the population distribution.

    Attributes
    ----------
    population, train_size, n_models, repeats : int
    fpc : float
        1 - N/N_+.
    ratio_empirical, ratio_corrected : float
        Medians over repeats of sigma_emp/sigma_ana, before and after dividing
        sigma_emp by sqrt(FPC).
    ratios : np.ndarray
        ``(repeats,)`` uncorrected ratios.
    """

    population: int
    train_size: int
    n_models: int
    repeats: int
    fpc: float
    ratio_empirical: float
    ratio_corrected: float
    ratios: np.ndarray = field(repr=False)

    @property
    def expected_ratio(self) -> float:
        """sqrt(FPC), where the uncorrected ratio should concentrate."""
        return math.sqrt(self.fpc)

    def to_json(self) -> dict:
        """The docs/contract.md ``fpc-sim`` JSON: ``fpc``, ``ratio_empirical``, ``ratio_corrected`` (+ extras)."""
        q = np.quantile(self.ratios, [0.25, 0.75])
        return {
            "fpc": self.fpc,
            "ratio_empirical": self.ratio_empirical,
            "ratio_corrected": self.ratio_corrected,
            "expected_ratio": self.expected_ratio,
            "ratio_empirical_iqr": [float(q[0]), float(q[1])],
            "population": self.population,
            "train_size": self.train_size,
            "n_models": self.n_models,
            "repeats": self.repeats,
        }


def fpc_simulation(*, population: int, train_size: int, n_models: int = 64, repeats: int = 200, seed: int = 0) -> FpcSimulation:
    """Simulate sigma_emp/sigma_ana for M subsets of size N from a pool of N_+ (docs/methods.md §2).

    The settings are the ``fpc-sim`` tool's knobs (``FpcSettings``: 2 <= N < N_+, M >= 3,
    at least 1 repeat, N_+ x M bounded), checked here by ``FpcSettings.validate``: what the
    page and the CLI refuse raises their :class:`~audit_core.common.errors.InputError` sentence.

    >>> r = fpc_simulation(population=2000, train_size=1000, n_models=64, repeats=50, seed=0)
    >>> round(r.fpc, 2), abs(r.ratio_empirical - 0.707) < 0.05, abs(r.ratio_corrected - 1) < 0.07
    (0.5, True, True)
    """
    from audit_core.lira.spec import FpcSettings

    FpcSettings.checked(population=population, train_size=train_size, models=n_models, repeats=repeats)
    rng = np.random.default_rng(seed)
    fpc = 1.0 - train_size / population
    ratios = np.empty(repeats)
    sigma_ana = 1.0 / math.sqrt(train_size)
    for r in range(repeats):
        pop = rng.standard_normal(population)
        keys = rng.random((n_models, population))
        idx = np.argpartition(keys, train_size - 1, axis=1)[:, :train_size]
        means = pop[idx].mean(1)
        ratios[r] = means.std(ddof=1) / sigma_ana
    return FpcSimulation(
        population=population,
        train_size=train_size,
        n_models=n_models,
        repeats=repeats,
        fpc=fpc,
        ratio_empirical=float(np.median(ratios)),
        ratio_corrected=float(np.median(ratios / math.sqrt(fpc))),
        ratios=ratios,
    )


def fpc_sweep(
    *,
    population: int = 2000,
    fractions: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 0.9),
    n_models: int = 64,
    repeats: int = 100,
    seed: int = 0,
) -> tuple[FpcSimulation, ...]:
    """:func:`fpc_simulation` over a range of N/N_+ (for the FPC plot)."""
    return tuple(
        fpc_simulation(
            population=population,
            train_size=max(2, round(f * population)),
            n_models=n_models,
            repeats=repeats,
            seed=seed + i,
        )
        for i, f in enumerate(fractions)
    )
