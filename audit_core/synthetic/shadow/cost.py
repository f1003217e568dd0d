"""How long a shadow attack will take, and its refusal up front where a CPU would run past the limit.

A shadow attack fits the generator K + 1 times (K shadow sets, and the release when none is
given). The GAN and the autoencoder train for epochs over every row; on a CPU that is minutes per
fit, and K of them are hours. As the fabrication audit does
(:func:`audit_core.fabrication.progress.check_cpu_time`), the time is estimated before anything
runs and work that would run past :data:`~audit_core.common.limits.CPU_AUDIT_SECONDS` on a CPU is
refused with what to change; on a GPU, or spread over a Dask cluster's workers, the limit applies
to the time per worker.
"""

from __future__ import annotations

from audit_core.common.errors import InputError
from audit_core.common.limits import CPU_AUDIT_SECONDS

__all__ = ["check_shadow_time", "seconds_per_fit"]

_SECONDS: dict[str, tuple[float, float, float]] = {
    "bootstrap": (0.02, 2e-7, 0.0),
    "population": (0.02, 2e-7, 0.0),
    "gaussian_copula": (0.4, 2.5e-5, 0.0),
    "bayesian_network": (0.4, 3.0e-5, 0.0),
    "ctgan": (3.0, 1.5e-4, 4.0e-4),
    "copulagan": (3.0, 1.5e-4, 4.0e-4),
    "tvae": (2.0, 1.0e-4, 1.2e-4),
}
"""Seconds of one fit and sample on one core of the 2-core VM: ``a + b rows x columns + c rows x epochs``
(GaussianCopula 1.1 s and the Bayesian network 1.2 s at 2,000 Adult rows; CTGAN about 28 s at 30 epochs)."""


def seconds_per_fit(name: str, params: dict, *, rows: int, columns: int) -> float:
    """The estimated seconds of one fit and sample of generator ``name`` on a CPU core."""
    a, b, c = _SECONDS.get(name, _SECONDS["ctgan"])
    return a + b * rows * columns + c * rows * float(params.get("epochs", 0))


def check_shadow_time(
    name: str, params: dict, *, rows: int, columns: int, fits: int, device_type: str, workers: int
) -> float:
    """The estimated seconds of ``fits`` fits spread over ``workers``; refused when a CPU would run past the limit."""
    seconds = fits * seconds_per_fit(name, params, rows=rows, columns=columns) / max(1, workers)
    if device_type == "cpu" and seconds > CPU_AUDIT_SECONDS:
        from audit_core.fabrication.progress import time_left_text

        epochs = " or fewer epochs" if "epochs" in params else ""
        raise InputError(
            f"The shadow attack would fit {name} {fits} times, {time_left_text(seconds)} on this machine's CPU; an "
            f"audit here is kept under {CPU_AUDIT_SECONDS // 60} min: use fewer shadow models (--shadow-models){epochs}, "
            "fewer rows, a GPU, or a Dask cluster (--scheduler / --workers)."
        )
    return seconds
