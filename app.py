"""Entry point of the dashboard: a router over views/ (run: streamlit run app.py)."""

import streamlit as st

from ui.cluster import cluster_sidebar

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
        "members are vermillion, non-members blue, fabricated purple, synthetic green; "
        "attacks on a log-ROC differ by line style and are named in the legend."
    )
    cluster_sidebar()
pg.run()
