"""Generate & compare: fit several generators on one real table and audit each (docs/methods.md §1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from audit_core.common.errors import InputError
from audit_core.common.outputs import csv_text
from audit_core.contract import Inputs
from audit_core.synthetic.figures import comparison_roc_figure, comparison_table, privacy_utility_figure
from audit_core.synthetic.spec import COMPARE, GENERATOR_INFO, CompareSettings
from ui import state
from ui.cards import CHART, show_table
from ui.decision import glossary_expander, show_decision, threat_cards
from ui.downloads import outcome_downloads
from ui.run import Request, audit_outcome, load_input, show_input_error
from ui.session import remember_result, take_autorun
from ui.source import DATABASE, database_table
from ui.widgets import knob_input, seed_input

PAGE = "Generate & compare"
# Real rows of the sample run: the split's 20 % holdout then holds 1,200 non-members, enough to measure a TPR at
# 1 % FPR (1,000 needed); 0.1 % would need 10,000 (50,000 rows), more than the Adult sample has.
DEFAULT_ROWS = 6000
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_data"
SAMPLES = {"Adult (bundled sample)": "adult.csv", "German credit (bundled sample)": "german_credit.csv"}
SAMPLES = {k: v for k, v in SAMPLES.items() if (SAMPLE_DIR / v).is_file()}
UPLOAD = "Upload my own table"


def _load(source: str) -> tuple[pd.DataFrame | None, str | None]:
    """The real table and its path as the CLI is given it (a sample's, or the upload's own name)."""
    if source in SAMPLES:
        path = SAMPLE_DIR / SAMPLES[source]
        return load_input(COMPARE, "data", path, path.name, upload=False), f"sample_data/{SAMPLES[source]}"
    if source == DATABASE:
        table, _, url = database_table(state.Generators.DATABASE)
        return table, url
    upload = st.file_uploader("Real table (CSV or Parquet)", type=None, key="generators.upload")
    if upload is None:
        st.info("Upload the real table: it is split into train / holdout / auxiliary / reserve here.")
        return None, None
    return load_input(COMPARE, "data", upload.getvalue(), upload.name, upload=True), upload.name


def _param_widgets(name: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for p in GENERATOR_INFO[name].params:
        key = f"generators.param.{name}.{p.name}"
        if p.kind == "choice":
            values[p.name] = st.selectbox(p.label, p.choices, index=p.choices.index(p.default), key=key, help=p.help)
        elif p.kind == "int":
            values[p.name] = int(st.number_input(
                p.label, min_value=int(p.low or 0), max_value=int(p.high or 0), value=int(p.default), step=1, key=key, help=p.help
            ))
        else:
            values[p.name] = float(st.number_input(
                p.label, min_value=float(p.low or 0), max_value=float(p.high or 0), value=float(p.default), key=key, help=p.help
            ))
    return values


def _progress_bars(names: list[str]):
    """One progress bar per generator (epochs where the generator has them): the audit's ``progress_for``.

    Nothing shows unless a fit runs (a kept comparison is instant); the caller empties the slots after.
    """
    bars = {name: st.empty() for name in ["caption", *names]}

    def progress_for(name: str):
        if name not in bars:
            return None
        bars["caption"].caption("Progress per generator (epochs where the generator has them):")
        bar = bars[name].progress(0.0, text=f"{GENERATOR_INFO[name].label}: waiting")

        def update(fraction: float, message: str) -> None:
            bar.progress(min(max(fraction, 0.0), 1.0), text=message)

        return update

    return progress_for, bars


def _changed_params(names: list[str], params: dict) -> tuple[str, ...]:
    """The generator settings moved off their defaults, as ``--params`` gives them (``ctgan.epochs=5``)."""
    return tuple(sorted(
        f"{name}.{p.name}={params[name][p.name]}" for name in names for p in GENERATOR_INFO[name].params
        if name in params and params[name][p.name] != p.default
    ))  # fmt: skip


def _show(outcome) -> None:
    comparison = outcome.value
    st.divider()
    st.subheader(f"Result: {len(comparison.runs)} generators on {outcome.inputs.name('data')}")
    show_decision(outcome.decision(), outcome.verdict())  # first, before every table and warning
    threat_cards(COMPARE.name)
    st.markdown("**Generators side by side**")
    show_table(comparison_table(comparison), key="generators.table")
    st.caption(
        "AUC and TPR of the true-distribution attack (an upper bound) with 95 % intervals (threshold and members); "
        "F1 at P = 0.5 for the KDE attacks and of Method 1 (distance below the non-members' median). Utility: "
        "SDMetrics quality report (column shapes + column pair trends) of the synthetic vs the training table."
    )
    for run in comparison.runs:
        if run.error:
            st.error(f"{run.label}: {run.error}")
    attack = st.radio(
        "Attack", ["true_distribution", "realistic"], horizontal=True, key="generators.attack",
        format_func=lambda a: {"true_distribution": "true-distribution KDE", "realistic": "realistic KDE"}[a],
    )
    left, right = st.columns(2)
    left.plotly_chart(comparison_roc_figure(comparison, attack=attack), key="generators.roc", config=CHART)
    right.plotly_chart(privacy_utility_figure(comparison, attack=attack), key="generators.tradeoff", config=CHART)
    ok = [r for r in comparison.runs if r.ok]
    if ok:
        st.subheader("Download a synthetic table")
        pick = st.selectbox("Generator", [r.name for r in ok], format_func=lambda n: GENERATOR_INFO[n].label,
                            key="generators.download_pick")
        st.download_button(
            "⬇ Synthetic table (CSV)", data=csv_text(comparison[pick].synthetic),
            file_name=f"synthetic_{pick}.csv", mime="text/csv", key="generators.download_csv",
        )
    st.subheader("Report")
    outcome_downloads(outcome, key="generators.report")
    glossary_expander(outcome.verdict(), "true-distribution attack realistic attack AUC TPR at FPR log-ROC 95 % interval "
                      "Method 1 KDE prior utility member non-member holdout verbatim copy near-copy")


def main() -> None:
    st.title("⚙️ Generate & compare")
    st.caption(
        "Fit several synthetic-data generators on the same real data and audit each with the docs/methods.md §1 attacks. "
        "Two reference points make the scale readable: **bootstrap** (resampled training rows: maximal leakage) "
        "and **population** (unseen real rows: chance)."
    )
    options = [*SAMPLES, UPLOAD, DATABASE]
    source = st.radio("Real table", options, horizontal=True, key=state.Generators.SOURCE)
    try:
        real, path = _load(source)
    except InputError as exc:
        show_input_error(exc)
        return
    if real is None:
        return
    autorun = take_autorun(state.Generators.AUTORUN)
    with st.form("generators.form"):
        c1, c2, c3 = st.columns(3)
        use_rows = knob_input(c1, CompareSettings, "use_rows", value=min(DEFAULT_ROWS, len(real)), min_value=min(100, len(real)),
                              max_value=len(real), step=100, key="generators.use_rows")  # fmt: skip
        seed = seed_input(c2, key="generators.seed")
        synth_rows = int(knob_input(c3, CompareSettings, "synthetic_rows", step=100, key="generators.synth_rows"))
        f1, f2, f3, f4 = st.columns(4)
        fraction: dict[str, Any] = {"step": 0.05, "max_value": 0.9, "slider": True}
        train_f = knob_input(f1, CompareSettings, "train", min_value=0.1, key="generators.f_train", **fraction)
        hold_f = knob_input(f2, CompareSettings, "holdout", min_value=0.05, key="generators.f_holdout", **fraction)
        aux_f = knob_input(f3, CompareSettings, "auxiliary", key="generators.f_aux", **fraction)
        f4.metric("Reserve (population reference)", f"{max(0.0, 1 - train_f - hold_f - aux_f):.2f}")
        names = knob_input(st, CompareSettings, "generators", format_func=lambda n: GENERATOR_INFO[n].label,
                           key="generators.names")  # fmt: skip
        params = {}
        with st.expander("Generator settings"):
            cols = st.columns(3)
            for i, name in enumerate(n for n in GENERATOR_INFO if GENERATOR_INFO[n].params):
                with cols[i % 3]:
                    st.markdown(f"**{GENERATOR_INFO[name].label}**")
                    params[name] = _param_widgets(name)
        ignore = knob_input(st, CompareSettings, "ignore", options=list(real.columns), key="generators.ignore")
        submitted = st.form_submit_button("Fit & compare", type="primary")
    request = None
    if autorun:
        request = Request(Inputs({"data": real}, {"data": path}), CompareSettings(use_rows=min(DEFAULT_ROWS, len(real))), 0)
    elif submitted:
        settings = CompareSettings(
            generators=tuple(names), params=_changed_params(names, params),
            use_rows=int(use_rows) if use_rows < len(real) else 0, synthetic_rows=synth_rows, train=float(train_f),
            holdout=float(hold_f), auxiliary=float(aux_f), ignore=tuple(ignore),
        )  # fmt: skip
        request = Request(Inputs({"data": real}, {"data": path}), settings, int(seed))
    c1, c2 = st.columns(2)
    bandwidth = knob_input(c1, CompareSettings, "bandwidth", key=state.Generators.BANDWIDTH)
    prior = knob_input(c2, CompareSettings, "prior", slider=True, min_value=0.05, max_value=0.95, step=0.05,
                       key=state.Generators.PRIOR)  # fmt: skip
    saved = request or st.session_state.get(state.Generators.RESULT)
    progress_for, bars = _progress_bars(list(saved.settings.generators) if saved else [])
    outcome = audit_outcome(COMPARE, state.Generators.RESULT, request, label="Comparison", progress_for=progress_for,
                            bandwidth=bandwidth, prior=float(prior))  # fmt: skip
    for bar in bars.values():
        bar.empty()
    if outcome is None:
        return
    if request is not None:
        done = [r for r in outcome.value.runs if r.ok]
        candidates = [r for r in done if r.name not in ("bootstrap", "population")]  # the references are yardsticks
        best = min(candidates, key=lambda r: r.audit.attacks["true_distribution"].auc, default=None)
        remember_result(PAGE, f"{len(done)} generators compared" + (f"; lowest AUC of the candidates: {best.label}"
                        if best else ""), {r.name: f"AUC {r.audit.attacks['true_distribution'].auc:.3f}" for r in done},
                        decision=outcome.decision())  # fmt: skip
    _show(outcome)


main()
