"""Synthetic-data risk: can an attacker tell who was in the training data? (docs/methods.md §1)"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import streamlit as st

from audit_core.common.errors import InputError
from audit_core.common.glossary import TERMS
from audit_core.contract import Inputs
from audit_core.synthetic.figures import (
    ATTACK_LABELS,
    REALISTIC_NOT_CALIBRATED,
    distance_figure,
    exposed_display,
    exposed_table,
    overlaps_table,
    p_member_figure,
    record_table,
    results_table,
    risk_figure,
    roc_figure,
)
from audit_core.synthetic.spec import TABULAR, TabularSettings
from ui import state
from ui.cards import CHART, HELP, metric_card, show_table, tpr_card
from ui.decision import glossary_expander, show_decision, threat_cards
from ui.downloads import outcome_downloads
from ui.run import Request, audit_outcome, load_input, rescored, show_input_error
from ui.session import remember_result, take_autorun
from ui.source import DATABASE, database_table
from ui.widgets import knob_input, seed_input

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
KINDS = ("numeric", "categorical", "ignore")


# ----------------------------------------------------------------------------- inputs
def _load_tables(source: str) -> tuple[dict[str, pd.DataFrame], dict[str, str]] | None:
    """The tables by role and their paths as the CLI is given them (a sample's, or the upload's own name)."""
    if source in SAMPLES:
        folder, synthetic = SAMPLES[source]
        names = {"train": "train", "holdout": "holdout", "synthetic": synthetic, "auxiliary": "auxiliary"}
        files = {role: SAMPLE_DIR / folder / f"{name}.csv" for role, name in names.items()}
        files = {role: path for role, path in files.items() if path.is_file()}
        tables = {role: load_input(TABULAR, role, path, path.name, upload=False) for role, path in files.items()}
        return tables, {role: f"sample_data/{folder}/{path.name}" for role, path in files.items()}
    tables, paths = {}, {}
    for col, (role, label) in zip(st.columns(4), ROLES.items(), strict=True):
        if source == DATABASE:  # named by its role in messages, as the CLI names it
            table, _, url = database_table(f"{state.Synthetic.DATABASE}.{role}", label=f"{label}: database URL",
                                           name=role, where=col, empty_help=None)  # fmt: skip
            if table is not None and url is not None:
                tables[role], paths[role] = table, url
            continue
        # any file type: a wrong one (a .png) gets a sentence from read_table, not only a red file chip
        upload = col.file_uploader(f"{label}, CSV or Parquet", type=None, key=f"{state.Synthetic.UPLOAD}.{role}")
        if upload is not None:
            tables[role] = load_input(TABULAR, role, upload.getvalue(), upload.name, upload=True)
            paths[role] = upload.name
    missing = [ROLES[r] for r in ("train", "holdout", "synthetic") if r not in tables]
    if missing:
        how = "Type the database URL (?table=NAME or ?query=SELECT ...) of " if source == DATABASE else "Upload "
        st.info(how + ", ".join(missing).lower() + (" to start." if source == DATABASE else " (CSV or Parquet) to start."))
        return None
    return tables, paths


def _column_editor(train: pd.DataFrame, source: str) -> dict[str, tuple[str, ...]]:
    """The column-type editor; returns the types that differ from the inferred ones (the settings' overrides)."""
    kinds = TabularSettings.column_kinds(train)
    frame = pd.DataFrame(
        {
            "column": [str(c) for c in train.columns],
            "type": [kinds[str(c)] for c in train.columns],
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
                "type", options=list(KINDS), required=True,
                help="numeric: |x - s| / range; categorical: equal or not; ignore: left out",
            )
        },
        width="stretch",
    )
    changed = {c: k for c, k in zip(edited["column"], edited["type"], strict=True) if kinds[c] != k}
    return {kind: tuple(c for c, k in changed.items() if k == kind) for kind in KINDS}


# ----------------------------------------------------------------------------- results
def _metric_cards(audit) -> None:
    for name in [k for k in ("true_distribution", "realistic", "domias", "learned") if k in audit.attacks]:
        m = audit.attacks[name]
        at = "score ≥ 0" if name == "domias" else "P ≥ 0.5"
        with st.container(border=True):
            st.markdown(f"**{ATTACK_LABELS[name]}**")
            cols = list(st.columns(4))
            with cols[0]:
                metric_card("AUC", f"{m.auc:.3f}", help=HELP["auc"])
            for col, (key, label) in zip(cols[1:], (("0.001", "0.1 %"), ("0.01", "1 %"), ("0.1", "10 %")), strict=True):
                t = m.tpr_at_fpr[key]
                with col:
                    tpr_card(f"TPR at {label} FPR", t)
            cols = list(st.columns(4))
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
        cols = list(st.columns(5))
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




