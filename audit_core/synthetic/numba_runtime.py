"""What every numba kernel of the synthetic package shares: the compile cache switch and the lock.

The kernels (the Gower scan, :mod:`audit_core.synthetic.nearest_scan`; the rarity-weighted agreement,
:mod:`audit_core.synthetic.agreement`; the singling-out predicates,
:mod:`audit_core.synthetic.disclosure.predicates`) are compiled once and cached on disk when
the package's folder (or ``NUMBA_CACHE_DIR``) is writable, and are entered by one thread at a time.
"""

from __future__ import annotations

import os
import threading

__all__ = ["NUMBA_CACHE", "NUMBA_LOCK", "match_worker_threads"]


def _numba_cache_ok() -> bool:
    """numba caches compiled kernels beside this file, or in NUMBA_CACHE_DIR; skip caching where neither is writable.

    Only asks the file system (``os.access``): nothing is written at import.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return True
    here = os.path.dirname(os.path.abspath(__file__))
    cache = os.path.join(here, "__pycache__")
    return os.access(cache if os.path.isdir(cache) else here, os.W_OK)


NUMBA_CACHE: bool = _numba_cache_ok()
"""The ``cache=`` of every ``numba.njit`` in the package: True where compiled kernels can be written to disk."""

NUMBA_LOCK = threading.Lock()
"""Held while a parallel kernel runs: numba's default threading layer must not be entered from two threads at once."""


def match_worker_threads() -> None:
    """On a Dask worker, one numba thread per worker thread (several workers share a machine's cores); elsewhere nothing."""
    import numba

    try:
        from distributed import get_worker

        threads = int(get_worker().state.nthreads)
    except (ValueError, AttributeError):  # not on a worker
        return
    # numba.config sets NUMBA_NUM_THREADS from the environment at import: mypy does not see it
    most = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    numba.set_num_threads(max(1, min(threads, most)))
