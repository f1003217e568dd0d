"""Score check: TPR at low FPR and an epsilon lower bound for membership scores from any tool."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from audit_core.contract import Inputs
from audit_core.scores.figures import epsilon_table, records_table, roc_figure, tpr_table
from audit_core.scores.spec import SCORES
from ui import state
from ui.cards import CHART, HELP, metric_card, show_table, tpr_card
from ui.decision import assumption_caption, glossary_expander, show_decision, threat_cards
from ui.downloads import outcome_downloads
from ui.run import Request, audit_outcome
from ui.session import remember_result
from ui.source import sample_or_upload
from ui.widgets import knob_input, seed_input

PAGE = "Score check"
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "scores.csv"
SAMPLE_LABEL = "Sample: two simulated attacks on 5,000 records (sample_data/scores.csv)"
UPLOAD = "Upload my scores"
FPRS = [0.0001, 0.001, 0.01, 0.05, 0.1]


st.title("🎯 Score check")
st.markdown(
    "Already have membership scores from another tool (ML Privacy Meter, your own attack)? Upload one row per "
    "record with **`score`** (higher = more member-like) and **`is_member`** (0 or 1), optionally **`attack`** "
    "(several attacks in one file, compared on one plot) and **`record_id`**. You get the TPR at low FPR with honest "
    "intervals and the **empirical epsilon lower bound** these scores prove."
)

table, name, path, autorun = sample_or_upload('Scores', sample=SAMPLE, sample_label=SAMPLE_LABEL, upload_label=UPLOAD,
                                        empty_help="Upload a CSV or Parquet file with the columns score and is_member "
                                        "(optional: attack, record_id).",
                                        autorun_key=state.ScoreCheck.AUTORUN, key=state.ScoreCheck.SOURCE,
                                        upload_key=state.ScoreCheck.UPLOAD)  # fmt: skip

submitted = False
if table is not None:
    with st.form("score_check.form"):
        left, mid, right = st.columns(3)
        fprs = knob_input(left, SCORES.settings, "fpr", options=FPRS, help=HELP["tpr_at_fpr"])
        delta = knob_input(mid, SCORES.settings, "delta", step=1e-6, format="%.0e")
        seed = seed_input(right)
        submitted = st.form_submit_button("▶ Check the scores", type="primary")
    st.caption(f"{name}: {len(table):,} rows × {table.shape[1]} columns")

request = None
if submitted or (autorun and table is not None):
    settings = SCORES.settings() if autorun else SCORES.settings(fpr=tuple(sorted(float(f) for f in fprs)),
                                                                delta=float(delta))  # fmt: skip
    request = Request(Inputs({"scores": table}, {"scores": path}), settings, 0 if autorun else int(seed))
outcome = audit_outcome(SCORES, state.ScoreCheck.RESULT, request, label="Evaluating the scores")
if outcome is None:
    st.stop()

check = outcome.value
st.divider()
st.subheader(f"Result: {outcome.inputs.name('scores')}")
show_decision(outcome.decision(), outcome.verdict())
threat_cards(SCORES.name)
assumption_caption()

for attack in check.attacks.values():
    with st.container(border=True):
        st.markdown(f"**{attack.name}** · {attack.curve.n_pos:,} members, {attack.curve.n_neg:,} non-members")
        cols = st.columns(2 + len(attack.tpr_at_fpr))
        with cols[0]:
            metric_card("AUC", f"{attack.auc:.3f}", help=HELP["auc"])
        with cols[1]:
            e = attack.epsilon
            metric_card(
                "epsilon ≥",
                f"{e.epsilon:.2f}",
                help=e.sentence(),
            )
            st.caption(f"delta {e.delta:g} · {e.n_pos:,} + {e.n_neg:,} held-out records")
        for col, t in zip(cols[2:], attack.tpr_at_fpr.values(), strict=True):
            with col:
                tpr_card(f"TPR at {100 * t.target_fpr:g} % FPR", t)

unsupported = sorted({t.target_fpr for a in check.attacks.values() for t in a.tpr_at_fpr.values() if not t.supported})
if unsupported:
    st.warning(
        "The TPR at " + " and ".join(f"{100 * f:g} % FPR" for f in unsupported) + " is not measurable with this many "
        "non-members (it needs at least 10/alpha); those numbers are marked ⚠."
    )

st.plotly_chart(roc_figure(check), width="stretch", config=CHART)
st.markdown("**Epsilon lower bound per attack**")
show_table(epsilon_table(check))
with st.expander("TPR at each target FPR (table)"):
    show_table(tpr_table(check))

st.subheader("Per-record table")
st.caption(
    "rank 1 = the most member-like record of its attack; FPR if flagged = the share of non-members scoring at least as "
    "high (the FPR at which this record would be flagged); flagged at x % FPR = flagged at the threshold of that FPR."
)
show_table(records_table(check))

st.subheader("Downloads")
outcome_downloads(outcome, key="score_check.downloads")

best = max(check.attacks.values(), key=lambda a: a.epsilon.epsilon)
remember_result(
    PAGE,
    f"{outcome.inputs.name('scores')}: {len(check.attacks)} attack(s); strongest epsilon lower bound from '{best.name}'.",
    {"epsilon ≥": f"{best.epsilon.epsilon:.2f}", "AUC": f"{best.auc:.3f}"},
    decision=outcome.decision(),
)
glossary_expander(outcome.verdict(), "membership inference member non-member AUC TPR at FPR log-ROC 95 % interval "
                  "epsilon lower bound differential privacy delta ceiling")
