"""LiRA's M classifiers trained together as one tensor computation (docs/methods.md §2).

LiRA needs M target/shadow models, each trained on its own random half of the data.
Training them one after another wastes the machine: the models are independent, so
their losses can be summed and minimised in one batched computation whose gradient
is block-diagonal.

- :func:`train_batched`: M logistic regressions (M L-BFGS runs in lockstep,
  :func:`audit_core.lira.lbfgs.lockstep_lbfgs`) or M one-hidden-layer MLPs (Adam, each
  model walking its own shuffled half), as set by :class:`TrainOptions`;
- :func:`train_models`: the same, or the same M models cut into batches over a Dask cluster.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn, as_progress, pick_device, sub_progress
from audit_core.lira.batched_models import BatchedModels, forward
from audit_core.lira.choices import ModelType
from audit_core.lira.lbfgs import Objective, lockstep_lbfgs

__all__ = ["TrainOptions", "TrainingDivergedError", "train_batched", "train_models"]


class TrainingDivergedError(InputError):
    """Raised when a model's training loss becomes non-finite (NaN or infinite)."""


@dataclass(frozen=True)
class TrainOptions:
    """How the batched models are trained; the defaults are scikit-learn's (the audit uses them).

    Attributes
    ----------
    hidden, epochs, batch_size : int
        MLP: hidden units, Adam epochs, minibatch size; logistic regression ignores them.
    learning_rate : float, optional
        MLP: Adam step (default 1e-3); logistic regression ignores it (L-BFGS chooses its own steps).
    l2 : float, optional
        Logistic: inverse of C (default 1). MLP: scikit-learn's ``alpha`` (default 1e-4).
    max_iter, tol : int, float
        Logistic: L-BFGS iterations, and the bound every gradient entry of every model's
        mean objective must fall below (scikit-learn's lbfgs uses 1e-4 on the same scale).
    dtype : torch.dtype
        Precision of the computation.
    """

    hidden: int = 32
    epochs: int = 20
    batch_size: int = 256
    learning_rate: float | None = None
    l2: float | None = None
    max_iter: int = 200
    tol: float = 1e-4
    dtype: torch.dtype = torch.float32


def train_batched(
    X: np.ndarray,
    y: np.ndarray,
    keep: np.ndarray,
    *,
    kind: ModelType = "logistic",
    n_classes: int = 2,
    options: TrainOptions = TrainOptions(),
    seed: int = 0,
    device: torch.device | str | None = None,
    progress: ProgressFn | None = None,
    models: tuple[int, int] | None = None,
) -> BatchedModels:
    """Train M classifiers at once; model m sees only the rows with ``keep[m]``.

    Parameters
    ----------
    X, y : np.ndarray
        Features ``(n, d)`` and class indices ``(n,)``.
    keep : np.ndarray
        ``(M, n)`` boolean membership matrix (:func:`audit_core.lira.keep_matrix.balanced_keep_matrix`).
    kind : {"logistic", "mlp"}
        L2-penalised logistic regressions fitted by M L-BFGS runs in lockstep
        (:func:`_train_logistic`), or one-hidden-layer ReLU MLPs trained by Adam on
        minibatches (:func:`_train_mlp`). The ``--model`` knob's choices.
    n_classes : int
        Number of classes; 2 gives a single-logit model.
    options : TrainOptions
        Sizes, schedules, penalties and precision.
    seed : int
    device : torch.device or str, optional
        Defaults to ``audit_core.common.runtime.pick_device()``.
    progress : callable, optional
        ``progress(fraction, message)``.
    models : (int, int), optional
        Train only the models ``start:stop`` of the M that ``keep`` describes, with the
        random draws of the full run (initial weights, shuffles), so that batches trained
        apart (:func:`train_models` on a cluster) give the rows of the full run.

    Raises
    ------
    TrainingDivergedError
        When any model's loss becomes NaN or infinite.
    """
    if device is None:
        device = pick_device()
    Xt = torch.as_tensor(X, dtype=options.dtype).to(device)
    yt = torch.as_tensor(y, dtype=torch.long).to(device)
    lo, hi = (0, keep.shape[0]) if models is None else (int(models[0]), int(models[1]))
    kt = torch.as_tensor(keep[lo:hi], dtype=options.dtype).to(device)
    k = 1 if n_classes == 2 else n_classes
    report = sub_progress(progress, 0.0, 1.0)  # clamps the fraction to [0, 1]
    if kind == "logistic":
        return _train_logistic(Xt, yt, kt, k=k, options=options, report=report)
    return _train_mlp(Xt, yt, kt, keep, rows=(lo, hi), k=k, options=options, seed=seed, report=report)


