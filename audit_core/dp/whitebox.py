"""Gradient canaries of the white-box audit: Dirac canaries put into Opacus' DP-SGD steps, scored from the weights.

The auditor controls training ("train here"), so it can add canaries straight into the
gradients (Nasr et al. 2023; Steinke, Nasr and Jagielski 2023, section 7). Each of m canaries
is a gradient: the clipping norm C on one weight and 0 elsewhere (a Dirac canary). A canary
is in the run by a fair coin, drawn once (independently of the record canaries); in each
step an included canary joins the batch with the run's sampling rate q, as a record would.
Its gradient is added to Opacus' sum of clipped per-sample gradients (its norm is the
clipping norm, so clipping leaves it as it is), before Opacus adds the noise and averages
(:func:`insert_canaries`). A canary of norm C audits Opacus' sampling, noise and
averaging; a clipping bug would not show on it (nor on any Dirac canary of the literature).

The weights the canaries sit on are :class:`AuditWeights`: a linear map from inputs that are
0 for every record into the logits. No record's gradient touches them and they add nothing
to any prediction, so the canaries see no interference from the data (Keinan et al. 2025
call it the interference gap) and the model the black-box audit scores is unchanged.

The auditor sees every iterate, so it reads each step's noisy gradient sum G_t from the
weights (``(w(t) - w(t + 1)) B / lr`` for SGD, B the expected batch size, lr the learning rate)
and the canary's inner product with it, ``x_t = <e_j, G_t> / C``: 1 when the canary was in the
step's batch, else 0, plus N(0, sigma^2) (:func:`canary_steps`). The score
(:func:`canary_scores`) is, as chosen before the run, their sum over the steps (Steinke et al.'s
statistic) or their log-likelihood ratio under the claimed mechanism (the optimal test).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "AuditWeights",
    "GradientCanaries",
    "WithAuditWeights",
    "canary_sampler",
    "canary_scores",
    "canary_steps",
    "draw_gradient_canaries",
    "insert_canaries",
]


@dataclass(frozen=True)
class GradientCanaries:
    """m Dirac gradient canaries: which are in the run (fair coins) and which audit weight each sits on.

    Attributes
    ----------
    included : np.ndarray
        ``(m,)`` bool: in the run.
    rows, columns : np.ndarray
        ``(m,)`` the canary's weight in :class:`AuditWeights` (logit row, zero-input column): distinct.
    seed : int
        Seeds the per-step sampling of the included canaries.
    """

    included: np.ndarray
    rows: np.ndarray
    columns: np.ndarray
    seed: int

    @property
    def m(self) -> int:
        return len(self.included)

    def width(self) -> int:
        """The number of zero inputs the audit weights need."""
        return int(self.columns.max()) + 1


def draw_gradient_canaries(m: int, *, n_classes: int, seed: int) -> GradientCanaries:
    """The coins (seeded, their own stream) and one distinct audit weight per canary (row j mod k, column j // k)."""
    rng = np.random.default_rng([seed, 29])
    included = rng.random(m) < 0.5
    j = np.arange(m)
    return GradientCanaries(included=included, rows=j % n_classes, columns=j // n_classes, seed=seed)


class AuditWeights(torch.nn.Module):
    """Weights from inputs that are always 0 into the logits: they carry the gradient canaries and change no output."""

    def __init__(self, width: int, n_classes: int) -> None:
        super().__init__()
        self.width = width
        self.linear = torch.nn.Linear(width, n_classes, bias=False)
        with torch.no_grad():
            self.linear.weight.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.new_zeros(x.shape[0], self.width))


class WithAuditWeights(torch.nn.Module):
    """A network plus its audit weights: the network's logits, unchanged (the audit weights add 0)."""

    def __init__(self, net: torch.nn.Module, audit: AuditWeights) -> None:
        super().__init__()
        self.net = net
        self.audit = audit

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x) + self.audit(x)


def insert_canaries(optimizer: object, audit_weight: torch.Tensor, canaries: GradientCanaries,
                    sampler: Iterator[np.ndarray], *, clip: float) -> None:  # fmt: skip
    """Make every step of Opacus' optimizer add the step's sampled canaries to its sum of clipped gradients.

    Opacus' step clips each per-sample gradient and sums them (``clip_and_accumulate``), then adds
    the noise and averages. A canary's gradient is ``clip`` on its audit weight and 0 elsewhere: its
    norm is the clipping norm, so clipping leaves it as it is, and it is added to that sum (on the
    audit weights, the only parameter it touches) right after Opacus forms it, before the noise.
    ``sampler`` gives each step's sampled canaries (:func:`canary_sampler`).
    """
    accumulate = optimizer.clip_and_accumulate  # type: ignore[attr-defined]

    def with_canaries() -> None:
        accumulate()
        sampled = np.flatnonzero(next(sampler))
        if len(sampled):
            extra = torch.zeros_like(audit_weight)
            extra.index_put_((torch.as_tensor(canaries.rows[sampled]), torch.as_tensor(canaries.columns[sampled])),
                             torch.full((len(sampled),), clip, dtype=extra.dtype), accumulate=True)  # fmt: skip
            audit_weight.summed_grad = audit_weight.summed_grad + extra  # type: ignore[attr-defined]

    optimizer.clip_and_accumulate = with_canaries  # type: ignore[attr-defined]


def canary_steps(trajectory: np.ndarray, *, expected_batch: float, learning_rate: float, clip: float) -> np.ndarray:
    """``(T, m)`` each canary's inner product with each step's noisy gradient sum, in units of the clip norm.

    ``trajectory`` is ``(T + 1, m)``: the canaries' audit weights before the first step and after each.
    SGD moves a weight by ``-lr G_t / B``, so ``<e_j, G_t> / C = (w_j(t) - w_j(t + 1)) B / (lr C)``:
    1 when the canary was in step t's batch, 0 otherwise, plus N(0, sigma^2).
    """
    return -np.diff(trajectory, axis=0) * expected_batch / (learning_rate * clip)


def canary_scores(steps: np.ndarray, *, statistic: str, noise_multiplier: float, sample_rate: float) -> np.ndarray:
    """``(m,)`` the white-box score of each canary from its per-step values (:func:`canary_steps`).

    ``"sum"``: the inner product with the model updates summed over the steps (Steinke et al.'s
    statistic; for SGD the weights' total movement). ``"likelihood-ratio"``: the sum over steps
    of ``log(1 - q + q exp((x - 1/2) / sigma^2))``, the log-likelihood ratio of one step of the
    claimed mechanism (in with probability q, noise sigma) against "out": the Neyman-Pearson
    test of the claim, so the strongest score for a canary of this run.
    """
    if statistic == "sum":
        return steps.sum(0)
    q, s2 = float(sample_rate), float(noise_multiplier) ** 2
    return np.logaddexp(np.log1p(-q), np.log(q) + (steps - 0.5) / s2).sum(0)


def canary_sampler(canaries: GradientCanaries, sample_rate: float) -> Iterator[np.ndarray]:
    """``(m,)`` bool per step, forever: the included canaries that join the step's batch (each with probability q; seeded)."""
    rng = np.random.default_rng([canaries.seed, 31])
    while True:
        yield (rng.random(canaries.m) < sample_rate) & canaries.included
