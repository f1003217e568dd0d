"""Every audit by name: the dashboard's router and home cards and the CLI's subcommands are built from here.

Adding an audit is one ``spec.py`` beside its code (an :class:`audit_core.contract.Audit`)
and one line below; see ARCHITECTURE.md.
"""

from __future__ import annotations

from typing import Any

from audit_core.common.report import add_software_status
from audit_core.contract import Audit
from audit_core.dp.spec import DP_AUDIT, DP_MODEL
from audit_core.fabrication.spec import FABRICATION
from audit_core.lira.spec import FPC_SIM, LIRA
from audit_core.model.spec import MODEL
from audit_core.scores.spec import SCORES
from audit_core.selfcheck.spec import SELFCHECK
from audit_core.synthetic.shadow.spec import SHADOW
from audit_core.synthetic.spec import COMPARE, GENERATE, TABULAR

__all__ = ["REGISTRY", "TOOLS", "last_selfcheck", "selfcheck_status", "selfcheck_version"]

REGISTRY: dict[str, Audit[Any, Any]] = {a.name: a for a in (TABULAR, COMPARE, LIRA, MODEL, DP_AUDIT, FABRICATION, SCORES)}
"""Audits in the order the home page shows them."""


TOOLS: dict[str, Audit[Any, Any]] = {a.name: a for a in (GENERATE, SHADOW, FPC_SIM, SELFCHECK, DP_MODEL)}
"""Subcommands built on the same contract with no page or home card of their own: fit one generator, the
shadow-generator attack (its page is a section of the comparison page), simulate the FPC, self-check, and the DP claim
check of an uploaded model (the DP claim page's second mode)."""


def selfcheck_status() -> str:
    """Which self-check this installation passed: the line every report's Software section shows."""
    from audit_core.selfcheck.checks import status_line

    return status_line()


def selfcheck_version() -> str:
    """The version of the self-check's known-answer simulations."""
    from audit_core.selfcheck.checks import VERSION

    return VERSION


def last_selfcheck() -> dict[str, Any] | None:
    """The last self-check's result on this installation (the home page's "Validation"), None before the first."""
    from audit_core.selfcheck.checks import last_result

    return last_result()


add_software_status("self-check", selfcheck_status)  # shared code (common/report.py) asks the registry, not the audit
