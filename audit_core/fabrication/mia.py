"""Membership-inference scores on images (LOSS / confidence, offline LiRA, RMIA) and the AR-MIA weight
(docs/methods.md §3), all oriented higher = member and non-negative."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats
from torch import nn

from audit_core.fabrication.gradients import true_class_stats
from audit_core.fabrication.inference import predict_logits
from audit_core.fabrication.references import ReferenceModels

__all__ = ["ModelView", "ar_weight", "mia_scores", "model_view"]

_RMIA_OFFLINE_A = 0.3
"""RMIA's offline scaling ``a`` of ``Pr(x)`` from OUT reference models."""


@dataclass(frozen=True)
class ModelView:
    """What the MIAs need about a set of images, computed once."""

    conf: np.ndarray  # target p_y
    phi: np.ndarray  # target logit-scaled confidence
    ref_conf: np.ndarray | None  # (K, n)
    ref_phi: np.ndarray | None


def model_view(model: nn.Module, refs: ReferenceModels | None, images: np.ndarray, labels: np.ndarray) -> ModelView:
    """The target's and every reference model's true-class confidences on ``images`` (labels ``labels``)."""
    y = torch.as_tensor(labels)
    conf, phi = true_class_stats(predict_logits(model, images).cpu(), y)
    if refs is None or not refs.models:
        return ModelView(conf, phi, None, None)
    rc, rp = zip(*(true_class_stats(predict_logits(m, images).cpu(), y) for m in refs.models), strict=True)
    return ModelView(conf, phi, np.stack(rc), np.stack(rp))


def mia_scores(view: ModelView, *, mia: str, population: ModelView | None = None) -> np.ndarray:
    """Non-negative membership scores, higher = member (docs/methods.md §3).

    ``loss``: the confidence ``p_y = exp(-CE)`` (same ranking as the LOSS attack).
    ``lira``: offline LiRA, ``Phi((phi - mu_out) / sigma_out)`` with phi the
    logit-scaled confidence, per-image mean over the OUT reference models and a global
    standard deviation (few reference models).
    ``rmia``: the fraction of population images z with
    ``[p(x)/Pr(x)] / [p(z)/Pr(z)] > 1``, ``Pr = ((1 + a) mean_ref + (1 - a)) / 2``, a = 0.3.
    LiRA and RMIA need reference models (``view.ref_conf``), RMIA a ``population`` view too.
    """
    return _SCORES[mia](view, population)


def _loss(view: ModelView, population: ModelView | None) -> np.ndarray:
    return view.conf


def _lira(view: ModelView, population: ModelView | None) -> np.ndarray:
    assert view.ref_phi is not None, "LiRA needs reference models"
    mu = view.ref_phi.mean(axis=0)
    sd = max(float(view.ref_phi.std(axis=0, ddof=1).mean()) if view.ref_phi.shape[0] > 1 else 1.0, 1e-6)
    return stats.norm.cdf((view.phi - mu) / sd)


def _rmia(view: ModelView, population: ModelView | None) -> np.ndarray:
    assert population is not None, "RMIA needs a population sample"
    rz = np.sort(_rmia_ratio(population))
    return np.searchsorted(rz, _rmia_ratio(view), side="left") / rz.size


def _rmia_ratio(v: ModelView) -> np.ndarray:
    """``p(x) / Pr(x)``, ``Pr(x)`` from the OUT reference models scaled by RMIA's offline ``a``."""
    assert v.ref_conf is not None, "RMIA needs reference models"
    pr = ((1 + _RMIA_OFFLINE_A) * v.ref_conf.mean(axis=0) + (1 - _RMIA_OFFLINE_A)) / 2
    return v.conf / pr


_SCORES = {"loss": _loss, "lira": _lira, "rmia": _rmia}


def ar_weight(norms: np.ndarray, *, lam: float, g_ref: float) -> np.ndarray:
    """AR-MIA weight ``tanh(lambda * ||grad|| / g_ref)`` (normalised lambda, docs/methods.md §3).

    >>> float(np.round(ar_weight(np.array([2.0]), lam=1.0, g_ref=2.0)[0], 3))
    0.762
    """
    return np.tanh(lam * np.asarray(norms) / g_ref)
