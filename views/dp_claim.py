"""DP claim check: train with DP-SGD at a claimed (epsilon, delta) with canaries, and test the claim in one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from audit_core.common.errors import InputError
from audit_core.contract import Inputs
from audit_core.dp.figures import (
    NOT_A_PROOF,
    epsilon_figure,
    guesses_table,
    score_figure,
    summary_table,
    uploaded_epsilon_figure,
    uploaded_guesses_table,
    uploaded_score_figure,
)
from audit_core.dp.spec import DP_AUDIT, DP_MODEL, INCLUDED_COLUMN, REPORTING_RULE, DpModelSettings, DpSettings
from ui import state
from ui.cards import CHART, metric_card, show_table
from ui.decision import assumption_caption, glossary_expander, show_decision, threat_cards
from ui.downloads import outcome_downloads
from ui.run import Request, audit_outcome, load_input, show_input_error
from ui.session import remember_result
from ui.source import DATABASE, database_table, sample_or_upload
from ui.widgets import knob_input, seed_input

PAGE = "DP claim check"
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "adult.csv"
SAMPLE_TARGET = "income_per_year"
SAMPLE_LABEL = "Sample: Adult (32,561 rows, target income_per_year)"
UPLOAD = "Upload a table"
UPLOADED_PAGE = "DP claim check (uploaded model)"
KEY = state.DpClaim.UPLOADED
TRAIN_HERE = "Train here with DP-SGD"
_DP_TERMS = ("differential privacy DP-SGD canary delta accountant ceiling epsilon lower bound one-run test guesses "
             "member non-member")
UPLOADED_MODE = "Audit an uploaded model with its canary file"
# The page's default run: a sample small enough for 50 epochs, canaries a model without DP memorises, and the
# white-box audit of the same run, so the three bars differ (docs/methods.md §9.1).
DEMO = DpSettings(target=SAMPLE_TARGET, epsilon=1.0, model="mlp", canary_kind="outlier", epochs=50, rows=5000,
                  white_box=True)  # fmt: skip
DEMO_ROWS = 5000



def _uploads() -> tuple[dict[str, Any], dict[str, str]]:
    """The model's bytes and the canary table, each once uploaded and readable (a bad file is one sentence)."""
    left, right = st.columns(2)
    model = left.file_uploader("Model (.onnx, .skops)", type=["onnx", "skops", "pkl", "pickle", "joblib"],
                               key=KEY + ".model")  # fmt: skip
    from_database = right.radio("Canaries from", ["A file", DATABASE], key=KEY + ".canaries_source",
                                horizontal=True) == DATABASE  # fmt: skip
    canaries = None if from_database else right.file_uploader("Canary file (CSV or Parquet)", type=None,
                                                              key=KEY + ".canaries")  # fmt: skip
    data: dict[str, Any] = {}
    paths: dict[str, str] = {}
    try:
        if model is not None:
            data["model"], paths["model"] = load_input(DP_MODEL, "model", model.getvalue(), model.name, upload=True), model.name
        if from_database:  # the canary table at a database URL, as the CLI's --canaries-file URL
            table, _, url = database_table(KEY + ".canaries_database", label="Canary table: database URL", where=right,
                                           empty_help=None)  # fmt: skip
            if table is not None and url is not None:
                data["canaries_file"], paths["canaries_file"] = table, url
        if canaries is not None:
            data["canaries_file"] = load_input(DP_MODEL, "canaries_file", canaries.getvalue(), canaries.name, upload=True)
            paths["canaries_file"] = canaries.name
    except InputError as exc:
        show_input_error(exc)
        return {}, {}
    if len(data) < 2:
        st.info("Upload the model and its canary file (or give its database URL): one row per canary with its "
                f"feature columns, its label as trained, and a column ('{INCLUDED_COLUMN}': 1/0 or yes/no) saying "
                "whether it was in the training data.")  # fmt: skip
    return data, paths


def _uploaded_form(columns: list[str]) -> Request | None:
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
        stated = st.checkbox("The claim states its DP-SGD run (noise multiplier, sampling rate, steps)", value=False,
                             key=KEY + ".stated", help="Then the f-DP bound against that run's curve is reported "
                             "(tighter for DP-SGD); otherwise Steinke et al.'s bound for a bare claim.")  # fmt: skip
        a, b, c = st.columns(3)
        noise = knob_input(a, DpModelSettings, "noise_multiplier", value=1.0, step=0.1)
        rate = knob_input(b, DpModelSettings, "sample_rate", value=0.01, step=0.001, format="%.4f")
        steps = knob_input(c, DpModelSettings, "steps", value=1000, step=100)
        if not st.form_submit_button("▶ Audit the claim on the uploaded model", type="primary"):
            return None
    types = tuple(t.strip() for t in trusted.split(",") if t.strip())
    settings = DpModelSettings(target=target, included_column=included, epsilon=float(epsilon), delta=float(delta),
                               trust_skops_types=types, noise_multiplier=float(noise) if stated else None,
                               sample_rate=float(rate) if stated else None,
                               steps=int(steps) if stated else None)  # fmt: skip
    return Request(Inputs({}, {}), settings, int(seed))


