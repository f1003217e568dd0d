"""DP claim check: train with DP-SGD at a claimed (epsilon, delta) with canaries, and test the claim in one run."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from audit_core.common.errors import InputError
from audit_core.contract import Inputs
from audit_core.dp.audit import DpAuditResult
from audit_core.dp.figures import epsilon_figure, guesses_table, score_figure, summary_table
from audit_core.dp.spec import DP_AUDIT, DpSettings
from audit_core.dp.verdict import NOT_A_PROOF, verdict
from ui import state
from ui.common import (
    metric_card,
    remember_result,
    report_downloads,
    reproduce,
    run_audit,
    seed_input,
    show_input_error,
)
from ui.decision import show_decision, threat_cards
from ui.dp_uploaded import uploaded_mode
from ui.source import sample_or_upload
from ui.widgets import knob_input

PAGE = "DP claim check"
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "adult.csv"
SAMPLE_TARGET = "income_per_year"
SAMPLE_LABEL = "Sample: Adult (32,561 rows, target income_per_year)"
UPLOAD = "Upload a table"
TRAIN_HERE = "Train here with DP-SGD"
UPLOADED_MODE = "Audit an uploaded model with its canary file"


st.title("🛡️ DP claim check")
st.markdown(
    'Told *"the model was trained with differential privacy, epsilon = 8"*? This page trains the model here with '
    "**DP-SGD** (Opacus) at the claimed (epsilon, delta), with **m canaries** each trained on with probability 1/2, "
    "and tests the claim **in one run** (Steinke, Nasr and Jagielski 2023): from how many canaries a membership guess "
    "gets right, it computes the largest epsilon the run **disproves** at 95 % confidence. The same model without DP "
    "is the contrast. A team that trained its own model with canaries can **upload the model and its canary file** "
    "instead (second mode)."
)

if st.session_state.get(state.DpClaim.AUTORUN):  # the home page's "Run on the sample" trains here
    st.session_state[state.DpClaim.MODE] = TRAIN_HERE
if st.radio("Mode", [TRAIN_HERE, UPLOADED_MODE], key=state.DpClaim.MODE, horizontal=True) == UPLOADED_MODE:
    uploaded_mode()
    st.stop()

table, name, path, autorun = sample_or_upload('Data', sample=SAMPLE, sample_label=SAMPLE_LABEL, upload_label=UPLOAD,
                                        empty_help='Upload a CSV or Parquet table with a class column to predict.',
                                        autorun_key=state.DpClaim.AUTORUN, key=state.DpClaim.SOURCE,
                                        upload_key=state.DpClaim.UPLOAD)  # fmt: skip

submitted = False
if table is not None:
    with st.form("dp_claim.form"):
        left, mid, right = st.columns(3)
        columns = list(table.columns)
        target = knob_input(left, DpSettings, "target", options=columns,
                            value=SAMPLE_TARGET if SAMPLE_TARGET in columns else columns[-1])  # fmt: skip
        model = knob_input(left, DpSettings, "model")
        epsilon = knob_input(mid, DpSettings, "epsilon", value=1.0, step=0.5)
        delta = knob_input(mid, DpSettings, "delta", step=1e-6, format="%.0e")
        canaries = knob_input(right, DpSettings, "canaries", step=100)
        kind = knob_input(right, DpSettings, "canary_kind")
        epochs = knob_input(left, DpSettings, "epochs")
        seed = seed_input(right)
        submitted = st.form_submit_button("▶ Train with DP-SGD and audit the claim", type="primary")
    st.caption(f"{name}: {len(table):,} rows × {table.shape[1]} columns")

if autorun and table is not None:
    target, model, epsilon, delta, canaries, kind, epochs, seed = SAMPLE_TARGET, "logistic", 1.0, 1e-5, 1000, \
        "population", 10, 0  # fmt: skip
    submitted = True

if submitted:
    try:
        settings = DpSettings(target=target, epsilon=float(epsilon), delta=float(delta), canaries=int(canaries),
                              canary_kind=kind, model=model, epochs=int(epochs))  # fmt: skip
        _, outcome = run_audit(DP_AUDIT, Inputs({"data": table}, {"data": path}), settings, seed=int(seed),
                               label="Training with and without DP-SGD")  # fmt: skip
        st.session_state[state.DpClaim.RESULT] = {"outcome": outcome, "source": name}
    except InputError as exc:
        show_input_error(exc)
        st.session_state.pop(state.DpClaim.RESULT, None)

saved = st.session_state.get(state.DpClaim.RESULT)
if saved is None:
    st.stop()

outcome = saved["outcome"]
result: DpAuditResult = outcome.value
st.divider()
st.subheader(f"Result: {saved['source']}")
show_decision(outcome.decision(), verdict(result))
threat_cards(outcome.audit.name)

b = result.dp.bound
cols = st.columns(5)
with cols[0]:
    metric_card("claimed epsilon", f"{result.epsilon:g}", help=f"delta {result.delta:g}")
with cols[1]:
    metric_card("accountant epsilon", f"{result.accountant_epsilon:.2f}",
                help=f"Opacus' RDP accountant after {result.steps} steps at noise multiplier "
                f"{result.noise_multiplier:.3f}.")  # fmt: skip
with cols[2]:
    metric_card("audited epsilon ≥", f"{b.epsilon:.2f}",
                help=f"95 % confidence; {b.correct} of {b.r} guesses right on {b.m:,} canaries. " + NOT_A_PROOF)  # fmt: skip
with cols[3]:
    metric_card("ceiling", f"{result.ceiling:.2f}", help="The largest bound these canaries could give: every guess right.")
with cols[4]:
    metric_card("without DP: epsilon ≥", f"{result.non_dp.bound.epsilon:.2f}",
                help="The same model, the same canaries, trained without clipping or noise.")  # fmt: skip

st.plotly_chart(epsilon_figure(result), width="stretch")
left, right = st.columns(2)
left.plotly_chart(score_figure(result, which="dp"), width="stretch")
right.plotly_chart(score_figure(result, which="non_dp"), width="stretch")
st.markdown("**Both models**")
st.dataframe(summary_table(result), hide_index=True, width="stretch")
with st.expander("Every number of guesses r (each tested at 5 % / grid size)"):
    st.dataframe(guesses_table(result), hide_index=True, width="stretch")

st.subheader("Downloads")
reproduce(outcome, key="dp_claim.downloads")
report_downloads(outcome.report(), records=result.canary_table(), key="dp_claim.downloads")

remember_result(
    PAGE,
    f"{saved['source']}: claim epsilon {result.epsilon:g}, " + ("disproved." if result.disproved else "not disproved."),
    {"epsilon ≥": f"{b.epsilon:.2f}", "ceiling": f"{result.ceiling:.2f}"},
)
