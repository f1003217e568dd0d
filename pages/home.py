"""Home: what each audit answers, what it needs, a one-click sample run, and this session's results."""

import streamlit as st

from ui import state
from ui.common import request_autorun, require_router

require_router()

st.title("🛡️ Membership-risk audit")
st.markdown(
    "Before you release a **synthetic table** or a **trained model**, check whether the people in its training "
    "data are exposed. Each audit below answers one question, shows *per-record* risk and TPR at low "
    "false-positive rates (where averages hide the exposed few), and exports a signed-off report."
)

AUDITS = [
    {
        "page": "pages/synthetic_risk.py",
        "title": "🧬 Synthetic-data risk",
        "question": "Can an attacker tell, from the synthetic table, who was in the training data?",
        "needs": "train (members), holdout (non-members) and synthetic tables; optional auxiliary data. CSV or Parquet.",
        "method": "KDE membership probabilities over nearest-neighbour Gower distances; true-distribution and realistic "
        "attacks vs the distance-threshold baseline.",
        "autorun": state.Synthetic.AUTORUN,
    },
    {
        "page": "pages/generators.py",
        "title": "⚙️ Generate & compare",
        "question": "Which generator leaks least for the utility it keeps?",
        "needs": "one real table (it is split into train / holdout / auxiliary for you).",
        "method": "SDV GaussianCopula, CTGAN, TVAE, CopulaGAN, a Bayesian network, plus leaky and perfect reference "
        "points, each audited with the same attacks.",
        "autorun": state.Generators.AUTORUN,
    },
    {
        "page": "pages/lira_calibration.py",
        "title": "📏 Calibrated LiRA",
        "question": "Does the reported 'TPR at 1 % FPR' of a model mean anything, and how many models would it take to trust it?",
        "needs": "a table with a target column (the models are trained here, as one batch).",
        "method": "Naive vs per-sample calibrated LiRA (normal and Student-t thresholds), the per-sample average, and the "
        "finite-population correction.",
        "autorun": state.Lira.AUTORUN,
    },
    {
        "page": "pages/fabrication.py",
        "title": "🎭 Fabricated members",
        "question": "Can membership evidence be forged, and can the forgery be detected?",
        "needs": "images, labels and a member mask (.npz), and model weights (safetensors); or the bundled digits.",
        "method": "Member fabrication attack (MFA) vs I-PGD / I-CW, detection by gradient-norm collapse (MFD) and the "
        "adversarially robust MIA, with epsilon and lambda to tune.",
        "autorun": state.Fabrication.AUTORUN,
    },
    {
        "page": "pages/score_check.py",
        "title": "🎯 Score check",
        "question": "What do membership scores from another tool show, and what privacy loss do they prove?",
        "needs": "one table with score (higher = member) and is_member (0/1); optional attack and record_id. CSV or Parquet.",
        "method": "Log-ROC, TPR at low FPR with intervals, and an empirical epsilon lower bound (threshold chosen on a "
        "held-out half, Clopper-Pearson bounds on the other).",
        "autorun": state.ScoreCheck.AUTORUN,
    },
]

for i, audit in enumerate(AUDITS):
    if i % 2 == 0:
        cols = st.columns(2)  # one row per pair, so the page reads (and tabs) in list order
    with cols[i % 2].container(border=True):
        st.subheader(audit["title"])
        st.markdown(f"**Question.** {audit['question']}")
        st.markdown(f"**Needs.** {audit['needs']}")
        st.caption(audit["method"])
        left, right = st.columns(2)
        if left.button("▶ Run on the sample", key=f"home.run.{i}", type="primary", use_container_width=True):
            request_autorun(audit["autorun"])
            st.switch_page(audit["page"])
        right.page_link(audit["page"], label="Open the page", icon="➡️")

st.divider()
st.subheader("This session's results")
results = st.session_state.get(state.Home.LAST_RESULTS, {})
if not results:
    st.info("No audit has run in this session yet. Start one above; results stay here while you move between pages.")
for page, result in results.items():
    with st.container(border=True):
        st.markdown(f"**{page}** · {result['time']}  \n{result['headline']}")
        if result["metrics"]:
            metric_cols = st.columns(len(result["metrics"]))
            for col, (label, value) in zip(metric_cols, result["metrics"].items(), strict=True):
                col.metric(label, value)

with st.expander("How to read the numbers"):
    st.markdown(
        "- **Scores** are oriented *higher = more member-like*; **P(member)** is a probability.\n"
        "- **AUC** 0.5 is chance. A harmless-looking AUC or accuracy can hide a few records that are exposed almost "
        "surely; **TPR at 0.1 % / 1 % FPR** and the **log-ROC** show them.\n"
        "- Each TPR comes with a 95 % interval and the number of non-members behind it; with fewer than 10/alpha "
        "non-members the false-positive rate itself cannot be measured (marked ⚠).\n"
        "- Colours are the same everywhere: members vermillion, non-members blue, fabricated purple, synthetic green."
    )
