"""Entry point of the dashboard: a router over pages/ (run: streamlit run app.py)."""

import streamlit as st

st.set_page_config(page_title="Membership-risk audit", page_icon="🛡️", layout="wide")

pages = {
    "Overview": [st.Page("pages/home.py", title="Home", icon="🏠", default=True)],
    "Synthetic data": [
        st.Page("pages/synthetic_risk.py", title="Synthetic-data risk", icon="🧬"),
        st.Page("pages/generators.py", title="Generate & compare", icon="⚙️"),
    ],
    "Trained models": [
        st.Page("pages/lira_calibration.py", title="Calibrated LiRA", icon="📏"),
        st.Page("pages/fabrication.py", title="Fabricated members", icon="🎭"),
    ],
}

pg = st.navigation(pages)
with st.sidebar:
    st.caption(
        "Membership-risk audit · scores are oriented higher = more member-like · "
        "members are vermillion, non-members blue, fabricated purple, synthetic green."
    )
pg.run()
