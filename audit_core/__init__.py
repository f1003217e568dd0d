"""audit_core: membership-risk audits, UI-free (the dashboard and ``python -m audit_core`` share it).

One package per audit (see docs/methods.md and ARCHITECTURE.md):

- :mod:`audit_core.synthetic` -- membership risk of a synthetic table (KDE over
  nearest-neighbour Gower distances), disclosure attacks, generators and their comparison;
- :mod:`audit_core.lira` -- naive vs calibrated LiRA and the finite-population correction;
- :mod:`audit_core.fabrication` -- fabricated members, their detection and the robust MIA;
- :mod:`audit_core.scores` -- membership scores from any tool, with the epsilon lower bound.

Shared pieces live in :mod:`audit_core.common`; the registry of audits (the contract every
audit implements) in :mod:`audit_core.contract`. The command line is ``python -m audit_core``
(or ``audit-core``); the Python API (:mod:`audit_core.api`, docs/api.md) is importable from here:

    from audit_core import audit_table, audit_model, check_dp_claim, check_scores, compare_generators

Importing the package stays cheap: the API is loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from audit_core.api import (
        AuditResult,
        audit_model,
        audit_table,
        check_dp_claim,
        check_scores,
        compare_generators,
        run_audit,
        settings_for,
    )
    from audit_core.common.errors import InputError

__version__ = "0.1.0"

__all__ = [
    "AuditResult",
    "InputError",
    "__version__",
    "audit_model",
    "audit_table",
    "check_dp_claim",
    "check_scores",
    "compare_generators",
    "run_audit",
    "settings_for",
]


def __getattr__(name: str) -> Any:
    """The API's names, imported when first asked for (``import audit_core`` loads no pandas)."""
    if name == "InputError":
        from audit_core.common.errors import InputError

        return InputError
    if name in __all__ and name != "__version__":
        import audit_core.api as api

        return getattr(api, name)
    raise AttributeError(f"module 'audit_core' has no attribute {name!r}")