def _raise_if_diverged(loss: torch.Tensor, *, where: str) -> None:
    """Raise :class:`TrainingDivergedError` when any model's loss is not finite."""
    bad = ~torch.isfinite(loss)
    if bool(bad.any()):
        raise TrainingDivergedError(
            f"Training diverged (non-finite loss) for {int(bad.sum())} of {loss.numel()} models "
            f"{where}; lower the learning rate or the model size, or check the features for extreme values."
        )


def _loss_terms(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-entry cross-entropy, shape ``(M, n)``; logits ``(M, n, k)``."""
    if logits.shape[-1] == 1:
        target = y.to(logits.dtype).expand(logits.shape[0], -1)
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[..., 0], target, reduction="none")
    lse = torch.logsumexp(logits, dim=-1)
    idx = y.view(1, -1, 1).expand(logits.shape[0], -1, 1)
    return lse - logits.gather(-1, idx)[..., 0]


def _loss_terms_gathered(logits: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with per-model labels: logits ``(M, B, k)``, yb ``(M, B)``."""
    if logits.shape[-1] == 1:
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[..., 0], yb.to(logits.dtype), reduction="none")
    lse = torch.logsumexp(logits, dim=-1)
    return lse - logits.gather(-1, yb.unsqueeze(-1))[..., 0]


# --------------------------------------------------------------------------- logistic regression


