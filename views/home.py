"""Home: what each audit answers, what it needs, a one-click sample run, and this session's results."""

import streamlit as st

from audit_core.registry import REGISTRY
from ui import state
from ui.decision import LEVEL_ICONS
from ui.session import request_autorun
from ui.validation import validation_expander

st.title("🛡️ Membership-risk audit")
st.markdown(
    "Before you release a **synthetic table** or a **trained model**, check whether the people in its training "
    "data are exposed. Each audit below answers one question, shows *per-record* risk and TPR at low "
    "false-positive rates (where averages hide the exposed few), and exports a signed-off report."
)


AUDITS = [  # one card per registered audit (audit_core.registry), in the registry's order
    {"page": a.page, "title": f"{a.icon} {a.title}", "question": a.question, "needs": a.needs, "method": a.method,
     "autorun": state.AUTORUN[a.name]}
    for a in REGISTRY.values() if a.page
]  # fmt: skip

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
        if "title" in result:  # the level in the audit's words, and the whole headline
            st.markdown(f"{LEVEL_ICONS[result['level']]} **{result['title']}.** {result['decision']}")
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
        "- Colours are the same everywhere: members vermillion, non-members blue, fabricated purple, synthetic green. "
        "Attacks on a log-ROC differ by line style as well as colour (solid, dashed, dotted, ...), and the legend "
        "names each.\n"
        "- Every decision is one of four levels: **low** (nothing measured above chance; not a proof), **inconclusive** "
        "(too few records to measure what the decision rests on: add what it says), **elevated** (review before "
        "release), **high** (do not release as it is). Each page's \"Why\" shows the cut-offs."
    )

validation_expander()
