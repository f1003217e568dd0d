"""What a session remembers across pages: the home page's list of results and its "Run on the sample" requests."""

from __future__ import annotations

import datetime as dt

import streamlit as st

from audit_core.common.decision import Decision
from ui import state

__all__ = ["remember_result", "request_autorun", "take_autorun"]


def remember_result(page: str, headline: str, metrics: dict[str, str], *, decision: Decision | None = None) -> None:
    """Record a page's latest result for the home page's 'last results' list.

    With its ``decision`` the home page shows the level in the audit's words and the whole headline
    (never cut at a full stop); ``headline`` is then the context line above it (what was audited).
    """
    results = st.session_state.setdefault(state.Home.LAST_RESULTS, {})
    results[page] = {"headline": headline, "metrics": metrics, "time": dt.datetime.now().strftime("%H:%M:%S")}
    if decision is not None:
        results[page] |= {"level": decision.level, "title": decision.title, "decision": decision.headline}


def request_autorun(key: str) -> None:
    """Ask a page to run its sample audit once when it opens (home page buttons)."""
    st.session_state[key] = True


def take_autorun(key: str) -> bool:
    """True once after :func:`request_autorun`: the page should run its sample audit now."""
    return bool(st.session_state.pop(key, False))