def _show_uploaded(outcome) -> None:
    result = outcome.value
    b = result.bound
    st.divider()
    st.subheader(f"Result: {outcome.inputs.name('model')}")
    show_decision(outcome.decision(), outcome.verdict())
    threat_cards(DP_MODEL.name)
    for note in result.canaries.notes:
        st.warning(note)
    cols = st.columns(4)
    with cols[0]:
        metric_card("claimed epsilon", f"{result.epsilon:g}", help=f"delta {result.delta:g}")
    with cols[1]:
        metric_card("audited epsilon ≥", f"{b.epsilon:.2f}", help=f"95 % confidence, {b.method}; {b.correct} of {b.r} "
                    f"guesses right on {b.m:,} canaries (Steinke et al. {b.steinke.epsilon:.2f}, f-DP "
                    f"{b.fdp.epsilon:.2f}). {NOT_A_PROOF}")  # fmt: skip
    with cols[2]:
        metric_card("ceiling", f"{result.ceiling:.2f}", help="The largest bound these canaries could give: every guess right.")
    with cols[3]:
        model = result.model
        metric_card("canaries included", f"{int(result.canaries.included.sum()):,} of {result.canaries.m:,}",
                    help=f"Model {model['file']}: {model['description']}; sha256 {model['sha256']}.")  # fmt: skip
    st.plotly_chart(uploaded_epsilon_figure(result), width="stretch", config=CHART)
    st.plotly_chart(uploaded_score_figure(result), width="stretch", config=CHART)
    with st.expander("Every number of guesses r (each tested at 5 % / grid size)"):
        show_table(uploaded_guesses_table(result))
    st.caption(f"Reported: {b.method}, by a rule fixed before the run ({REPORTING_RULE}).")
    assumption_caption()
    st.subheader("Downloads")
    outcome_downloads(outcome, key=KEY + ".downloads")
    remember_result(UPLOADED_PAGE, f"{outcome.inputs.name('model')}: claim epsilon {result.epsilon:g}",
                    {"epsilon ≥": f"{b.epsilon:.2f}", "ceiling": f"{result.ceiling:.2f}"},
                    decision=outcome.decision())  # fmt: skip
    glossary_expander(outcome.verdict(), _DP_TERMS)


def _uploaded_mode() -> None:
    """The second mode: uploads, claim, run, result (kept in the session while the user moves between pages)."""
    data, paths = _uploads()
    request = None
    if len(data) == 2:
        asked = _uploaded_form([str(c) for c in data["canaries_file"].columns])
        request = None if asked is None else Request(Inputs(data, paths), asked.settings, asked.seed)
    outcome = audit_outcome(DP_MODEL, state.DpClaim.UPLOADED_RESULT, request, label="Scoring the canaries")
    if outcome is not None:
        _show_uploaded(outcome)


st.title("🛡️ DP claim check")
st.markdown(
    'Told *"the model was trained with differential privacy, epsilon = 8"*? This page trains the model here with '
    "**DP-SGD** (Opacus) at the claimed (epsilon, delta), with **m canaries** each trained on with probability 1/2, "
    "and tests the claim **in one run**: from how many canaries a membership guess gets right, it computes the "
    "largest epsilon the run **disproves** at 95 % confidence, against the DP-SGD run's own trade-off curve "
    "(f-DP, Mahloujifar et al. 2024; Steinke, Nasr and Jagielski's bound beside it). The same model without DP is the "
    "contrast, and **white-box gradient canaries** in the same run show how much a stronger auditor proves. A team "
    "that trained its own model with canaries can **upload the model and its canary file** instead (second mode)."
)

if st.session_state.get(state.DpClaim.AUTORUN):  # the home page's "Run on the sample" trains here
    st.session_state[state.DpClaim.MODE] = TRAIN_HERE
