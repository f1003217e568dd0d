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
    "Membership scores": [st.Page("pages/score_check.py", title="Score check", icon="🎯")],
}

pg = st.navigation(pages)
with st.sidebar:
    st.caption(
        "Membership-risk audit · scores are oriented higher = more member-like · "
        "members are vermillion, non-members blue, fabricated purple, synthetic green."
    )


@st.cache_resource(ttl=60, show_spinner="Connecting to the Dask cluster")
def _dask_cluster(address: str) -> dict:
    from audit_core.cluster import dashboard_cluster

    return dashboard_cluster(address)


def _cluster_sidebar() -> None:
    """The Dask cluster named by AUDIT_DASK_SCHEDULER: address, workers, a link to Dask's dashboard (or why not)."""
    import os

    from audit_core.cluster import ENV_VAR, cluster_summary

    address = os.environ.get(ENV_VAR, "").strip()
    if not address:
        return
    state = _dask_cluster(address)
    if "error" in state:
        st.warning(state["error"])
        return
    try:
        info = cluster_summary(state["client"])
    except Exception:  # the scheduler went away since: say so in one sentence
        st.warning(f"The Dask scheduler at {address} stopped answering; restart it or unset {ENV_VAR}.")
        return
    st.caption(f"Dask cluster `{info['address']}`: {info['workers']} workers, {info['threads']} threads · "
               f"[Dask dashboard]({info['dashboard']})")  # fmt: skip


with st.sidebar:
    _cluster_sidebar()
pg.run()
