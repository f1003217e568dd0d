"""M classifiers trained together as one tensor computation (docs/methods.md §2).

LiRA needs M target/shadow models, each trained on its own random half of the data.
Training them one after another wastes the machine: the models are independent, so
their losses can be summed and minimised in one batched computation whose gradient
is block-diagonal. This module provides

- :func:`prepare_design`: the feature matrix (one-hot categoricals, standardised
  numerics, fitted once on the whole table) and the encoded target, with the
  checks a target column needs (one class, tiny classes, continuous values);
- :func:`balanced_keep_matrix`: which record is in which model, every record in
  exactly M/2 models and every model holding half the records;
- :func:`train_batched`: M logistic regressions (M L-BFGS runs in lockstep)
  or M one-hidden-layer MLPs (Adam, each model walking its own shuffled half);
- :func:`logit_confidence`: the LiRA score ``log(p_y / (1 - p_y))``, computed stably.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn, as_progress, pick_device, sub_progress
from audit_core.common.tables import columns_sentence
from audit_core.lira.choices import MODEL_TYPES

MIN_CLASS_ROWS = 10
MAX_CLASSES = 20
MAX_LEVELS = 50


class TrainingDivergedError(InputError):
    """Raised when a model's training loss becomes non-finite (NaN or infinite)."""


@dataclass(frozen=True)
class Design:
    """Model-ready features and labels derived from one table.

    Attributes
    ----------
    X : np.ndarray
        ``(n, d)`` float32 features: standardised numerics (missing -> column
        median) and one-hot categoricals (missing is its own level; at most
        ``MAX_LEVELS`` levels per column, the rest pooled as "other").
    y : np.ndarray
        ``(n,)`` int64 class index into ``classes``.
    classes : tuple[str, ...]
        Class labels as text, in index order.
    feature_names : tuple[str, ...]
    target : str
    """

    X: np.ndarray
    y: np.ndarray
    classes: tuple[str, ...]
    feature_names: tuple[str, ...]
    target: str

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def _check_target(col: pd.Series, *, target: str) -> None:
    values = col.dropna()
    if len(values) < len(col):
        raise InputError(
            f"The target column '{target}' has {len(col) - len(values)} missing values; drop those rows or choose another target."
        )
    n_unique = values.nunique()
    if n_unique < 2:
        raise InputError(
            f"The target column '{target}' has a single class; membership inference needs "
            "a classifier, so choose a target with at least two classes."
        )
    if pd.api.types.is_float_dtype(values) and n_unique > MAX_CLASSES:
        if not np.allclose(values, np.round(values)):
            raise InputError(
                f"The target column '{target}' looks continuous ({n_unique} distinct "
                "non-integer values); choose a categorical target or bin it into classes first."
            )
    if n_unique > MAX_CLASSES:
        raise InputError(
            f"The target column '{target}' has {n_unique} distinct values; at most "
            f"{MAX_CLASSES} classes are supported, so choose a categorical target or bin it."
        )
    counts = values.astype(str).value_counts()
    small = counts[counts < MIN_CLASS_ROWS]
    if len(small):
        names = ", ".join(f"'{k}' ({v} rows)" for k, v in small.items())
        raise InputError(
            f"The target column '{target}' has classes with fewer than {MIN_CLASS_ROWS} rows: "
            f"{names}; half-splits would leave models without them, so merge or drop those classes."
        )


