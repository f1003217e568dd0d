"""What every numba kernel of the synthetic package shares: the compile cache switch and the lock.

The kernels (the Gower scan, :mod:`audit_core.synthetic.nearest_scan`; the linkage agreement,
:mod:`audit_core.synthetic.linkage`; the singling-out predicates,
:mod:`audit_core.synthetic.disclosure.predicates`) are compiled once and cached on disk when
the package's folder (or ``NUMBA_CACHE_DIR``) is writable, and are entered by one thread at a time.
"""

from __future__ import annotations

import os
import threading

__all__ = ["NUMBA_CACHE", "NUMBA_LOCK"]


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
