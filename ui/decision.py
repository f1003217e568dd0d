"""The release decision at the top of a page, in words a stakeholder can act on, and the glossary.

One box per page, coloured by its level (red: do not release, amber: review, green: no
measurable risk), the finding that drives it, what to do next, and the full reading and the
glossary (``audit_core.common.glossary``) one click away.
"""

from __future__ import annotations

import streamlit as st

from audit_core.common.decision import Decision
from audit_core.common.glossary import terms_in

__all__ = ["LEVEL_ICONS", "assumption_caption", "glossary_expander", "show_decision", "threat_cards"]

_BOX = {"high": st.error, "elevated": st.warning, "inconclusive": st.info, "low": st.success}
LEVEL_ICONS = {"high": "⛔", "elevated": "⚠️", "inconclusive": "❔", "low": "✅"}
"""One icon per level, beside the colour (the home page's list of results uses them too)."""


def show_decision(decision: Decision | None, details: str = "") -> None:
    """The decision box: its question and answer, the headline, the next step; the findings, the cut-offs behind the
    levels and the full reading in an expander.

    Coloured by level (red: high, amber: elevated, blue: inconclusive, green: low) and worded by the
    decision's kind ("Release decision: HIGH", "DP claim: DISPROVED", ...). Every page calls it first
    in its result, before any card or warning.
    """
    if decision is None:  # an audit without a release decision: its reading only
        st.info(details)
        return
    lines = [f"**{decision.title}.** {decision.headline}"]
    if decision.next_steps:
        lines.append(f"**{'What to add' if decision.level == 'inconclusive' else 'Next step'}:** {decision.next_steps[0]}")
    _BOX[decision.level]("\n\n".join(lines), icon=LEVEL_ICONS[decision.level])
    with st.expander("Why, and what else to do"):
        if decision.reasons:
            st.markdown("**Findings** (most severe first)")
            st.markdown("\n".join(f"- {r}" for r in decision.reasons))
        if len(decision.next_steps) > 1:
            st.markdown("**Next steps**")
            st.markdown("\n".join(f"{i}. {s}" for i, s in enumerate(decision.next_steps, 1)))
        if decision.rules:
            st.markdown("**How the level is decided** (the cut-offs)")
            st.markdown("\n".join(f"- {r}" for r in decision.rules))
        if details:
            st.markdown("**The full reading**")
            st.markdown(details)
        st.caption("Passing an audit is evidence at this sample size, not a proof of anonymity.")


def glossary_expander(*texts: str) -> None:
    """The glossary entries for the terms the page uses (every term when no text is given)."""
    entries = terms_in(texts) if texts else None
    from audit_core.common.glossary import TERMS

    with st.expander("📖 Glossary: what the terms on this page mean"):
        for term, line in (entries or TERMS).items():
            st.markdown(f"**{term}**: {line}")


def threat_cards(audit_name: str) -> None:
    """The audit's threat cards (``audit_core.common.threats``): one bordered card per test."""
    from audit_core.common.threats import cards_for

    cards = cards_for(audit_name)
    if not cards:
        return
    with st.expander("🛡️ What each test assumes, what it measures, and which way is good"):
        for row in range(0, len(cards), 3):
            for col, card in zip(st.columns(3), cards[row : row + 3], strict=False):
                with col.container(border=True):
                    st.markdown(f"**{card['test']}**")
                    st.markdown(f"*Attacker knows:* {card['the attacker knows']}  \n*Measures:* "
                                f"{card['the number measures']}  \n*Good is:* {card['good is']}  \n*If bad:* "
                                f"{card['if it is bad']}")  # fmt: skip


def assumption_caption() -> None:
    """What every epsilon lower bound assumes (audit_core.common.privacy_bound), under the numbers that rest on it."""
    from audit_core.common.privacy_bound import ASSUMPTION

    st.caption("Assumption: " + ASSUMPTION)
