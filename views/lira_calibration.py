"""Calibrated vs naive LiRA: is 'TPR at 1 % FPR' a number one can trust? (docs/methods.md §2)"""

from pathlib import Path

import streamlit as st

from audit_core.common.errors import InputError
from audit_core.contract import Inputs
from audit_core.lira.figures import (
    LABELS,
    fpc_figure,
    models_sweep_figure,
    per_sample_fpr_figure,
    roc_figure,
    rule_caption,
    rules_table,
    vulnerable_table,
)
from audit_core.lira.spec import LIRA, LiraSettings
from ui import state
from ui.cards import CHART, HELP, metric_card, show_table
from ui.decision import glossary_expander, show_decision, threat_cards
from ui.downloads import outcome_downloads
from ui.run import Request, audit_outcome, load_input, rescored, show_input_error
from ui.session import remember_result, take_autorun
from ui.source import DATABASE, database_table
from ui.widgets import knob_input, seed_input

PAGE = "Calibrated LiRA"
SAMPLES = {
    "German Credit (1,000 rows)": (Path("sample_data/german_credit.csv"), "credit"),
    "Adult (32,561 rows)": (Path("sample_data/adult.csv"), "income_per_year"),
}
ALPHAS = [0.001, 0.005, 0.01, 0.02, 0.05, 0.1]


st.title("📏 Calibrated LiRA: can the low-FPR number be trusted?")
st.markdown(
    'You are told *"the model\'s TPR at 1 % FPR is 8 %"*. This page trains **M models at once** on random halves of '
    "your table, runs the likelihood-ratio attack (LiRA) on every record, and shows how that number depends on "
    "**how the scores were aggregated**, whether the 1 % **holds for each record**, and **how many models** it takes."
)

# ----------------------------------------------------------------------------- inputs
autorun = take_autorun(state.Lira.AUTORUN)
if autorun:
    st.session_state[state.Lira.SOURCE] = next(iter(SAMPLES))
source = st.radio("Data", [*SAMPLES, "Upload a table", DATABASE], key=state.Lira.SOURCE, horizontal=True)
data = path = default_target = None
try:
    if source == DATABASE:
        data, _, path = database_table(state.Lira.DATABASE)
    elif source == "Upload a table":
        upload = st.file_uploader("CSV or Parquet", type=None, key="lira.upload")
        if upload is not None:
            data, path = load_input(LIRA, "data", upload.getvalue(), upload.name, upload=True), upload.name
    else:
        sample, default_target = SAMPLES[source]
        data, path = load_input(LIRA, "data", sample, sample.name, upload=False), str(sample)
except InputError as exc:
    show_input_error(exc)

request = None
if data is not None:
    with st.form("lira.form"):
        left, right = st.columns(2)
        columns = list(data.columns)
        target = knob_input(left, LiraSettings, "target", options=columns,
                            value=default_target if default_target in columns else columns[-1])  # fmt: skip
        model = knob_input(left, LiraSettings, "model")
        n_models = knob_input(right, LiraSettings, "models", step=2)
        seed = seed_input(right)
        submitted = st.form_submit_button("▶ Train the models and evaluate", type="primary")
    st.caption(f"{Inputs({'data': data}, {'data': path}).name('data')}: {len(data):,} rows × {data.shape[1]} columns")
    if autorun and default_target is not None:
        request = Request(Inputs({"data": data}, {"data": path}), LiraSettings(target=default_target), 0)
    elif submitted:
        settings = LiraSettings(target=target, model=model, models=int(n_models))
        request = Request(Inputs({"data": data}, {"data": path}), settings, int(seed))

alpha = knob_input(st, LiraSettings, "fpr", options=ALPHAS, slider=True, key=state.Lira.FPR)
outcome = audit_outcome(LIRA, state.Lira.RESULT, request, label="Training the models as one batch", fpr=float(alpha))
if outcome is None:
    st.info("Pick a table and press **Train** (German Credit with 64 logistic models takes a few seconds; moving alpha "
            "re-evaluates the trained models, it never retrains them).")
    st.stop()
result, settings, fpr = outcome.value, outcome.settings, float(alpha)
pool = result.pool
ev, sw = result.evaluation, result.sweep
name = outcome.inputs.name("data")

# ----------------------------------------------------------------------------- results
st.divider()
st.subheader(f"Result: {pool.n_models} {pool.model} models on {name}")
show_decision(outcome.decision(), outcome.verdict())  # first, before every card and warning
threat_cards(LIRA.name)
st.caption(
    f"{name}: {pool.n_samples} records, {pool.n_features} features, target '{pool.target}'. "
    f"{pool.n_models} {pool.model} models trained in {pool.seconds:.1f} s; accuracy {pool.train_accuracy.mean():.3f} on "
    f"their own half, {pool.test_accuracy.mean():.3f} on the other half. Change alpha above to re-score without retraining."
)
for message in ev.warnings:
    st.warning(message)

