"""The DP claim page's second mode: an uploaded model and its canary file -> audit_core.dp.uploaded -> the decision.

One call from the page, :func:`uploaded_mode`: the two uploads, the claim, one run of the
``dp-audit-model`` audit (``ui.common.run_audit``, the CLI's own call) and its result: the
decision, the bound against the claim and the ceiling, the canary scores, the downloads.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from audit_core.common.errors import InputError
from audit_core.contract import Inputs
from audit_core.dp.figures import uploaded_epsilon_figure, uploaded_guesses_table, uploaded_score_figure
from audit_core.dp.spec import DP_MODEL, DpModelSettings
from audit_core.dp.uploaded import INCLUDED_COLUMN, UploadedDpResult
from audit_core.dp.verdict import ASSUMPTION, NOT_A_PROOF, uploaded_verdict
from audit_core.model.loading import read_model_bytes
from ui import state
from ui.common import (
    load_table,
    metric_card,
    remember_result,
    report_downloads,
    reproduce,
    run_audit,
    seed_input,
    show_input_error,
)
from ui.decision import show_decision, threat_cards
from ui.widgets import knob_input

PAGE = "DP claim check (uploaded model)"
KEY = state.DpClaim.UPLOADED


def _uploads() -> tuple[dict[str, Any], dict[str, str]]:
    """The model's bytes and the canary table, each once uploaded and readable (a bad file is one sentence)."""
    left, right = st.columns(2)
    model = left.file_uploader("Model (.onnx, .skops)", type=["onnx", "skops", "pkl", "pickle", "joblib"],
                               key=KEY + ".model")  # fmt: skip
    canaries = right.file_uploader("Canary file (CSV or Parquet)", type=["csv", "parquet"], key=KEY + ".canaries")
    data: dict[str, Any] = {}
    paths: dict[str, str] = {}
    try:
        if model is not None:
            data["model"], paths["model"] = read_model_bytes(model.getvalue(), model.name), model.name
        if canaries is not None:
            data["canaries_file"] = load_table(canaries.getvalue(), canaries.name, upload=True)
            paths["canaries_file"] = canaries.name
    except InputError as exc:
        show_input_error(exc)
        return {}, {}
    if len(data) < 2:
        st.info("Upload the model and its canary file: one row per canary with its feature columns, its label as "
                f"trained, and a column ('{INCLUDED_COLUMN}': 1/0 or yes/no) saying whether it was in the training "
                "data.")  # fmt: skip
    return data, paths


def _form(columns: list[str]) -> tuple[DpModelSettings, int] | None:
    """The claim and the two columns; the settings and seed once submitted."""
    included = INCLUDED_COLUMN if INCLUDED_COLUMN in columns else columns[-1]
    labels = [c for c in columns if c != included] or columns
    with st.form(KEY + ".form"):
        left, mid, right = st.columns(3)
        target = knob_input(left, DpModelSettings, "target", options=labels, value=labels[-1])
        included = knob_input(left, DpModelSettings, "included_column", options=columns, value=included)
        epsilon = knob_input(mid, DpModelSettings, "epsilon", value=1.0, step=0.5)
        delta = knob_input(mid, DpModelSettings, "delta", step=1e-6, format="%.0e")
        trusted = knob_input(right, DpModelSettings, "trust_skops_types", value="",
                             label="Trusted skops types (comma-separated)")  # fmt: skip
        seed = seed_input(right, key=KEY + ".seed")
        if not st.form_submit_button("▶ Audit the claim on the uploaded model", type="primary"):
            return None
    types = tuple(t.strip() for t in trusted.split(",") if t.strip())
    return DpModelSettings(target=target, included_column=included, epsilon=float(epsilon), delta=float(delta),
                           trust_skops_types=types), int(seed)  # fmt: skip


def _show(saved: dict[str, Any]) -> None:
    outcome = saved["outcome"]
    result: UploadedDpResult = outcome.value
    b = result.bound
    st.divider()
    st.subheader(f"Result: {saved['source']}")
    show_decision(outcome.decision(), uploaded_verdict(result))
    threat_cards(DP_MODEL.name)
    for note in result.canaries.notes:
        st.warning(note)
    cols = st.columns(4)
    with cols[0]:
        metric_card("claimed epsilon", f"{result.epsilon:g}", help=f"delta {result.delta:g}")
    with cols[1]:
        metric_card("audited epsilon ≥", f"{b.epsilon:.2f}", help=f"95 % confidence; {b.correct} of {b.r} guesses right "
                    f"on {b.m:,} canaries. {NOT_A_PROOF} {ASSUMPTION}")  # fmt: skip
    with cols[2]:
        metric_card("ceiling", f"{result.ceiling:.2f}", help="The largest bound these canaries could give: every guess right.")
    with cols[3]:
        model = result.model
        metric_card("canaries included", f"{int(result.canaries.included.sum()):,} of {result.canaries.m:,}",
                    help=f"Model {model['file']}: {model['description']}; sha256 {model['sha256']}.")  # fmt: skip
    st.plotly_chart(uploaded_epsilon_figure(result), width="stretch")
    st.plotly_chart(uploaded_score_figure(result), width="stretch")
    with st.expander("Every number of guesses r (each tested at 5 % / grid size)"):
        st.dataframe(uploaded_guesses_table(result), hide_index=True, width="stretch")
    st.subheader("Downloads")
    reproduce(outcome, key=KEY + ".downloads")
    report_downloads(outcome.report(), records=result.canary_table(), key=KEY + ".downloads")
    remember_result(PAGE, f"{saved['source']}: claim epsilon {result.epsilon:g}, "
                    + ("disproved." if result.disproved else "not disproved."),
                    {"epsilon ≥": f"{b.epsilon:.2f}", "ceiling": f"{result.ceiling:.2f}"})  # fmt: skip


def uploaded_mode() -> None:
    """The whole second mode: uploads, claim, run, result (kept in the session while the user moves between pages)."""
    data, paths = _uploads()
    if len(data) == 2:
        chosen = _form([str(c) for c in data["canaries_file"].columns])
        if chosen is not None:
            settings, seed = chosen
            try:
                _, outcome = run_audit(DP_MODEL, Inputs(data, paths), settings, seed=seed, label="Scoring the canaries")
                st.session_state[state.DpClaim.UPLOADED_RESULT] = {"outcome": outcome, "source": paths["model"]}
            except InputError as exc:
                show_input_error(exc)
                st.session_state.pop(state.DpClaim.UPLOADED_RESULT, None)
    saved = st.session_state.get(state.DpClaim.UPLOADED_RESULT)
    if saved is not None:
        _show(saved)