def _verbatim_cards(audit) -> None:
    """Real records in the synthetic table, each count named as the decision names it, beside its reference."""
    v, link, test = audit.verbatim, audit.linkage, audit.copy_test
    if v is None:
        return
    with st.container(border=True):
        st.markdown("**Real records copied into the synthetic table** (whole tables; a synthetic row equal to a real "
                    "record publishes it; every compared column equal, missing equal to missing)")  # fmt: skip
        aux = audit.overlaps.get("auxiliary_in_synthetic")
        cards = [
            ("training rows copied verbatim", f"{test.train_copies:,}",
             f"{100 * test.train_rate:.1f} % of {test.n_train:,} (holdout {100 * test.holdout_rate:.1f} %)",
             f"Training rows with an identical row in the synthetic table: the count the decision and the report name. "
             f"They sit in {v.in_train:,} of the {v.n_synthetic:,} synthetic rows (identical training rows share one "
             "copy)."),
            ("holdout rows copied verbatim", f"{test.holdout_copies:,}",
             f"{100 * test.holdout_rate:.1f} % of {test.n_holdout:,}: the chance rate",
             "Holdout rows (real non-members) with an identical synthetic row: how often a record appears by chance."),
            ("auxiliary rows copied verbatim", "n/a" if aux is None else f"{aux.rows:,}",
             "" if aux is None else f"{100 * aux.share:.1f} % of {aux.of:,}",
             "Auxiliary rows (real non-members) with an identical synthetic row."),
            ("of the training copies: rare", f"{v.rare_train_copied:,}", f"of {test.train_copies:,} copied",
             "Copied training records whose values no holdout or auxiliary record shares: not explained by the "
             "population's own duplicates."),
        ]  # fmt: skip
        if link is not None:
            k = link.best
            cards.append(("near-copies (record linkage)", f"{link.members_near[k]:,}",
                          f"training rows; holdout rows {link.non_members_near[k]:,}",
                          f"{TERMS['record linkage']} Members vs non-members agreeing with a synthetic record on nearly "
                          f"every column ({link.tests[k]}); p = {link.p_value:.3g} over the scan."))  # fmt: skip
        cols = [*st.columns(3), *st.columns(3)]
        for col, (label, value, reference, help_text) in zip(cols, cards, strict=False):
            with col:
                metric_card(label, value, help=help_text)
                if reference:
                    st.caption(reference)


def _exposed(audit) -> None:
    st.subheader("The most exposed records")
    by_label = st.radio(
        "Rank by",
        ["true-distribution attack", "realistic attack"],
        horizontal=True,
        key=state.Synthetic.EXPOSED_BY,
    )
    by = "p_member_true" if by_label.startswith("true") else "p_member_realistic"
    top = exposed_table(audit, k=20, by=by)
    show_table(exposed_display(top))
    if top.empty:
        return
    labels = [f"#{r.rank}: {r.source} row {r.row} (P = {getattr(r, by):.3f}, d = {r.distance:.4f})" for r in top.itertuples()]
    pick = st.selectbox("Show a record beside its nearest synthetic record", labels, key=state.Synthetic.EXPLAIN)
    row = top.iloc[labels.index(pick)]
    table = record_table(audit, row["source"], int(row["row"]))
    st.dataframe(
        table.style.format({"contribution": "{:.4f}", "share_of_distance": "{:.1%}"}).bar(
            subset=["share_of_distance"], color="#D55E00", vmin=0, vmax=1
        ),
        hide_index=True,
        width="stretch",
    )


