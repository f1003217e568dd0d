"""Entry point of the dashboard: a router over views/ (run: streamlit run app.py)."""

import streamlit as st

st.set_page_config(page_title="Membership-risk audit", page_icon="🛡️", layout="wide")

# No bare strings at the top level of app.py or a view: Streamlit's "magic" would print them on the page.


def _router() -> dict[str, list]:
    """Home, then one page per registered audit (audit_core.registry), grouped by section."""
    from audit_core.registry import REGISTRY

    pages: dict[str, list] = {"Overview": [st.Page("views/home.py", title="Home", icon="🏠", default=True)]}
    for audit in REGISTRY.values():
        if audit.page:
            pages.setdefault(audit.section, []).append(st.Page(audit.page, title=audit.title, icon=audit.icon))
    return pages


pages = _router()
pg = st.navigation(pages)
with st.sidebar:
    st.caption(
        "Membership-risk audit · scores are oriented higher = more member-like · "
        "members are vermillion, non-members blue, fabricated purple, synthetic green."
    )


@st.cache_resource(ttl=60, show_spinner="Connecting to the Dask cluster")
def _dask_cluster(address: str) -> dict:
    from audit_core.common.cluster import dashboard_cluster

    return dashboard_cluster(address)


def _cluster_sidebar() -> None:
    """The Dask cluster named by AUDIT_DASK_SCHEDULER: address, workers, a link to Dask's dashboard (or why not)."""
    import os

    from audit_core.common.cluster import ENV_VAR, cluster_summary

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
