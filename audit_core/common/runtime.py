"""Where code runs: device choice, BLAS threads, seeds and progress callbacks."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator

import numpy as np

__all__ = [
    "ProgressFn",
    "as_progress",
    "blas_threads",
    "null_progress",
    "pick_device",
    "seed_everything",
    "sub_progress",
]

ProgressFn = Callable[[float, str], None]
"""Progress callback: ``progress(fraction, message)`` with fraction in [0, 1]."""


def null_progress(fraction: float, message: str) -> None:
    """A progress callback that does nothing."""


def as_progress(progress: ProgressFn | None) -> ProgressFn:
    """Return ``progress`` or :func:`null_progress` when it is None."""
    return progress if progress is not None else null_progress


def sub_progress(progress: ProgressFn | None, start: float, stop: float) -> ProgressFn:
    """Map a step's own [0, 1] progress onto ``[start, stop]`` of the whole job."""
    outer = as_progress(progress)

    def inner(fraction: float, message: str) -> None:
        outer(start + (stop - start) * min(max(fraction, 0.0), 1.0), message)

    return inner


def pick_device(prefer: str | None = None):
    """Return the best torch device: ``cuda``, then ``mps``, then ``cpu``.

    Parameters
    ----------
    prefer : str, optional
        Force a device name (``"cpu"``, ``"cuda"``...); None picks automatically.
    """
    import torch

    if prefer:
        return torch.device(prefer)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


@contextlib.contextmanager
def blas_threads(n: int = 1) -> Iterator[None]:
    """Limit BLAS/OpenMP threads inside the block (oversubscription is costly)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n):
        yield


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python, numpy and torch; return a fresh numpy Generator for ``seed``."""
    random.seed(seed)
    np.random.seed(seed % (2**32))  # noqa: NPY002 - third-party code reads the global state
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover - torch is a hard requirement
        pass
    return np.random.default_rng(seed)
