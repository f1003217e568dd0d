"""Every audit by name: the dashboard's router and home cards and the CLI's subcommands are built from here.

Adding an audit is one ``spec.py`` beside its code (an :class:`audit_core.contract.Audit`)
and one line below; see ARCHITECTURE.md.
"""

from __future__ import annotations

from audit_core.contract import Audit
from audit_core.dp.spec import DP_AUDIT, DP_MODEL
from audit_core.fabrication.spec import FABRICATION
from audit_core.lira.spec import FPC_SIM, LIRA
from audit_core.model.spec import MODEL
from audit_core.scores.spec import SCORES
from audit_core.selfcheck.spec import SELFCHECK
from audit_core.synthetic.shadow.spec import SHADOW
from audit_core.synthetic.spec import COMPARE, GENERATE, TABULAR

__all__ = ["REGISTRY", "TOOLS"]

REGISTRY: dict[str, Audit] = {a.name: a for a in (TABULAR, COMPARE, LIRA, MODEL, DP_AUDIT, FABRICATION, SCORES)}
"""Audits in the order the home page shows them."""


TOOLS: dict[str, Audit] = {a.name: a for a in (GENERATE, SHADOW, FPC_SIM, SELFCHECK, DP_MODEL)}
"""Subcommands built on the same contract with no page or home card of their own: fit one generator, the
shadow-generator attack (its page is a section of the comparison page), simulate the FPC, self-check, and the DP claim
check of an uploaded model (the DP claim page's second mode)."""