def _disclosure_form(request: Request) -> Request | None:
    """The attacker's roles for the disclosure attacks; a new request (the same tables, with the roles) on click."""
    train, settings = request.inputs["train"], request.settings
    columns = [str(c) for c in train.columns if c not in settings.ignore]
    try:
        defaults = TabularSettings.default_roles(columns)
    except InputError as exc:
        st.caption(str(exc))
        return None
    n_rows = min(len(train), len(request.inputs["holdout"]))
    prefix = state.Synthetic.DISCLOSURE
    with st.form(f"{prefix}.form"):
        known = knob_input(st, TabularSettings, "known", options=columns, value=defaults["known"], key=f"{prefix}.known")
        c1, c2 = st.columns(2)
        link_a = knob_input(c1, TabularSettings, "link_a", options=columns, value=defaults["link_a"], key=f"{prefix}.a")
        link_b = knob_input(c2, TabularSettings, "link_b", options=columns, value=defaults["link_b"], key=f"{prefix}.b")
        secrets = knob_input(st, TabularSettings, "secrets", options=columns, value=defaults["secrets"],
                             key=f"{prefix}.secrets")  # fmt: skip
        c1, c2 = st.columns(2)
        n_attacks = knob_input(c1, TabularSettings, "n_attacks", value=min(TabularSettings().n_attacks, n_rows), step=100,
                               key=f"{prefix}.n", help="Default 2,000; all records when the tables are smaller.")  # fmt: skip
        link_k = knob_input(c2, TabularSettings, "link_k", key=f"{prefix}.k")
        if not st.form_submit_button("▶ Run the disclosure attacks"):
            return None
    roles = {"known": known, "link_a": link_a, "link_b": link_b, "secrets": secrets, "n_attacks": int(n_attacks),
             "link_k": int(link_k)}  # fmt: skip
    return replace(request, settings=replace(settings, disclosure=True, **roles))


# ----------------------------------------------------------------------------- page
st.title("🧬 Synthetic-data risk")
st.markdown(
    "Can an attacker who sees the synthetic table tell which people were in the generator's **training data**? "
    "Each real record gets its Gower distance to the nearest synthetic record; kernel densities of members' and "
    "non-members' distances turn that into **P(member | distance)** per record (docs/methods.md §1)."
)

autorun = take_autorun(state.Synthetic.AUTORUN)
options = [*SAMPLES, UPLOAD, DATABASE]
if autorun and options:
    st.session_state[state.Synthetic.SOURCE] = options[0]
source = st.selectbox("Data", options, key=state.Synthetic.SOURCE, help="Bundled samples, your own CSV / Parquet "
                      "tables, or tables in a database (an SQLAlchemy URL per table).")  # fmt: skip

try:
    loaded = _load_tables(source)
except InputError as exc:
    show_input_error(exc)
    loaded = None

request = st.session_state.pop(state.Synthetic.ASKED, None)  # the disclosure form's, from the last run
if loaded is not None:
    try:  # mismatched columns: one sentence now, not after "Run"
        if TABULAR.check is not None:
            TABULAR.check(Inputs(*loaded), TabularSettings())
    except InputError as exc:
        show_input_error(exc)
        loaded = None
if loaded is not None:
    tables, paths = loaded
    st.caption(" · ".join(f"{role}: {len(df):,} rows × {df.shape[1]} columns" for role, df in tables.items()))
    with st.form("synthetic.run_form"):
        st.markdown("**Column types** (inferred; change a type or leave a column out)")
        types = _column_editor(tables["train"], source)
        seed = seed_input(key=state.Synthetic.SEED)
        run_clicked = st.form_submit_button("▶ Run the audit", type="primary")
    if run_clicked or autorun:
        chosen = TabularSettings(categorical=types.get("categorical", ()), numeric=types.get("numeric", ()),
                                 ignore=types.get("ignore", ()))  # fmt: skip
        request = Request(Inputs(tables, paths), chosen, 0 if autorun else int(seed))

if request is None and state.Synthetic.RESULT not in st.session_state:
    st.stop()
st.divider()
decision_slot = st.container()  # the heading and the decision go first, once the re-score knobs below have been read
with st.container(border=True):
    st.markdown("**Re-score instantly** (distances are kept; only the 1-D densities are refitted)")
    c1, c2, c3 = st.columns(3)
    rule = knob_input(c1, TabularSettings, "bandwidth", key=state.Synthetic.BANDWIDTH_RULE)
    scale = knob_input(c2, TabularSettings, "bandwidth_scale", options=[0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0],
                       slider=True, key=state.Synthetic.BANDWIDTH)  # fmt: skip
    prior = knob_input(c3, TabularSettings, "prior", slider=True, min_value=0.01, max_value=0.99, step=0.01,
                       key=state.Synthetic.PRIOR, help=HELP["p_member"])  # fmt: skip
