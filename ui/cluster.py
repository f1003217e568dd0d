"""The Dask cluster named by AUDIT_DASK_SCHEDULER, for the dashboard: one client per server, its sidebar status.

When the variable is set, the pages send their heavy steps there (the Gower nearest-neighbour
search of the synthetic audit, the generator fits of a comparison, LiRA's model batches)
with the same numbers as in one process (audit_core.common.cluster); otherwise everything
runs in the server's process, as by default.
"""

from __future__ import annotations

import os
from typing import Any

import streamlit as st

from audit_core.common.cluster import ENV_VAR, cluster_summary, dashboard_cluster

__all__ = ["cluster_sidebar", "dask_client"]


@st.cache_resource(ttl=60, show_spinner="Connecting to the Dask cluster")
def _connect(address: str) -> dict:
    return dashboard_cluster(address)


def dask_client() -> Any:
    """The connected client, or None (no AUDIT_DASK_SCHEDULER, or the scheduler does not answer: run in process)."""
    address = os.environ.get(ENV_VAR, "").strip()
    return _connect(address).get("client") if address else None


def cluster_sidebar() -> None:
    """Address, workers and a link to Dask's own dashboard; or why the cluster cannot be used, in one sentence."""
    address = os.environ.get(ENV_VAR, "").strip()
    if not address:
        return
    state = _connect(address)
    if "error" in state:
        st.warning(state["error"] + " The audits run in this process.")
        return
    try:
        info = cluster_summary(state["client"])
    except Exception:  # the scheduler went away since: say so in one sentence
        st.warning(f"The Dask scheduler at {address} stopped answering; restart it or unset {ENV_VAR}.")
        return
    st.caption(f"Dask cluster `{info['address']}`: {info['workers']} workers, {info['threads']} threads · "
               f"[Dask dashboard]({info['dashboard']}) · distances, generator fits and LiRA's models run there")  # fmt: skip
