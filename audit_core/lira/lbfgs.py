"""Lockstep L-BFGS: M independent L-BFGS runs advanced together, one batched objective call per step.

LiRA's M logistic regressions (:mod:`audit_core.lira.training`) are fitted with it: the
models share every evaluation of the batched objective and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["Objective", "lockstep_lbfgs"]

Objective = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
"""A batched objective: ``theta (M, p) -> (loss (M,), gradient (M, p))``, model m's loss depending on ``theta[m]`` only."""


def lockstep_lbfgs(
    objective: Objective,
    theta: torch.Tensor,
    start: tuple[torch.Tensor, torch.Tensor],
    *,
    max_iter: int,
    tol: float,
    history: int,
    progress: Callable[[int], object],
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """M independent L-BFGS runs advanced together (one batched objective call per step).

    Each model keeps its own curvature history, its own two-loop recursion and its own
    Armijo backtracking step, so the result is what M separate runs would give; only
    the objective evaluations are shared. A model stops when its largest gradient
    entry falls below ``tol`` (scikit-learn's lbfgs criterion). A step is taken only to a
    finite loss, so a finite ``start`` stays finite.

    Parameters
    ----------
    objective : Objective
    theta : torch.Tensor
        ``(M, p)`` starting point.
    start : (torch.Tensor, torch.Tensor)
        ``objective(theta)``, evaluated (and checked) by the caller.
    max_iter, tol, history : int, float, int
        Most iterations, the gradient bound, the curvature pairs kept.
    progress : callable
        ``progress(iteration)``, every 10 iterations.

    Returns
    -------
    theta, loss, iterations
    """
    M = theta.shape[0]
    f, g = start
    S: list[torch.Tensor] = []
    Y: list[torch.Tensor] = []
    R: list[torch.Tensor] = []
    gamma = torch.ones(M, dtype=theta.dtype, device=theta.device)
    noise = 10 * torch.finfo(theta.dtype).eps  # relative loss change below rounding: nothing left to gain
    stopped = torch.zeros(M, dtype=torch.bool, device=theta.device)
    trial = torch.clamp(1.0 / g.abs().sum(1).clamp_min(1e-12), max=1.0)  # first step, as scipy's lbfgs
    it = 0
    for it in range(1, max_iter + 1):
        active = (g.abs().amax(1) > tol) & ~stopped
        if not bool(active.any()):
            it -= 1
            break
        q = g.clone()
        alphas = []
        for s_i, y_i, r_i in zip(reversed(S), reversed(Y), reversed(R), strict=True):
            a = r_i * (s_i * q).sum(1)
            q -= a[:, None] * y_i
            alphas.append(a)
        r = gamma[:, None] * q
        for s_i, y_i, r_i, a in zip(S, Y, R, reversed(alphas), strict=True):
            beta = r_i * (y_i * r).sum(1)
            r += s_i * (a - beta)[:, None]
        direction = -r
        slope = (g * direction).sum(1)
        bad = slope >= 0  # not a descent direction: fall back to steepest descent
        direction[bad] = -g[bad]
        slope = torch.where(bad, -(g * g).sum(1), slope)
        step = torch.where(active, trial, torch.zeros_like(trial))
        cand = theta + step[:, None] * direction
        cf, cg = objective(cand)
        ok = active & torch.isfinite(cf) & (cf <= f + 1e-4 * step * slope)
        new_theta, new_f, new_g = theta.clone(), f.clone(), g.clone()
        new_theta[ok], new_f[ok], new_g[ok] = cand[ok], cf[ok], cg[ok]
        # A model whose step fails Armijo stays put this iteration and retries with half
        # the step next time (one batched evaluation per iteration, never a serial line search).
        failed = active & ~ok
        trial = torch.where(ok, torch.clamp(step * 2, max=1.0), torch.where(failed, step * 0.5, trial))
        stopped |= failed & ((trial < 1e-10) | ((cf - f).abs() <= noise * f.abs()))
        s_new, y_new = new_theta - theta, new_g - g
        sy = (s_new * y_new).sum(1)
        good = sy > 1e-10
        S.append(torch.where(good[:, None], s_new, torch.zeros_like(s_new)))
        Y.append(torch.where(good[:, None], y_new, torch.zeros_like(y_new)))
        R.append(torch.where(good, 1.0 / sy.clamp_min(1e-10), torch.zeros_like(sy)))
        gamma = torch.where(good, sy / (y_new * y_new).sum(1).clamp_min(1e-20), gamma)
        if len(S) > history:
            S.pop(0), Y.pop(0), R.pop(0)
        theta, f, g = new_theta, new_f, new_g
        if it % 10 == 0:
            progress(it)
    return theta, f, it