st.markdown(f"**TPR at FPR {fpr:g}**, by how the scores were aggregated")
cols = st.columns(4)
short = {"naive": "naive", "post_processed": "PP, N(0,1)", "post_processed_t": "PP, Student-t", "per_sample_mean": "per-sample"}
for col, (key, label) in zip(cols, short.items(), strict=True):
    with col:
        metric_card(
            label,
            f"{100 * ev.tpr[key]:.1f} %",
            help=f"{LABELS[key]}. " + HELP["tpr_at_fpr"],
        )
        st.caption(rule_caption(ev, key))
        if key == "per_sample_mean":
            st.caption(
                f"Each record tested against its own out-scores, never fitted on the score counted; "
                f"FPR it holds: {ev.pooled_fpr[key]:.3f}."
            )


tab_roc, tab_fpr, tab_m, tab_fpc, tab_rec = st.tabs(
    ["Log-ROC", "Per-record FPR", "How many models?", "Finite-population correction", "Most exposed records"]
)
with tab_roc:
    st.plotly_chart(roc_figure(ev), width="stretch", config=CHART)
    st.caption(
        "Naive pools raw scores of all records and models under one threshold; post-processed (PP) first standardises "
        "each score by its own record's out-distribution (leave-one-model-out), so one threshold means the same FPR for "
        "every record; the per-sample average thresholds each record separately (direction and Student-t threshold from "
        "disjoint halves of its out-scores, so its FPR is alpha for every record; with few models it reads low)."
    )
    show_table(rules_table(ev))
with tab_fpr:
    st.plotly_chart(per_sample_fpr_figure(ev), width="stretch", config=CHART)
    s_naive, s_pp = ev.fpr_summary("naive"), ev.fpr_summary("post_processed_t")
    st.markdown(
        f"Under the naive threshold the per-record FPR averages {s_naive['mean']:.3f} but spreads {s_naive['std']:.3f}; "
        f"10 % of records are flagged more than {s_naive['p90']:.3f} of the time when they were *not* in the model. "
        f"Calibrated (Student-t): spread {s_pp['std']:.3f}. Part of the PP spread is counting noise of "
        f"{pool.n_models // 2} out-scores per record."
    )
with tab_m:
    st.plotly_chart(models_sweep_figure(sw), width="stretch", config=CHART)
    st.caption(
        f"What-if: the same rules recomputed on random subsets of the {pool.n_models} trained models (whole complementary "
        f"pairs, so every record stays in half of them). The dashed line is M = 10/alpha = {ev.required_models}."
    )
with tab_fpc:
    st.plotly_chart(fpc_figure(result.fpc_sims), width="stretch", config=CHART)
    st.markdown(
        "Efficient LiRA reuses one finite pool of shadow models trained on subsets of the same N+ records. Their spread "
        "understates the spread over fresh draws from the population by FPC = 1 - N/N+ on the variance (0.5 for "
        "half-splits), so a target's score looks more extreme than it is: **vulnerability is overstated**. Dividing the "
        f"shadow variance by FPC corrects it. On this table, the FPC-corrected rule gives TPR "
        f"{100 * ev.tpr['post_processed_fpc']:.1f} % at pooled FPR {ev.pooled_fpr['post_processed_fpc']:.3f}: within the "
        "pool, where targets come from the same records as the shadows, it is conservative."
    )
with tab_rec:
    show_table(vulnerable_table(ev, outcome.inputs["data"]))
    st.caption("Records with the highest TPR at their own alpha-threshold; separation = (mu_in - mu_out) / sd_out.")

st.subheader("Risk by group")
_AUTO = "the column with the largest spread of risk"
features = [c for c in outcome.inputs["data"].columns if c != outcome.settings.target]
group_col = st.selectbox("Group the records by", [_AUTO, *features], key=state.Lira.GROUPS,
                         help="Uncommon records are hit hardest: each group gets the audited model's (model 0) TPR at "
                         "1 % FPR, offline LiRA, threshold from the group's own non-members.")  # fmt: skip
outcome = rescored(outcome, groups=None if group_col == _AUTO else group_col)  # instant: nothing is retrained
groups = outcome.value.groups
st.caption(f"Grouped by **{groups.column}**, worst group first. ⚠: fewer than 1,000 "
           "non-members in the group, so its interval is wide; groups with fewer than 100 cannot be measured at 1 % FPR "
           "at all.")  # fmt: skip
show_table(groups.table())

outcome_downloads(outcome, key="lira.downloads")
remember_result(
    PAGE,
    f"{pool.n_models} {pool.model} models on {name}: TPR at FPR {fpr:g}",
    {
        "naive": f"{100 * ev.tpr['naive']:.1f} %",
        "PP (t)": f"{100 * ev.tpr['post_processed_t']:.1f} %",
        "per-sample": f"{100 * ev.tpr['per_sample_mean']:.1f} %",
    },
    decision=outcome.decision(),
)
glossary_expander(outcome.verdict(), "LiRA per-sample FPR PP / post-processed Student-t threshold alpha "
                  "finite-population correction reference models TPR at FPR log-ROC 95 % interval AUC")
