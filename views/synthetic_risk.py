"""Synthetic-data risk: can an attacker tell who was in the training data? (docs/methods.md §1)"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import streamlit as st

from audit_core.common.errors import InputError
from audit_core.common.glossary import TERMS
from audit_core.common.tables import ColumnTypes, infer_column_types
from audit_core.contract import Inputs
from audit_core.synthetic.audit import ATTACK_LABELS, SyntheticAudit, exposed_records, record_comparison
from audit_core.synthetic.disclosure import add_to_records
from audit_core.synthetic.figures import (
    REALISTIC_NOT_CALIBRATED,
    distance_figure,
    exposed_table_for_display,
    overlaps_table,
    p_member_figure,
    roc_figure,
)
from audit_core.synthetic.spec import TABULAR, TabularResult, TabularSettings
from audit_core.synthetic.verdict import verdict
from ui import state
from ui.common import (
    HELP,
    load_table,
    metric_card,
    remember_result,
    report_downloads,
    reproduce,
    run_audit,
    seed_input,
    show_input_error,
    take_autorun,
    tpr_card,
)
from ui.decision import glossary_expander, show_decision, threat_cards
from ui.disclosure import disclosure_section
from ui.widgets import knob_input

PAGE = "Synthetic-data risk"
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_data"
SAMPLES = {
    "Adult – leaky synthetic (some training rows copied)": ("adult", "synthetic_leaky"),
    "Adult – Gaussian copula synthetic": ("adult", "synthetic_gaussian_copula"),
    "German credit – leaky synthetic": ("german_credit", "synthetic_leaky"),
    "German credit – Gaussian copula synthetic": ("german_credit", "synthetic_gaussian_copula"),
}
SAMPLES = {k: v for k, v in SAMPLES.items() if (SAMPLE_DIR / v[0] / f"{v[1]}.csv").is_file()}
UPLOAD = "Upload my own tables"
ROLES = {
    "train": "Training table (members)",
    "holdout": "Holdout table (non-members)",
    "synthetic": "Synthetic table",
    "auxiliary": "Auxiliary data (optional)",
}
KINDS = ["numeric", "categorical", "ignore"]
RULES = ["silverman", "scott", "cv"]


# ----------------------------------------------------------------------------- cached steps
# ----------------------------------------------------------------------------- inputs
def _load_tables(source: str) -> dict[str, pd.DataFrame] | None:
    if source in SAMPLES:
        folder, synthetic = SAMPLES[source]
        names = {"train": "train", "holdout": "holdout", "synthetic": synthetic, "auxiliary": "auxiliary"}
        found = {role: name for role, name in names.items() if (SAMPLE_DIR / folder / f"{name}.csv").is_file()}
        st.session_state[state.Synthetic.PATHS] = {role: f"sample_data/{folder}/{name}.csv" for role, name in found.items()}
        return {role: load_table(SAMPLE_DIR / folder / f"{name}.csv", name, upload=False) for role, name in found.items()}
    cols = st.columns(4)
    tables: dict[str, pd.DataFrame] = {}
    for col, (role, label) in zip(cols, ROLES.items(), strict=True):
        upload = col.file_uploader(label, type=["csv", "parquet"], key=f"{state.Synthetic.UPLOAD}.{role}")
        if upload is not None:
            tables[role] = load_table(upload.getvalue(), role, upload=True)
            st.session_state.setdefault(state.Synthetic.PATHS, {})[role] = upload.name
    missing = [ROLES[r] for r in ("train", "holdout", "synthetic") if r not in tables]
    if missing:
        st.info("Upload " + ", ".join(missing).lower() + " (CSV or Parquet) to start.")
        return None
    st.session_state[state.Synthetic.PATHS] = {
        role: name for role, name in st.session_state.get(state.Synthetic.PATHS, {}).items() if role in tables
    }
    return tables


def _column_editor(train: pd.DataFrame, source: str) -> ColumnTypes:
    inferred = infer_column_types(train)
    kinds = {c: "numeric" for c in inferred.numeric} | {c: "categorical" for c in inferred.categorical}
    frame = pd.DataFrame(
        {
            "column": [str(c) for c in train.columns],
            "type": [kinds.get(str(c), "ignore") for c in train.columns],
            "example": [str(train[c].dropna().iloc[0]) if train[c].notna().any() else "" for c in train.columns],
            "distinct values": [int(train[c].nunique()) for c in train.columns],
        }
    )
    edited = st.data_editor(
        frame,
        key=f"{state.Synthetic.COLUMNS}.{source}",
        hide_index=True,
        disabled=["column", "example", "distinct values"],
        column_config={
            "type": st.column_config.SelectboxColumn(
                "type", options=KINDS, required=True, help="numeric: |x - s| / range; categorical: equal or not; ignore: left out"
            )
        },
        width="stretch",
    )
    chosen = dict(zip(edited["column"], edited["type"], strict=True))
    return infer_column_types(
        train,
        numeric=[c for c, k in chosen.items() if k == "numeric"],
        categorical=[c for c, k in chosen.items() if k == "categorical"],
        ignore=[c for c, k in chosen.items() if k == "ignore"],
    )


# ----------------------------------------------------------------------------- results
def _metric_cards(audit: SyntheticAudit) -> None:
    for name in [k for k in ("true_distribution", "realistic", "domias") if k in audit.attacks]:
        m = audit.attacks[name]
        at = "score ≥ 0" if name == "domias" else "P ≥ 0.5"
        with st.container(border=True):
            st.markdown(f"**{ATTACK_LABELS[name]}**")
            cols = st.columns(4)
            with cols[0]:
                metric_card("AUC", f"{m.auc:.3f}", help=HELP["auc"])
            for col, (key, label) in zip(cols[1:], (("0.001", "0.1 %"), ("0.01", "1 %"), ("0.1", "10 %")), strict=True):
                t = m.tpr_at_fpr[key]
                with col:
                    tpr_card(f"TPR at {label} FPR", t)
            cols = st.columns(4)
            for col, (key, value) in zip(
                cols, (("accuracy", m.accuracy), ("precision", m.precision), ("recall", m.recall), ("f1", m.f1)), strict=True
            ):
                with col:
                    metric_card(f"{key.capitalize() if key != 'f1' else 'F1'} at {at}", f"{value:.3f}", help=HELP[key])
    unsupported = [
        t for m in audit.attacks.values() for t in m.tpr_at_fpr.values() if not t.supported and t.target_fpr < 0.1 + 1e-12
    ]
    if unsupported:
        fprs = sorted({t.target_fpr for t in unsupported})
        st.warning(
            f"With {audit.n_non_members:,} non-members, the TPR at "
            + " and ".join(f"{100 * f:g} % FPR" for f in fprs)
            + " is not measurable (it needs at least 10/alpha non-members); those numbers are marked ⚠. "
            "Audit with a larger holdout table."
        )
    with st.container(border=True):
        st.markdown("**Method 1: member iff distance < threshold** (one ROC point, no curve)")
        cols = st.columns(5)
        for col, (label, dt) in zip(
            cols[:2],
            (("true", audit.distance_threshold), ("realistic", audit.distance_threshold_realistic)),
            strict=True,
        ):
            with col:
                metric_card(
                    f"TPR / FPR, {label}",
                    f"{dt.metrics.tpr:.2f} / {dt.metrics.fpr:.2f}",
                    help=(
                        f"tau = {dt.threshold:.4f}: the median distance of the "
                        + ("non-members" if label == "true" else "auxiliary records (the realistic attacker's data)")
                    ),
                )
        m1 = audit.distance_threshold.metrics
        for col, (key, value) in zip(
            cols[2:], (("accuracy", m1.accuracy), ("precision", m1.precision), ("f1", m1.f1)), strict=True
        ):
            with col:
                metric_card(f"{key.capitalize() if key != 'f1' else 'F1'}", f"{value:.3f}", help=HELP[key])




def _verbatim_cards(audit: SyntheticAudit) -> None:
    """Real records in the synthetic table: one count per real table, the rare copies, the near-copy scan."""
    v, link = audit.verbatim, audit.linkage
    if v is None:
        return
    with st.container(border=True):
        st.markdown("**Real records in the synthetic table** (whole tables; a synthetic row equal to a real record "
                    "publishes it)")  # fmt: skip
        cols = st.columns(5)
        aux = "n/a" if v.in_auxiliary is None else f"{v.in_auxiliary:,}"
        cards = [
            ("= a training record", f"{v.in_train:,}", f"Synthetic rows equal to a training row, of {v.n_synthetic:,}. "
             f"{v.train_copied:,} training rows have a copy (the exact-copy test's count)."),
            ("= a holdout record", f"{v.in_holdout:,}", "Synthetic rows equal to a holdout row (real non-members)."),
            ("= an auxiliary record", aux, "Synthetic rows equal to an auxiliary row (real non-members)."),
            ("rare training copies", f"{v.rare_train_copied:,}", "Copied training records whose values no holdout or "
             "auxiliary record shares: not explained by the population's own duplicates."),
        ]  # fmt: skip
        if link is not None:
            k = link.best
            cards.append(("near-copies (linkage)", f"{link.members_near[k]:,} vs {link.non_members_near[k]:,}",
                          f"{TERMS['record linkage']} Members vs non-members agreeing with a synthetic record on nearly "
                          f"every column ({link.tests[k]}); p = {link.p_value:.3g} over the scan."))  # fmt: skip
        for col, (label, value, help_text) in zip(cols, cards, strict=False):
            with col:
                metric_card(label, value, help=help_text)


def _exposed(audit: SyntheticAudit) -> None:
    st.subheader("The most exposed records")
    by_label = st.radio(
        "Rank by",
        ["true-distribution attack", "realistic attack"],
        horizontal=True,
        key=state.Synthetic.EXPOSED_BY,
    )
    by = "p_member_true" if by_label.startswith("true") else "p_member_realistic"
    top = exposed_records(audit, k=20, by=by)
    st.dataframe(exposed_table_for_display(top), hide_index=True, width="stretch")
    if top.empty:
        return
    labels = [f"#{r.rank}: {r.source} row {r.row} (P = {getattr(r, by):.3f}, d = {r.distance:.4f})" for r in top.itertuples()]
    pick = st.selectbox("Show a record beside its nearest synthetic record", labels, key=state.Synthetic.EXPLAIN)
    row = top.iloc[labels.index(pick)]
    pos = audit.records.index[(audit.records["source"] == row["source"]) & (audit.records["row"] == row["row"])][0]
    table = record_comparison(audit, int(audit.records.index.get_loc(pos)))
    table["record"] = table["record"].astype(str)
    table["nearest_synthetic"] = table["nearest_synthetic"].astype(str)
    st.dataframe(
        table.style.format({"contribution": "{:.4f}", "share_of_distance": "{:.1%}"}).bar(
            subset=["share_of_distance"], color="#D55E00", vmin=0, vmax=1
        ),
        hide_index=True,
        width="stretch",
    )


def _settings(types: ColumnTypes, rule: str, scale: float, prior: float, disclosure, groups=None) -> TabularSettings:
    """The page's knobs as the audit's settings (the reproduce command and the report are built from them)."""
    roles = {}
    if disclosure is not None:
        r = disclosure.roles
        roles = {"disclosure": True, "known": r.known, "link_a": r.link_a, "link_b": r.link_b, "secrets": r.secrets,
                 "n_attacks": int(disclosure.settings["n_attacks"]), "link_k": int(disclosure.settings["link_k"])}  # fmt: skip
    return TabularSettings(categorical=tuple(types.categorical), numeric=tuple(types.numeric), ignore=tuple(types.ignored),
                           bandwidth=rule, bandwidth_scale=scale, prior=prior, groups=groups, **roles)  # fmt: skip


# ----------------------------------------------------------------------------- page
st.title("🧬 Synthetic-data risk")
st.markdown(
    "Can an attacker who sees the synthetic table tell which people were in the generator's **training data**? "
    "Each real record gets its Gower distance to the nearest synthetic record; kernel densities of members' and "
    "non-members' distances turn that into **P(member | distance)** per record (docs/methods.md §1)."
)

autorun = take_autorun(state.Synthetic.AUTORUN)
options = [*SAMPLES, UPLOAD]
if autorun and options:
    st.session_state[state.Synthetic.SOURCE] = options[0]
source = st.selectbox("Data", options, key=state.Synthetic.SOURCE, help="Bundled samples, or your own CSV / Parquet tables.")

try:
    tables = _load_tables(source)
except InputError as exc:
    show_input_error(exc)
    tables = None

run_clicked = False
types: ColumnTypes | None = None
if tables is not None:
    st.caption(" · ".join(f"{role}: {len(df):,} rows × {df.shape[1]} columns" for role, df in tables.items()))
    with st.form("synthetic.run_form"):
        st.markdown("**Column types** (inferred; change a type or leave a column out)")
        try:
            types = _column_editor(tables["train"], source)
        except InputError as exc:
            show_input_error(exc)
        seed = seed_input(key=state.Synthetic.SEED)
        run_clicked = st.form_submit_button("▶ Run the audit", type="primary")

if (run_clicked or autorun) and tables is not None and types is not None:
    st.session_state[state.Synthetic.RESULT] = {
        "source": source,
        "tables": tables,
        "paths": dict(st.session_state.get(state.Synthetic.PATHS, {})),
        "types": types,
        "seed": int(st.session_state.get(state.Synthetic.SEED, 0)),
    }

result = st.session_state.get(state.Synthetic.RESULT)
if result is None:
    st.stop()
st.divider()
st.subheader(f"Result: {result['source']}")
decision_slot = st.container()  # the release decision goes first, once the re-score knobs below have been read
with st.container(border=True):
    st.markdown("**Re-score instantly** (distances are kept; only the 1-D densities are refitted)")
    c1, c2, c3 = st.columns(3)
    rule = knob_input(c1, TabularSettings, "bandwidth", options=RULES, key=state.Synthetic.BANDWIDTH_RULE)
    scale = knob_input(c2, TabularSettings, "bandwidth_scale", options=[0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0],
                       slider=True, key=state.Synthetic.BANDWIDTH)  # fmt: skip
    prior = knob_input(c3, TabularSettings, "prior", slider=True, min_value=0.01, max_value=0.99, step=0.01,
                       key=state.Synthetic.PRIOR, help=HELP["p_member"])  # fmt: skip
try:
    # The session keeps the inputs' names, not the audit: the bounded result store holds it (ui.common.ResultStore).
    settings = _settings(result["types"], rule, float(scale), float(prior), None)
    key, outcome = run_audit(TABULAR, Inputs(result["tables"], result["paths"]), settings, seed=result["seed"],
                             label="Auditing the synthetic table")  # fmt: skip
except InputError as exc:
    show_input_error(exc)
    st.stop()
result["key"] = key
audit = outcome.value.audit
for note in audit.warnings:
    st.caption("ℹ️ " + note)

with decision_slot:
    show_decision(outcome.decision(), verdict(audit))
    threat_cards(TABULAR.name)
_verbatim_cards(audit)
_metric_cards(audit)

st.plotly_chart(roc_figure(audit), width="stretch")
c1, c2 = st.columns(2)
c1.plotly_chart(p_member_figure(audit, attack="true_distribution"), width="stretch")
c2.plotly_chart(p_member_figure(audit, attack="realistic"), width="stretch")
c2.caption(REALISTIC_NOT_CALIBRATED)
st.plotly_chart(distance_figure(audit), width="stretch")

_exposed(audit)

if audit.overlaps:
    with st.expander("Rows repeated verbatim between the tables"):
        st.caption(
            "Two rows are the same when every compared column is equal. Holdout rows found in the synthetic table show "
            "how often a record appears there by chance; the verdict's exact-copy test compares the training rows with them."
        )
        st.dataframe(overlaps_table(audit), hide_index=True, width="stretch")

st.subheader("Risk by group")
_AUTO = "the column with the largest spread of risk"
group_col = st.selectbox("Group the records by", [_AUTO, *audit.types.columns], key=state.Synthetic.GROUPS,
                         help="Uncommon records are hit hardest: each group gets its own TPR at 1 % FPR (true-distribution "
                         "attack, threshold from the group's own non-members).")  # fmt: skip
outcome = outcome.rescore(groups=None if group_col == _AUTO else group_col)  # instant: the distances are kept
groups = outcome.value.groups
st.caption(f"Grouped by **{groups.column}**, worst group first. ⚠: fewer than 1,000 non-members in the group, so its "
           "interval is wide; groups with fewer than 100 cannot be measured at 1 % FPR at all.")  # fmt: skip
st.dataframe(groups.table(), hide_index=True, width="stretch")

disclosure = disclosure_section(audit, result["key"])

st.subheader("Downloads")
outcome = replace(outcome, value=TabularResult(audit, disclosure, groups),
                  settings=_settings(result["types"], rule, float(scale), float(prior), disclosure,
                                     outcome.settings.groups))  # fmt: skip
reproduce(outcome, key="synthetic")
records = audit.records if disclosure is None else add_to_records(audit.records, disclosure)
report_downloads(outcome.report(), records=records, key="synthetic")

true = audit.attacks["true_distribution"]
remember_result(
    PAGE,
    f"{result['source']}: " + verdict(audit).split(".")[0] + ".",
    {
        "AUC (true)": f"{true.auc:.3f}",
        "TPR @ 1 % FPR": f"{100 * true.tpr_at_fpr['0.01'].tpr:.1f} %",
        "training rows copied (whole table)": f"{audit.copy_test.train_copies:,}" if audit.copy_test else "n/a",
    },
)

glossary_expander(verdict(audit), *ATTACK_LABELS.values(), "Gower distance KDE bandwidth prior AUC TPR at FPR log-ROC "
                  "95 % interval verbatim copy near-copy DOMIAS Method 1 p-value epsilon lower bound")