if st.radio("Mode", [TRAIN_HERE, UPLOADED_MODE], key=state.DpClaim.MODE, horizontal=True) == UPLOADED_MODE:
    _uploaded_mode()
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
        model = knob_input(left, DpSettings, "model", value=DEMO.model)
        epsilon = knob_input(mid, DpSettings, "epsilon", value=1.0, step=0.5)
        delta = knob_input(mid, DpSettings, "delta", step=1e-6, format="%.0e")
        canaries = knob_input(right, DpSettings, "canaries", step=100)
        kind = knob_input(right, DpSettings, "canary_kind", value=DEMO.canary_kind)
        epochs = knob_input(left, DpSettings, "epochs", value=DEMO.epochs)
        rows = knob_input(mid, DpSettings, "rows", value=min(DEMO_ROWS, len(table)), max_value=len(table), step=1000)
        white_box = knob_input(left, DpSettings, "white_box", value=DEMO.white_box)
        statistic = knob_input(mid, DpSettings, "white_box_statistic")
        seed = seed_input(right)
        submitted = st.form_submit_button("▶ Train with DP-SGD and audit the claim", type="primary")
    st.caption(f"{name}: {len(table):,} rows × {table.shape[1]} columns")

request = None
if autorun and table is not None:
    request = Request(Inputs({"data": table}, {"data": path}), DEMO, 0)
elif submitted:
    settings = DpSettings(target=target, epsilon=float(epsilon), delta=float(delta), canaries=int(canaries),
                          canary_kind=kind, model=model, epochs=int(epochs), white_box=bool(white_box),
                          white_box_statistic=statistic, rows=None if int(rows) >= len(table) else int(rows))  # fmt: skip
    request = Request(Inputs({"data": table}, {"data": path}), settings, int(seed))
outcome = audit_outcome(DP_AUDIT, state.DpClaim.RESULT, request, label="Training with and without DP-SGD")
if outcome is None:
    st.stop()

result = outcome.value
st.divider()
st.subheader(f"Result: {outcome.inputs.name('data')}")
show_decision(outcome.decision(), outcome.verdict())
threat_cards(outcome.audit.name)

b = result.dp.bound
cols = st.columns(6)
with cols[0]:
    metric_card("claimed epsilon", f"{result.epsilon:g}", help=f"delta {result.delta:g}")
with cols[1]:
    metric_card("accountant epsilon", f"{result.accountant_epsilon:.2f}",
                help=f"Opacus' RDP accountant after {result.steps} steps at noise multiplier "
                f"{result.noise_multiplier:.3f} and sampling rate {result.sample_rate:.4f}.")  # fmt: skip
with cols[2]:
    metric_card("audited epsilon ≥", f"{b.epsilon:.2f}",
                help=f"95 % confidence, {b.method}; {b.correct} of {b.r} guesses right on {b.m:,} canaries "
                f"(Steinke et al. {b.steinke.epsilon:.2f}). " + NOT_A_PROOF)  # fmt: skip
with cols[3]:
    metric_card("ceiling", f"{result.ceiling:.2f}", help="The largest bound these canaries could give: every guess right "
                f"({b.method}; Steinke et al.'s {b.steinke_ceiling:.2f}).")  # fmt: skip
with cols[4]:
    metric_card("no DP: epsilon ≥", f"{result.non_dp.bound.epsilon:.2f}",
                help="The same model, the same canaries, trained without clipping or noise.")  # fmt: skip
with cols[5]:
    if result.white_box is not None:
        w = result.white_box.bound
        metric_card("white-box: epsilon ≥", f"{w.epsilon:.2f}",
                    help=f"{w.m:,} Dirac gradient canaries in the same DP-SGD run ({result.white_box.statistic} statistic): "
                    f"{w.epsilon / result.accountant_epsilon:.0%} of the accountant's epsilon.")  # fmt: skip
    else:
        metric_card("white-box", "off", help="Tick 'White-box gradient canaries' to audit the run from its weights.")

st.plotly_chart(epsilon_figure(result), width="stretch", config=CHART)
st.caption(f"Reported: {b.method}, by a rule fixed before the run ({REPORTING_RULE}).")
panels = ["dp", "non_dp", *(["white_box"] if result.white_box is not None else [])]
for column, which in zip(st.columns(len(panels)), panels, strict=True):
    column.plotly_chart(score_figure(result, which=which), width="stretch", config=CHART)
st.markdown("**Every audited model**")
show_table(summary_table(result))
with st.expander("Every number of guesses r (each tested at 5 % / grid size)"):
    show_table(guesses_table(result))

st.subheader("Downloads")
outcome_downloads(outcome, key="dp_claim.downloads")

remember_result(
    PAGE,
    f"{outcome.inputs.name('data')}: claim epsilon {result.epsilon:g}",
    {"epsilon ≥": f"{b.epsilon:.2f}", "without DP: epsilon ≥": f"{result.non_dp.bound.epsilon:.2f}",
     "ceiling": f"{result.ceiling:.2f}"},
    decision=outcome.decision(),
)
glossary_expander(outcome.verdict(), _DP_TERMS)
