"""The synthetic-risk page's disclosure section: column roles -> audit_core.synthetic.disclosure -> table and figure.

One call from the page, :func:`disclosure_section`; it returns the finished
:class:`~audit_core.synthetic.disclosure.DisclosureAudit` (or None) so the page's report and
per-record CSV can include it. The attacks run from a form button, once per set of
roles (``ui.common.cached_run``): changing the bandwidth or the prior never reruns them.
"""

from __future__ import annotations

import streamlit as st

from audit_core.common.errors import InputError
from audit_core.common.hashing import fingerprint
from audit_core.common.limits import DISCLOSURE_ATTACKS, LINK_K
from audit_core.synthetic.audit import SyntheticAudit
from audit_core.synthetic.disclosure import DEFAULT_N_ATTACKS, DisclosureAudit, DisclosureRoles, audit_disclosure, default_roles
from audit_core.synthetic.figures import results_table, risk_figure
from ui import state
from ui.common import cached_run, show_input_error, stored_result


def _run(audit: SyntheticAudit, roles: DisclosureRoles, n_attacks: int, link_k: int, *, progress) -> DisclosureAudit:
    f = audit.frames
    return audit_disclosure(
        f["train"], f["holdout"], f["synthetic"], types=audit.types, roles=roles, n_attacks=n_attacks,
        link_k=link_k, seed=int(audit.settings.get("seed", 0)), progress=progress,
    )  # fmt: skip


def disclosure_section(audit: SyntheticAudit, audit_key: str) -> DisclosureAudit | None:
    """Column-role editor, run button, results table with risk, interval, baseline and reading.

    ``audit_key`` identifies the membership audit (tables, types, seed) the roles apply to.
    """
    columns = list(audit.frames["train"].columns)
    try:
        defaults = default_roles(columns)
    except InputError as exc:
        st.caption(str(exc))
        return None
    prefix = f"{state.Synthetic.DISCLOSURE}.{fingerprint(columns)[:12]}"
    n_rows = min(len(audit.frames["train"]), len(audit.frames["holdout"]))
    with st.expander("Singling out, linkability and attribute inference (Giomi et al., PoPETs 2023)", expanded=False):
        st.caption(
            "Each attack runs on the training records and, identically, on the holdout (control). "
            "**Risk** = (success on training − success on control) / (1 − success on control), with its 95 % interval; "
            "the **baseline** guesses at random: an attack no better than its baseline proves nothing."
        )
        with st.form(f"{prefix}.form"):
            known = st.multiselect("Quasi-identifiers the attacker knows", columns, default=list(defaults.known),
                                   key=f"{prefix}.known")  # fmt: skip
            c1, c2 = st.columns(2)
            link_a = c1.multiselect("Linkability: first half", columns, default=list(defaults.link_a), key=f"{prefix}.a")
            link_b = c2.multiselect("Linkability: second half", columns, default=list(defaults.link_b), key=f"{prefix}.b")
            secrets = st.multiselect("Secrets to infer", columns, default=list(defaults.secrets), key=f"{prefix}.secrets")
            c1, c2 = st.columns(2)
            n_attacks = c1.number_input(
                "Attacks per table", min_value=int(DISCLOSURE_ATTACKS.low), max_value=int(DISCLOSURE_ATTACKS.high),
                value=min(DEFAULT_N_ATTACKS, n_rows), step=100, key=f"{prefix}.n",
                help="Default 2,000; all records when the tables are smaller.",
            )  # fmt: skip
            link_k = c2.number_input("Linkability neighbours k", min_value=int(LINK_K.low), max_value=int(LINK_K.high),
                                     value=1, key=f"{prefix}.k")  # fmt: skip
            clicked = st.form_submit_button("▶ Run the disclosure attacks")
        roles = DisclosureRoles(tuple(known), tuple(link_a), tuple(link_b), tuple(secrets))
        key = fingerprint("disclosure", audit_key, roles.to_json(), int(n_attacks), int(link_k))
        result = stored_result(key)
        if clicked and result is None:
            try:
                result = cached_run("Singling out, linkability, inference", key, _run, audit, roles, int(n_attacks), int(link_k))
            except InputError as exc:
                show_input_error(exc)
                return None
        if result is None:
            st.caption("Set the roles and run the attacks (about 10 s for 2,000 attacks on 20,000 rows).")
            return None
        table = results_table(result)
        shown = table[["attack", "risk", "ci_low", "ci_high", "attack_rate", "control_rate", "baseline_rate",
                       "n_attacks", "reading"]]  # fmt: skip
        st.dataframe(shown, hide_index=True, width="stretch")
        st.plotly_chart(risk_figure(result), width="stretch")
        return result
