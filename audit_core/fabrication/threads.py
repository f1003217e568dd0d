"""How many CPU threads torch uses while an image audit runs (the fabrication, model and DP audits)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["CPU_THREADS", "cpu_threads"]

CPU_THREADS = 1
"""torch intra-op threads while the fabrication audit runs on a CPU. Its tensors are small (a
batch of 8x8 or 28x28 images through a small CNN), so a second thread gains little on an idle
machine and, when the cores are shared, torch's thread pool stalls on every small operation:
on the busy 2-core VM one attack step ran 8x faster on one thread than on two
(benchmarks/bench_fabrication_page.py). It also makes the sums, and so the JSON, independent
of the machine's core count."""


@contextlib.contextmanager
def cpu_threads(n: int | None = None) -> Iterator[None]:
    """Run torch on ``n`` (default :data:`CPU_THREADS`) intra-op threads inside the block (also usable as a
    decorator), then restore."""
    n = CPU_THREADS if n is None else n
    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