def prepare_design(df: pd.DataFrame, *, target: str, min_rows: int = 50) -> Design:
    """Encode a table for the batched models; checks the target column.

    Parameters
    ----------
    df : pandas.DataFrame
        The table D of docs/methods.md §2 (all records are candidates for membership).
    target : str
        Name of the class column.
    min_rows : int
        Smallest table accepted (each model trains on half of it).

    Returns
    -------
    Design

    Raises
    ------
    InputError
        Unknown target, too few rows, a single class, a class with a handful of
        rows, a continuous target, or no usable feature column.
    """
    if target not in df.columns:
        raise InputError(f"The target column '{target}' is not in the table; {columns_sentence(df.columns, target)}")
    if len(df) < min_rows:
        raise InputError(
            f"The table has {len(df)} rows; half-splits need at least {min_rows} rows "
            "so that every model trains on a meaningful half."
        )
    _check_target(df[target], target=target)
    y_text = df[target].astype(str)
    classes = tuple(sorted(y_text.unique()))
    y = pd.Categorical(y_text, categories=classes).codes.astype(np.int64)

    blocks: list[np.ndarray] = []
    names: list[str] = []
    for col in df.columns:
        if col == target:
            continue
        s = df[col]
        if pd.api.types.is_bool_dtype(s):
            s = s.astype(float)
        if pd.api.types.is_numeric_dtype(s):
            v = s.to_numpy(dtype=np.float64)
            if np.all(np.isnan(v)):
                continue
            v = np.where(np.isnan(v), np.nanmedian(v), v)
            sd = v.std()
            if not np.isfinite(sd) or sd == 0:
                continue
            blocks.append(((v - v.mean()) / sd)[:, None])
            names.append(str(col))
        else:
            t = s.astype("string").fillna("(missing)")
            counts = t.value_counts()
            if len(counts) < 2:
                continue
            keep = set(counts.index[:MAX_LEVELS])
            t = t.where(t.isin(keep), "(other)")
            levels = sorted(t.unique())
            codes = pd.Categorical(t, categories=levels).codes
            onehot = np.zeros((len(t), len(levels)))
            onehot[np.arange(len(t)), codes] = 1.0
            blocks.append(onehot)
            names.extend(f"{col}={lvl}" for lvl in levels)
    if not blocks:
        raise InputError(
            "No usable feature column is left besides the target (all are constant or empty); add informative columns."
        )
    X = np.hstack(blocks).astype(np.float32)
    return Design(X=X, y=y, classes=classes, feature_names=tuple(names), target=target)


