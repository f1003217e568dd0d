"""The home page's "Validation": the last self-check of this installation, and the quick one on a click."""

from __future__ import annotations

import streamlit as st

from audit_core.contract import Inputs, run
from audit_core.registry import TOOLS, last_selfcheck, selfcheck_version

__all__ = ["validation_expander"]


def validation_expander() -> None:
    """The self-check's last result (nothing runs on page load) and a button that runs the quick one."""
    with st.expander("Validation: the self-check"):
        st.markdown(
            f"Known-answer simulations behind the numbers these audits print (self-check version {selfcheck_version()}): "
            "TPR-interval coverage and width, LiRA's per-sample average at several M, the epsilon bound's validity, "
            "the copy test's false alarms. The full version runs from a terminal: `python -m audit_core selfcheck`."
        )
        if st.button("Run the quick self-check (about 10 s)", key="home.selfcheck"):
            with st.spinner("Simulating..."):
                selfcheck = TOOLS["selfcheck"]  # its run keeps the result where last_selfcheck reads it
                run(selfcheck, Inputs({}), selfcheck.settings(quick=True), seed=0)
        last = last_selfcheck()
        if last is None:
            st.info("No self-check has run on this installation yet.")
        else:
            kind = "quick" if last.get("quick") else "full"
            state_ = "passed" if last.get("passed") else "FAILED"
            line = (f"Last {kind} self-check, version {last.get('version')} (audit_core {last.get('audit_core')}), "
                    f"{last.get('finished', '')}: **{state_}** "
                    f"({last.get('n_passed')} of {last.get('n_checks')} checks).")  # fmt: skip
            (st.success if last.get("passed") else st.error)(line)
            rows = [{"check": c["name"], "claim": c["claim"], "measured": round(float(c["measured"]), 4),
                     "target": c["target"], "result": {True: "pass", False: "FAIL", None: "info"}[c["passed"]],
                     "setup": c["detail"]} for c in last["checks"]]  # fmt: skip
            st.dataframe(rows, hide_index=True, width="stretch")
