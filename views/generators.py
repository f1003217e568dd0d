"""Generate & compare: fit several generators on one real table and audit each (docs/methods.md §1)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from audit_core.common.errors import InputError
from audit_core.common.outputs import csv_text
from audit_core.contract import Inputs
from audit_core.synthetic.figures import (
    comparison_roc_figure,
    comparison_table,
    isolation_figure,
    privacy_utility_figure,
    shadow_roc_figure,
    shadow_table,
    shadow_target_table,
)
from audit_core.synthetic.spec import COMPARE, GENERATOR_INFO, CompareSettings
from audit_core.synthetic.verdict import shadow_decision
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


def _show(outcome, *, asked: Request | None = None, **cheap: Any) -> None:
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
    _shadow_section(outcome, asked, **cheap)
    st.subheader("Report")
    outcome_downloads(outcome, key="generators.report")
    glossary_expander(outcome.verdict(), "true-distribution attack realistic attack AUC TPR at FPR log-ROC 95 % interval "
                      "Method 1 KDE prior utility member non-member holdout verbatim copy near-copy shadow-generator "
                      "attack told apart p-value cross-fitting")  # fmt: skip


def _shadow_form(outcome) -> None:
    """Targets and shadow models; on click, the same comparison with ``--shadow`` is asked for (the fits are kept)."""
    saved: Request | None = st.session_state.get(state.Generators.RESULT)
    if saved is None:
        return
    settings = saved.settings
    with st.form(f"{state.Generators.SHADOW}.form"):
        c1, c2 = st.columns(2)
        targets = knob_input(c1, CompareSettings, "shadow_targets", value=settings.shadow_targets,
                             key=f"{state.Generators.SHADOW}.targets")  # fmt: skip
        models = knob_input(c2, CompareSettings, "shadow_models", value=settings.shadow_models, step=2,
                            key=f"{state.Generators.SHADOW}.models")  # fmt: skip
        st.caption("About one fit per shadow model and generator: GaussianCopula and the Bayesian network take about "
                   "a second per fit at 1,000 rows on 2 cores; CTGAN, TVAE and CopulaGAN need a GPU (refused up front "
                   "where a CPU would run past 15 min). Progress shows below, per generator.")  # fmt: skip
        if not st.form_submit_button("▶ Run the shadow attack"):
            return
    asked = dataclasses.replace(settings, shadow=True, shadow_targets=int(targets), shadow_models=int(models))
    st.session_state[state.Generators.ASKED] = dataclasses.replace(saved, settings=asked)
    st.rerun()


def _shadow_section(outcome, asked: Request | None = None, **cheap: Any) -> None:
    """The shadow attack on every generator: a summary table, then per generator its decision, figures and targets.

    ``asked``: the form's request from the last run; it runs here, its progress bars under the form the user clicked
    (the fits and audits are kept), then the page is drawn again with its result.
    """
    comparison = outcome.value
    st.subheader("Shadow attack")
    st.caption(
        "An attacker who knows the generator and its settings re-runs it on shadow training sets drawn from data like "
        "yours, each of the most unusual training records (Meeus et al.) put into half of them, and learns per record "
        "what its presence changes in the output (Stadler et al., Groundhog; TAPAS). A record is **told apart** when its "
        "exact permutation test, Holm-adjusted over the records, is at most 0.05."
    )
    _shadow_form(outcome)
    if asked is not None:
        progress_for, bars = _progress_bars(list(asked.settings.generators))
        done = audit_outcome(COMPARE, state.Generators.RESULT, asked, label="Shadow attack", progress_for=progress_for,
                             **cheap)  # fmt: skip
        for bar in bars.values():
            bar.empty()
        if done is not None and st.session_state.get(state.Generators.RESULT) is asked:  # refused: its sentence stays
            _remember(done)
            st.rerun()
    if comparison.shadow is None:
        st.caption("Not run yet for this comparison.")
        return
    st.dataframe(shadow_table(comparison), hide_index=True, width="stretch", key="generators.shadow_table")
    attacked = [run for run in comparison.runs if run.shadow is not None]
    for run in comparison.runs:
        if run.shadow is None and run.shadow_error:
            st.error(f"{run.label}: {run.shadow_error}")
    if not attacked:
        return
    for tab, run in zip(st.tabs([run.label for run in attacked]), attacked, strict=True):
        with tab:
            show_decision(shadow_decision(run))
            left, right = st.columns(2)
            left.plotly_chart(shadow_roc_figure(run.shadow), key=f"generators.shadow_roc.{run.name}")
            right.plotly_chart(isolation_figure(run.shadow), key=f"generators.shadow_iso.{run.name}")
            st.dataframe(shadow_target_table(run.shadow), hide_index=True, width="stretch",
                         key=f"generators.shadow_targets.{run.name}")  # fmt: skip
            st.caption("⚠: a TPR at this FPR needs 10 / FPR shadow outputs without the record to be measured; "
                       "'release p' ranks the published table among the outputs made without the record.")  # fmt: skip


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
    asked = st.session_state.pop(state.Generators.ASKED, None)  # the shadow form's: run in its section, progress there
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
        _remember(outcome)
    _show(outcome, asked=None if request is not None else asked, bandwidth=bandwidth, prior=float(prior))


def _remember(outcome) -> None:
    """The comparison on the home page's list of results."""
    done = [r for r in outcome.value.runs if r.ok]
    candidates = [r for r in done if r.name not in ("bootstrap", "population")]  # the references are yardsticks
    best = min(candidates, key=lambda r: r.audit.attacks["true_distribution"].auc, default=None)
    remember_result(PAGE, f"{len(done)} generators compared" + (f"; lowest AUC of the candidates: {best.label}"
                    if best else ""), {r.name: f"AUC {r.audit.attacks['true_distribution'].auc:.3f}" for r in done},
                    decision=outcome.decision())  # fmt: skip


main()