def balanced_keep_matrix(n_samples: int, *, n_models: int, seed: int) -> np.ndarray:
    """Which record trains which model: every record in exactly M/2 models.

    Models come in complementary pairs (2k, 2k+1): model 2k takes a uniformly random
    half of the records and model 2k+1 the other half. Hence each record is in exactly
    M/2 models, each model holds ``floor(n/2)`` or ``ceil(n/2)`` records, and any
    subset of whole pairs is balanced as well (used by the what-if over M).

    Parameters
    ----------
    n_samples : int
    n_models : int
        Even number of models M.
    seed : int

    Returns
    -------
    np.ndarray
        ``(M, n)`` boolean; ``keep[m, i]`` is True when record i trains model m.

    Examples
    --------
    >>> k = balanced_keep_matrix(10, n_models=4, seed=0)
    >>> k.sum(axis=0).tolist() == [2] * 10, sorted(k.sum(axis=1).tolist())
    (True, [5, 5, 5, 5])
    """
    if n_models < 2 or n_models % 2:
        raise InputError(f"The number of models must be even and at least 2, got {n_models}.")
    rng = np.random.default_rng(seed)
    keep = np.zeros((n_models, n_samples), dtype=bool)
    half = (n_samples + 1) // 2
    for k in range(n_models // 2):
        perm = rng.permutation(n_samples)
        first = 2 * k if k % 2 == 0 else 2 * k + 1  # alternate which twin gets ceil(n/2)
        keep[first, perm[:half]] = True
        keep[first ^ 1, perm[half:]] = True
    return keep


def logit_confidence(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """LiRA score ``log(p_y / (1 - p_y))`` from logits, without forming p (docs/methods.md §2).

    Parameters
    ----------
    logits : torch.Tensor
        ``(..., n, 1)`` for a binary model (logit of class 1) or ``(..., n, K)``.
    y : torch.Tensor
        ``(n,)`` class indices.

    Returns
    -------
    torch.Tensor
        ``(..., n)``; higher = more confident in the true label.
    """
    if logits.shape[-1] == 1:
        z = logits[..., 0]
        return torch.where(y.bool(), z, -z)
    idx = y.view(*([1] * (logits.dim() - 2)), -1, 1).expand(*logits.shape[:-1], 1)
    z_y = logits.gather(-1, idx)[..., 0]
    others = logits.scatter(-1, idx, float("-inf"))
    return z_y - torch.logsumexp(others, dim=-1)


def _loss_terms(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-entry cross-entropy, shape ``(M, n)``; logits ``(M, n, k)``."""
    if logits.shape[-1] == 1:
        target = y.to(logits.dtype).expand(logits.shape[0], -1)
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[..., 0], target, reduction="none")
    lse = torch.logsumexp(logits, dim=-1)
    idx = y.view(1, -1, 1).expand(logits.shape[0], -1, 1)
    return lse - logits.gather(-1, idx)[..., 0]


@dataclass(frozen=True)
class BatchedModels:
    """M trained classifiers held as stacked tensors.

    Attributes
    ----------
    kind : str
        "logistic" or "mlp".
    params : dict[str, torch.Tensor]
        Logistic: ``W (M, d, k)``, ``b (M, 1, k)``. MLP: also ``W1, b1`` for the hidden
        layer. ``k`` = 1 for binary targets (logit of class 1), else the number of classes.
    n_iterations : int
        L-BFGS iterations or Adam epochs run.
    final_loss : np.ndarray
        ``(M,)`` training objective of each model at the end.
    """

    kind: str
    params: dict[str, torch.Tensor] = field(repr=False)
    n_iterations: int
    final_loss: np.ndarray

    @property
    def n_models(self) -> int:
        return int(self.params["W"].shape[0])

    def logits(self, X: torch.Tensor | np.ndarray, *, chunk: int = 4096) -> torch.Tensor:
        """Logits of every model on every row, ``(M, n, k)``."""
        Xt = torch.as_tensor(X, device=self.params["W"].device, dtype=self.params["W"].dtype)
        with torch.no_grad():
            out = [_forward(self.kind, self.params, Xt[i : i + chunk]) for i in range(0, len(Xt), chunk)]
        return torch.cat(out, dim=1)

    def scores(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """LiRA scores ``(M, n)`` float64 (see :func:`logit_confidence`)."""
        z = self.logits(X)
        yt = torch.as_tensor(y, device=z.device)
        return logit_confidence(z, yt).double().cpu().numpy()

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted class index ``(M, n)``."""
        z = self.logits(X)
        if z.shape[-1] == 1:
            return (z[..., 0] > 0).long().cpu().numpy()
        return z.argmax(-1).cpu().numpy()


def _forward(kind: str, p: dict[str, torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Shared-input forward pass: X ``(n, d)`` -> logits ``(M, n, k)``."""
    if kind == "logistic":
        return torch.einsum("nd,mdk->mnk", X, p["W"]) + p["b"]
    h = torch.relu(torch.einsum("nd,mdh->mnh", X, p["W1"]) + p["b1"])
    return torch.bmm(h, p["W"]) + p["b"]


def _forward_gathered(p: dict[str, torch.Tensor], Xb: torch.Tensor) -> torch.Tensor:
    """Per-model input: Xb ``(M, B, d)`` -> logits ``(M, B, k)`` (MLP)."""
    h = torch.relu(torch.bmm(Xb, p["W1"]) + p["b1"])
    return torch.bmm(h, p["W"]) + p["b"]


def _raise_if_diverged(loss: torch.Tensor, *, where: str) -> None:
    bad = ~torch.isfinite(loss)
    if bool(bad.any()):
        raise TrainingDivergedError(
            f"Training diverged (non-finite loss) for {int(bad.sum())} of {loss.numel()} models "
            f"{where}; lower the learning rate or the model size, or check the features for extreme values."
        )


def _lockstep_lbfgs(objective, theta: torch.Tensor, *, max_iter: int, tol: float, history: int, progress):
    """M independent L-BFGS runs advanced together (one batched objective call per step).

    Each model keeps its own curvature history, its own two-loop recursion and its own
    Armijo backtracking step, so the result is what M separate runs would give; only
    the objective evaluations are shared. A model stops when its largest gradient
    entry falls below ``tol`` (scikit-learn's lbfgs criterion).

    Returns ``(theta, loss, iterations)``.
    """
    M = theta.shape[0]
    f, g = objective(theta)
    _raise_if_diverged(f, where="at the start")
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
    _raise_if_diverged(f, where="after L-BFGS")
    return theta, f, it


def train_batched(
    X: np.ndarray,
    y: np.ndarray,
    keep: np.ndarray,
    *,
    kind: str = "logistic",
    n_classes: int = 2,
    hidden: int = 32,
    epochs: int = 20,
    batch_size: int = 256,
    learning_rate: float | None = None,
    l2: float | None = None,
    max_iter: int = 200,
    tol: float = 1e-4,
    seed: int = 0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
    progress: ProgressFn | None = None,
    models: tuple[int, int] | None = None,
) -> BatchedModels:
    """Train M classifiers at once; model m sees only the rows with ``keep[m]``.

    Parameters
    ----------
    X, y : np.ndarray
        Features ``(n, d)`` and class indices ``(n,)``.
    keep : np.ndarray
        ``(M, n)`` boolean membership matrix (:func:`balanced_keep_matrix`).
    kind : {"logistic", "mlp"}
        L2-penalised logistic regressions fitted by M L-BFGS runs in lockstep
        (:func:`_train_logistic`), or one-hidden-layer ReLU MLPs trained by Adam on
        minibatches (:func:`_train_mlp`).
    n_classes : int
        Number of classes; 2 gives a single-logit model.
    hidden, epochs, batch_size, learning_rate : int, int, int, float or None
        MLP size, schedule and Adam step (default 1e-3); logistic regression ignores
        them (L-BFGS chooses its own steps).
    l2 : float, optional
        Logistic: inverse of C (default 1). MLP: scikit-learn's ``alpha`` (default 1e-4).
    max_iter, tol : int, float
        Logistic: L-BFGS iterations, and the bound every gradient entry of every model's
        mean objective must fall below (scikit-learn's lbfgs uses 1e-4 on the same scale).
    seed : int
    device : torch.device or str, optional
        Defaults to ``audit_core.common.runtime.pick_device()``.
    dtype : torch.dtype
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
    if kind not in MODEL_TYPES:
        raise InputError(f"Unknown model type '{kind}'; choose one of {', '.join(MODEL_TYPES)}.")
    if device is None:
        device = pick_device()
    Xt = torch.as_tensor(X, dtype=dtype).to(device)
    yt = torch.as_tensor(y, dtype=torch.long).to(device)
    lo, hi = (0, keep.shape[0]) if models is None else (int(models[0]), int(models[1]))
    kt = torch.as_tensor(keep[lo:hi], dtype=dtype).to(device)
    k = 1 if n_classes == 2 else n_classes
    report = sub_progress(progress, 0.0, 1.0)  # clamps the fraction to [0, 1]
    if kind == "logistic":
        return _train_logistic(Xt, yt, kt, k=k, l2=l2, max_iter=max_iter, tol=tol, report=report)
    mlp = {"hidden": hidden, "epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate, "l2": l2}
    return _train_mlp(Xt, yt, kt, keep, rows=(lo, hi), k=k, seed=seed, report=report, **mlp)


def _logistic_objective(Xt: torch.Tensor, yt: torch.Tensor, kt: torch.Tensor, *, k: int, lam: float):
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
        ce = (_loss_terms(_forward("logistic", {"W": W, "b": b}, Xt), yt) * kt).sum(1)
        loss = (ce + 0.5 * lam * (W**2).sum((1, 2))) / n_m
        (grad,) = torch.autograd.grad(loss.sum(), theta)
        return loss.detach(), grad

    return objective


def _train_logistic(
    Xt: torch.Tensor,
    yt: torch.Tensor,
    kt: torch.Tensor,
    *,
    k: int,
    l2: float | None,
    max_iter: int,
    tol: float,
    report: ProgressFn,
) -> BatchedModels:
    """M L2-penalised logistic regressions (:func:`_logistic_objective`, ``lam = l2``, default 1).

    Fitted by M L-BFGS runs in lockstep (:func:`_lockstep_lbfgs`), every model starting from zero.
    """
    M = kt.shape[0]
    d = Xt.shape[1]
    n_w = d * k
    objective = _logistic_objective(Xt, yt, kt, k=k, lam=1.0 if l2 is None else l2)
    report(0.0, f"Training {M} logistic models")
    theta0 = torch.zeros(M, n_w + k, dtype=Xt.dtype, device=Xt.device)
    theta, final, n_it = _lockstep_lbfgs(
        objective,
        theta0,
        max_iter=max_iter,
        tol=tol,
        history=10,
        progress=lambda i: report(i / max_iter, f"L-BFGS iteration {i}"),
    )
    report(1.0, f"Trained {M} logistic models")
    params = {"W": theta[:, :n_w].reshape(M, d, k).contiguous(), "b": theta[:, n_w:].reshape(M, 1, k).contiguous()}
    return BatchedModels("logistic", params, n_it, final.double().cpu().numpy())


def _init_mlp(
    gen: torch.Generator, *, n_all: int, rows: slice, d: int, hidden: int, k: int, dtype: torch.dtype, device
) -> dict[str, torch.Tensor]:
    """Initial MLP weights, uniform in +-1/sqrt(fan_in), drawn for all ``n_all`` models of the full run, then ``rows`` kept."""

    def uniform(shape, fan_in):
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


def _train_mlp(
    Xt: torch.Tensor,
    yt: torch.Tensor,
    kt: torch.Tensor,
    keep: np.ndarray,
    *,
    rows: tuple[int, int],
    k: int,
    hidden: int,
    epochs: int,
    batch_size: int,
    learning_rate: float | None,
    l2: float | None,
    seed: int,
    report: ProgressFn,
) -> BatchedModels:
    """Models ``rows`` of ``keep`` as one-hidden-layer ReLU MLPs, trained by Adam on minibatches.

    Each model shuffles its own half every epoch (like scikit-learn's MLPClassifier, with
    its L2 penalty ``alpha = l2``, default 1e-4, and Adam step ``learning_rate``, default
    1e-3); the random draws are those of the full run of all the models of ``keep``,
    whichever rows are trained.
    """
    alpha = 1e-4 if l2 is None else l2
    lr = 1e-3 if learning_rate is None else learning_rate
    dtype, device = Xt.dtype, Xt.device
    lo, hi = rows
    M_all = keep.shape[0]
    M, n = kt.shape
    n_m = kt.sum(1)  # records per model
    gen = torch.Generator(device="cpu").manual_seed(seed)
    params = _init_mlp(gen, n_all=M_all, rows=slice(lo, hi), d=Xt.shape[1], hidden=hidden, k=k, dtype=dtype, device=device)
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


def _loss_terms_gathered(logits: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with per-model labels: logits ``(M, B, k)``, yb ``(M, B)``."""
    if logits.shape[-1] == 1:
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[..., 0], yb.to(logits.dtype), reduction="none")
    lse = torch.logsumexp(logits, dim=-1)
    return lse - logits.gather(-1, yb.unsqueeze(-1))[..., 0]


def _train_batch(X, y, keep, start: int, stop: int, options: dict) -> BatchedModels:
    """One cluster task: models ``start:stop`` of the full run, returned on the CPU."""
    trained = train_batched(X, y, keep, models=(start, stop), **options)
    return BatchedModels(trained.kind, {k: v.cpu() for k, v in trained.params.items()}, trained.n_iterations,
                         trained.final_loss)  # fmt: skip


def train_models(
    X: np.ndarray,
    y: np.ndarray,
    keep: np.ndarray,
    *,
    client=None,
    batches: int | None = None,
    device: torch.device | str | None = None,
    progress: ProgressFn | None = None,
    **options,
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
        return train_batched(X, y, keep, device=device, progress=progress, **options)
    from audit_core.common.cluster import n_workers, run_tasks

    M = int(np.asarray(keep).shape[0])
    count = max(1, min(M, int(batches or n_workers(client))))
    edges = [int(e) for e in np.linspace(0, M, count + 1).round()]
    options = dict(options, device=None if device is None else str(device))
    shared = client.scatter([X, y, keep], broadcast=True, hash=False)  # on every worker: a lost one loses nothing
    report = as_progress(progress)
    done = [0]

    def tick(i: int, _result) -> None:
        done[0] += 1
        report(done[0] / count, f"trained model batch {done[0]} of {count} on the cluster")

    labels = [f"models {a + 1}-{b}" for a, b in itertools.pairwise(edges)]
    tasks = [(*shared, a, b, options) for a, b in itertools.pairwise(edges)]
    parts = run_tasks(client, _train_batch, tasks, labels=labels, on_done=tick)
    target = pick_device(str(device)) if device is not None else pick_device()
    params = {k: torch.cat([p.params[k] for p in parts]).to(target) for k in parts[0].params}
    return BatchedModels(parts[0].kind, params, max(p.n_iterations for p in parts),
                         np.concatenate([p.final_loss for p in parts]))  # fmt: skip
