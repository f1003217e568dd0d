"""How many models alpha needs, and the sentences when an evaluation rests on fewer (docs/methods.md §2)."""

from __future__ import annotations

import math

__all__ = ["few_out_scores_warning", "lira_warnings", "required_models", "small_m_warning"]


def required_models(fpr: float) -> int:
    """Models needed so that every record has ``>= 10/alpha`` scores (docs/methods.md §2), even.

    >>> required_models(0.01), required_models(0.05)
    (1000, 200)
    """
    m = math.ceil(10.0 / fpr - 1e-9)
    return m + (m % 2)


def lira_warnings(n_models: int, fpr: float) -> tuple[str, ...]:
    """Plain sentences for settings that work but cannot be read record by record (too few models for alpha).

    The settings themselves are checked once, by their knobs (audit_core.lira.spec).
    """
    need = required_models(fpr)
    if n_models < need:
        return (
            f"With M = {n_models} models each record has only {n_models // 2} out-scores, so a "
            f"per-record FPR of {fpr:g} cannot be checked record by record: that needs "
            f"M >= 10/alpha = {need} models. The per-record numbers below rest on the Gaussian "
            "fit; read them as estimates.",
        )
    return ()


def few_out_scores_warning(n_out_min: int, fpr: float) -> tuple[str, ...]:
    """The warning when the empirical per-record threshold rests on too few out-scores (else none)."""
    if n_out_min > 1.0 / fpr:
        return ()
    return (
        f"The empirical per-record threshold uses only {n_out_min} out-scores, so its '{fpr:g}' "
        f"quantile really sits near 1/{n_out_min}: the empirical per-sample TPR is inflated; "
        "use the Gaussian one.",
    )


def small_m_warning(n_models: int) -> tuple[str, ...]:
    """The warning that the per-sample average stays biased low below 16 models (else none)."""
    if n_models >= 16:
        return ()
    return (
        f"With M = {n_models} the per-sample average stays a lower estimate: its extrapolation needs the split test "
        "on fewer models, which cannot give either half of the out-scores more than 2 scores (simulated with signal, "
        "truth 0.228: about 55 % low at M = 8, 6 % at M = 16, within 1 % at M >= 32).",
    )