def _logistic_objective(Xt: torch.Tensor, yt: torch.Tensor, kt: torch.Tensor, *, k: int, lam: float) -> Objective:
    """The batched objective of M logistic regressions: ``theta (M, d k + k) -> (loss (M,), grad (M, d k + k))``.

    Model m's loss is ``(sum_i keep[m, i] CE_i + lam ||W_m||^2 / 2) / n_m`` (scikit-learn's
    default ``C = 1`` at ``lam = 1``, intercept unpenalised), with a closed-form gradient
    for binary targets (k = 1) and autograd for multiclass.
    """
    M = kt.shape[0]
    d = Xt.shape[1]
    n_w = d * k
    n_m = kt.sum(1)  # records per model
    keep_t = kt.T.contiguous()  # (n, M)
    y_col = yt.to(Xt.dtype)[:, None]
    sign = 2 * y_col - 1

    def binary_objective(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # closed-form gradient: one GEMM forward, one backward, no autograd graph
        W, b = theta[:, :d].T, theta[:, d]
        z = torch.addmm(b, Xt, W)  # (n, M)
        ce = (torch.nn.functional.softplus(-sign * z) * keep_t).sum(0)
        resid = (torch.sigmoid(z) - y_col) * keep_t
        grad = torch.cat([(Xt.T @ resid).T + lam * W.T, resid.sum(0)[:, None]], 1) / n_m[:, None]
        return (ce + 0.5 * lam * (W**2).sum(0)) / n_m, grad

    def objective(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if k == 1:
            return binary_objective(theta)
        theta = theta.detach().requires_grad_(True)
        W = theta[:, :n_w].reshape(M, d, k)
        b = theta[:, n_w:].reshape(M, 1, k)
        ce = (_loss_terms(forward("logistic", {"W": W, "b": b}, Xt), yt) * kt).sum(1)
        loss = (ce + 0.5 * lam * (W**2).sum((1, 2))) / n_m
        (grad,) = torch.autograd.grad(loss.sum(), theta)
        return loss.detach(), grad

    return objective


def _train_logistic(
    Xt: torch.Tensor, yt: torch.Tensor, kt: torch.Tensor, *, k: int, options: TrainOptions, report: ProgressFn
) -> BatchedModels:
    """M L2-penalised logistic regressions (:func:`_logistic_objective`, ``lam = options.l2``, default 1).

    Fitted by M L-BFGS runs in lockstep (:func:`audit_core.lira.lbfgs.lockstep_lbfgs`), every model starting from zero.
    """
    M = kt.shape[0]
    d = Xt.shape[1]
    n_w = d * k
    max_iter = options.max_iter
    objective = _logistic_objective(Xt, yt, kt, k=k, lam=1.0 if options.l2 is None else options.l2)
    report(0.0, f"Training {M} logistic models")
    theta0 = torch.zeros(M, n_w + k, dtype=Xt.dtype, device=Xt.device)
    start = objective(theta0)
    _raise_if_diverged(start[0], where="at the start")
    theta, final, n_it = lockstep_lbfgs(
        objective,
        theta0,
        start,
        max_iter=max_iter,
        tol=options.tol,
        history=10,
        progress=lambda i: report(i / max_iter, f"L-BFGS iteration {i}"),
    )
    _raise_if_diverged(final, where="after L-BFGS")
    report(1.0, f"Trained {M} logistic models")
    params = {"W": theta[:, :n_w].reshape(M, d, k).contiguous(), "b": theta[:, n_w:].reshape(M, 1, k).contiguous()}
    return BatchedModels("logistic", params, n_it, final.double().cpu().numpy())


# --------------------------------------------------------------------------- one-hidden-layer MLP


def _init_mlp(
    gen: torch.Generator, *, n_all: int, rows: slice, d: int, hidden: int, k: int, dtype: torch.dtype, device: torch.device
) -> dict[str, torch.Tensor]:
    """Initial MLP weights, uniform in +-1/sqrt(fan_in), drawn for all ``n_all`` models of the full run, then ``rows`` kept."""

    def uniform(shape: tuple[int, int, int], fan_in: int) -> torch.Tensor:
        bound = 1.0 / math.sqrt(fan_in)
        return ((torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound).to(dtype).to(device)

    params = {
        "W1": uniform((n_all, d, hidden), d)[rows].clone(),
        "b1": uniform((n_all, 1, hidden), d)[rows].clone(),
        "W": uniform((n_all, hidden, k), hidden)[rows].clone(),
        "b": uniform((n_all, 1, k), hidden)[rows].clone(),
    }
    for p in params.values():
        p.requires_grad_(True)
    return params


def _forward_gathered(p: dict[str, torch.Tensor], Xb: torch.Tensor) -> torch.Tensor:
    """Per-model input: Xb ``(M, B, d)`` -> logits ``(M, B, k)`` (MLP)."""
    h = torch.relu(torch.bmm(Xb, p["W1"]) + p["b1"])
    return torch.bmm(h, p["W"]) + p["b"]


def _train_mlp(
    Xt: torch.Tensor,
    yt: torch.Tensor,
    kt: torch.Tensor,
    keep: np.ndarray,
    *,
    rows: tuple[int, int],
    k: int,
    options: TrainOptions,
    seed: int,
    report: ProgressFn,
) -> BatchedModels:
    """Models ``rows`` of ``keep`` as one-hidden-layer ReLU MLPs, trained by Adam on minibatches.

    Each model shuffles its own half every epoch (like scikit-learn's MLPClassifier, with
    its L2 penalty ``alpha = options.l2``, default 1e-4, and Adam step ``options.learning_rate``,
    default 1e-3); the random draws are those of the full run of all the models of ``keep``,
    whichever rows are trained.
    """
    alpha = 1e-4 if options.l2 is None else options.l2
    lr = 1e-3 if options.learning_rate is None else options.learning_rate
    epochs, batch_size = options.epochs, options.batch_size
    dtype, device = Xt.dtype, Xt.device
    lo, hi = rows
    M_all = keep.shape[0]
    M, n = kt.shape
    n_m = kt.sum(1)  # records per model
    gen = torch.Generator(device="cpu").manual_seed(seed)
    params = _init_mlp(gen, n_all=M_all, rows=slice(lo, hi), d=Xt.shape[1], hidden=options.hidden, k=k, dtype=dtype,
                       device=device)  # fmt: skip
    opt = torch.optim.Adam(list(params.values()), lr=lr)
    n_max = int(np.asarray(keep).sum(1).max())  # over all M_all models: the same steps in every batch
    steps = math.ceil(n_max / batch_size)
    keep_cpu = torch.as_tensor(keep[lo:hi])
    report(0.0, f"Training {M} MLPs")
    epoch_loss = torch.zeros(M, dtype=dtype, device=device)
    for epoch in range(epochs):
        # each model's own random order of its own half; non-members sort last
        keys = torch.rand(M_all, n, generator=gen)[lo:hi]
        keys[~keep_cpu] = 2.0
        order = keys.argsort(dim=1)[:, :n_max].to(device)
        valid = keep_cpu.gather(1, order.cpu()).to(device=device, dtype=dtype)
        epoch_loss = torch.zeros(M, dtype=dtype, device=device)
        for s in range(steps):
            idx = order[:, s * batch_size : (s + 1) * batch_size]
            w = valid[:, s * batch_size : (s + 1) * batch_size]
            nb = w.sum(1).clamp_min(1.0)
            logits = _forward_gathered(params, Xt[idx])
            ce = (_loss_terms_gathered(logits, yt[idx]) * w).sum(1)
            penalty = 0.5 * alpha * ((params["W1"] ** 2).sum((1, 2)) + (params["W"] ** 2).sum((1, 2)))
            loss = (ce + penalty) / nb
            opt.zero_grad()
            loss.sum().backward()
            opt.step()
            epoch_loss += loss.detach() * nb
        epoch_loss = epoch_loss / n_m
        _raise_if_diverged(epoch_loss, where=f"in epoch {epoch + 1}")
        report((epoch + 1) / epochs, f"Epoch {epoch + 1}/{epochs}")
    detached = {key: v.detach() for key, v in params.items()}
    return BatchedModels("mlp", detached, epochs, epoch_loss.double().cpu().numpy())


# --------------------------------------------------------------------------- batches on a Dask cluster


def _train_batch(X: np.ndarray, y: np.ndarray, keep: np.ndarray, start: int, stop: int, job: dict[str, Any]) -> BatchedModels:
    """One cluster task: models ``start:stop`` of the full run (``job``: :func:`train_batched`'s keywords), on the CPU."""
    trained = train_batched(X, y, keep, models=(start, stop), **job)
    return BatchedModels(trained.kind, {k: v.cpu() for k, v in trained.params.items()}, trained.n_iterations,
                         trained.final_loss)  # fmt: skip


def train_models(
    X: np.ndarray,
    y: np.ndarray,
    keep: np.ndarray,
    *,
    kind: ModelType = "logistic",
    n_classes: int = 2,
    options: TrainOptions = TrainOptions(),
    seed: int = 0,
    client: Any = None,
    batches: int | None = None,
    device: torch.device | str | None = None,
    progress: ProgressFn | None = None,
) -> BatchedModels:
    """:func:`train_batched`, or the same M models split into batches over a Dask cluster.

    With ``client`` the M rows of ``keep`` are cut into ``batches`` consecutive
    batches (default: one per worker); each batch is one task that trains its models
    as one batched tensor computation (on the worker's GPU when it has one) with the
    random draws of the full run (``train_batched(models=...)``), and the batches are
    stacked back in order. The models do not interact while training, so the result
    is the full run's (exactly for the MLP; for logistic regression up to the
    rounding of the batched matrix products, see benchmarks/README.md).
    """
    if client is None:
        return train_batched(X, y, keep, kind=kind, n_classes=n_classes, options=options, seed=seed, device=device,
                             progress=progress)  # fmt: skip
    from audit_core.common.cluster import n_workers, run_tasks

    M = int(np.asarray(keep).shape[0])
    count = max(1, min(M, int(batches or n_workers(client))))
    edges = [int(e) for e in np.linspace(0, M, count + 1).round()]
    job = {"kind": kind, "n_classes": n_classes, "options": options, "seed": seed,
           "device": None if device is None else str(device)}  # fmt: skip
    shared = client.scatter([X, y, keep], broadcast=True, hash=False)  # on every worker: a lost one loses nothing
    report = as_progress(progress)
    done = [0]

    def tick(i: int, _result: object) -> None:
        done[0] += 1
        report(done[0] / count, f"trained model batch {done[0]} of {count} on the cluster")

    labels = [f"models {a + 1}-{b}" for a, b in itertools.pairwise(edges)]
    tasks = [(*shared, a, b, job) for a, b in itertools.pairwise(edges)]
    parts = run_tasks(client, _train_batch, tasks, labels=labels, on_done=tick)
    target = pick_device(str(device)) if device is not None else pick_device()
    params = {k: torch.cat([p.params[k] for p in parts]).to(target) for k in parts[0].params}
    return BatchedModels(parts[0].kind, params, max(p.n_iterations for p in parts),
                         np.concatenate([p.final_loss for p in parts]))  # fmt: skip