outcome = audit_outcome(TABULAR, state.Synthetic.RESULT, request, label="Auditing the synthetic table", bandwidth=rule,
                        bandwidth_scale=float(scale), prior=float(prior))  # fmt: skip
if outcome is None:
    st.stop()
audit = outcome.value.audit
for note in audit.warnings:
    st.caption("ℹ️ " + note)

st.plotly_chart(roc_figure(audit), width="stretch", config=CHART)
c1, c2 = st.columns(2)
c1.plotly_chart(p_member_figure(audit, attack="true_distribution"), width="stretch", config=CHART)
c2.plotly_chart(p_member_figure(audit, attack="realistic"), width="stretch", config=CHART)
c2.caption(REALISTIC_NOT_CALIBRATED)
st.plotly_chart(distance_figure(audit), width="stretch", config=CHART)

_exposed(audit)

if audit.overlaps:
    with st.expander("Rows repeated verbatim between the tables"):
        st.caption(
            "Two rows are the same when every compared column is equal. Holdout rows found in the synthetic table show "
            "how often a record appears there by chance; the verdict's exact-copy test compares the training rows with them."
        )
        show_table(overlaps_table(audit))

st.subheader("Risk by group")
_AUTO = "the column whose groups differ most in copies or risk"
group_col = st.selectbox("Group the records by", [_AUTO, *audit.types.columns], key=state.Synthetic.GROUPS,
                         help="Uncommon records are hit hardest: each group gets its training records copied verbatim, "
                         "its near-copies (record linkage), its own copy test and its own TPR at 1 % FPR "
                         "(true-distribution attack, threshold from the group's own non-members).")  # fmt: skip
outcome = rescored(outcome, groups=None if group_col == _AUTO else group_col)  # instant: the distances are kept
groups = outcome.value.groups
st.caption(f"Grouped by **{groups.column}**: groups whose copies or near-copies exceed chance first, whatever their "
           "size, then by TPR. ⚠: fewer than 1,000 non-members in the group, so its interval is wide; with fewer than "
           "100 the TPR at 1 % FPR cannot be measured at all (the copies still can).")  # fmt: skip
show_table(groups.table())

disclosure = outcome.value.disclosure
with st.expander("Singling out, linkability and attribute inference (Giomi et al., PoPETs 2023)",
                 expanded=disclosure is not None):  # fmt: skip
    st.caption(
        "Each attack runs on the training records and, identically, on the holdout (control). "
        "**Risk** = (success on training − success on control) / (1 − success on control), with its 95 % interval; "
        "the **baseline** guesses at random: an attack no better than its baseline proves nothing."
    )
    asked = _disclosure_form(st.session_state[state.Synthetic.RESULT])
    if asked is not None:  # run on the next rerun, at the top: the membership audit is kept, only the attacks run
        st.session_state[state.Synthetic.ASKED] = asked
        st.rerun()
    if disclosure is None:
        st.caption("Set the roles and run the attacks (about 10 s for 2,000 attacks on 20,000 rows).")
    else:
        table = results_table(disclosure)
        st.dataframe(table[["attack", "risk", "ci_low", "ci_high", "attack_rate", "control_rate", "baseline_rate",
                            "n_attacks", "reading"]], hide_index=True, width="stretch")  # fmt: skip
        st.plotly_chart(risk_figure(disclosure), width="stretch", config=CHART)

with decision_slot:
    st.subheader(f"Result: {outcome.inputs.name('synthetic')}")
    show_decision(outcome.decision(), outcome.verdict())
    threat_cards(TABULAR.name)
    _verbatim_cards(audit)
    _metric_cards(audit)

st.subheader("Downloads")
outcome_downloads(outcome, key="synthetic")

true = audit.attacks["true_distribution"]
remember_result(
    PAGE,
    f"{source}",
    {
        "AUC (true)": f"{true.auc:.3f}",
        "TPR @ 1 % FPR": f"{100 * true.tpr_at_fpr['0.01'].tpr:.1f} %",
        "training rows copied verbatim": f"{audit.copy_test.train_copies:,}" if audit.copy_test else "n/a",
    },
    decision=outcome.decision(),
)

glossary_expander(outcome.verdict(), *ATTACK_LABELS.values(), "Gower distance KDE bandwidth prior AUC TPR at FPR "
                  "log-ROC 95 % interval verbatim copy near-copy DOMIAS Method 1 p-value epsilon lower bound learned attacker "
                  "cross-fitting")
