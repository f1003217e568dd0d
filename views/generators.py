"""Generate & compare: fit several generators on one real table and audit each (docs/methods.md §1)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from audit_core.common.errors import InputError
from audit_core.common.hashing import fingerprint
from audit_core.common.outputs import csv_text
from audit_core.contract import Inputs, Outcome
from audit_core.synthetic.comparison import GeneratorComparison, compare_generators
from audit_core.synthetic.figures import comparison_roc_figure, comparison_table, privacy_utility_figure
from audit_core.synthetic.generators import GENERATORS
from audit_core.synthetic.spec import COMPARE, CompareSettings, comparison_inputs
from audit_core.synthetic.verdict import comparison_verdict
from ui import state
from ui.cluster import dask_client
from ui.common import (
    keep_result,
    load_table,
    progress_reporter,
    remember_result,
    report_downloads,
    reproduce,
    result_cache,
    seed_input,
    show_input_error,
    stored_result,
    take_autorun,
)
from ui.decision import show_decision, threat_cards
from ui.widgets import knob_input

PAGE = "Generate & compare"
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_data"
SAMPLES = {"Adult (bundled sample)": "adult.csv", "German credit (bundled sample)": "german_credit.csv"}
SAMPLES = {k: v for k, v in SAMPLES.items() if (SAMPLE_DIR / v).is_file()}
UPLOAD = "Upload my own table"
RULES = ["silverman", "scott", "cv"]


def _load(source: str) -> pd.DataFrame | None:
    if source in SAMPLES:
        return load_table(SAMPLE_DIR / SAMPLES[source], SAMPLES[source], upload=False)
    upload = st.file_uploader("Real table (CSV or Parquet)", type=["csv", "parquet"], key="generators.upload")
    if upload is None:
        st.info("Upload the real table: it is split into train / holdout / auxiliary / reserve here.")
        return None
    st.session_state["generators.upload_name"] = upload.name
    return load_table(upload.getvalue(), upload.name, upload=True)


def _param_widgets(name: str) -> dict:
    values = {}
    for p in GENERATORS[name].params:
        key = f"generators.param.{name}.{p.name}"
        if p.kind == "choice":
            values[p.name] = st.selectbox(p.label, p.choices, index=p.choices.index(p.default), key=key, help=p.help)
        elif p.kind == "int":
            values[p.name] = int(st.number_input(
                p.label, min_value=int(p.low), max_value=int(p.high), value=int(p.default), step=1, key=key, help=p.help
            ))
        else:
            values[p.name] = float(st.number_input(
                p.label, min_value=float(p.low), max_value=float(p.high), value=float(p.default), key=key, help=p.help
            ))
    return values


def _run(subset: pd.DataFrame, kwargs: dict) -> GeneratorComparison:
    cache = result_cache(state.Generators.CACHE)  # fits, samples and audits, in the one bounded store
    bars = {}
    st.caption("Progress per generator (epochs where the generator has them):")
    for name in kwargs["names"]:
        bars[name] = st.progress(0.0, text=f"{GENERATORS[name].label}: waiting")

    def own(name: str):
        def update(fraction: float, message: str) -> None:
            bars[name].progress(min(max(fraction, 0.0), 1.0), text=message)

        return update

    with progress_reporter("Comparison") as progress:
        comparison = compare_generators(subset, **kwargs, progress=progress, cache=cache, per_generator_progress=own,
                                        client=dask_client())  # each generator its own task on a cluster  # fmt: skip
    for bar in bars.values():
        bar.empty()
    return comparison


def _changed_params(names: list[str], params: dict) -> tuple[str, ...]:
    """The generator settings moved off their defaults, as ``--params`` gives them (``ctgan.epochs=5``)."""
    return tuple(sorted(
        f"{name}.{p.name}={params[name][p.name]}" for name in names for p in GENERATORS[name].params
        if name in params and params[name][p.name] != p.default
    ))  # fmt: skip


def _show(comparison: GeneratorComparison, subset: pd.DataFrame, run: dict) -> None:
    c1, c2 = st.columns(2)
    bandwidth = knob_input(c1, CompareSettings, "bandwidth", options=RULES, key=state.Generators.BANDWIDTH)
    prior = knob_input(c2, CompareSettings, "prior", slider=True, min_value=0.05, max_value=0.95, step=0.05,
                       key=state.Generators.PRIOR)  # fmt: skip
    outcome = Outcome(COMPARE, comparison, Inputs({"data": subset}, {"data": run["path"]}), run["settings"],
                      seed=run["seed"], extras={"subset": subset})  # the audits ran at the default bandwidth and prior
    outcome = outcome.rescore(bandwidth=bandwidth, prior=float(prior))  # instant: nothing is refitted
    comparison = outcome.value
    st.subheader("Generators side by side")
    show_decision(outcome.decision(), comparison_verdict(comparison))
    threat_cards(COMPARE.name)
    st.dataframe(comparison_table(comparison), hide_index=True, width="stretch", key="generators.table")
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
    left.plotly_chart(comparison_roc_figure(comparison, attack=attack), key="generators.roc")
    right.plotly_chart(privacy_utility_figure(comparison, attack=attack), key="generators.tradeoff")
    ok = [r for r in comparison.runs if r.ok]
    if ok:
        st.subheader("Download a synthetic table")
        pick = st.selectbox("Generator", [r.name for r in ok], format_func=lambda n: GENERATORS[n].label,
                            key="generators.download_pick")
        st.download_button(
            "⬇ Synthetic table (CSV)", data=csv_text(comparison[pick].synthetic),
            file_name=f"synthetic_{pick}.csv", mime="text/csv", key="generators.download_csv",
        )
    st.subheader("Report")
    reproduce(outcome, key="generators.report")
    report_downloads(outcome.report(), key="generators.report")


def main() -> None:
    st.title("⚙️ Generate & compare")
    st.caption(
        "Fit several synthetic-data generators on the same real data and audit each with the docs/methods.md §1 attacks. "
        "Two reference points make the scale readable: **bootstrap** (resampled training rows: maximal leakage) "
        "and **population** (unseen real rows: chance)."
    )
    options = [*SAMPLES, UPLOAD]
    source = st.radio("Real table", options, horizontal=True, key=state.Generators.SOURCE)
    try:
        real = _load(source)
    except InputError as exc:
        show_input_error(exc)
        return
    if real is None:
        return
    autorun = take_autorun(state.Generators.AUTORUN)
    with st.form("generators.form"):
        c1, c2, c3 = st.columns(3)
        use_rows = knob_input(c1, CompareSettings, "use_rows", value=min(4000, len(real)), min_value=min(100, len(real)),
                              max_value=len(real), step=100, key="generators.use_rows")  # fmt: skip
        seed = seed_input(c2, key="generators.seed")
        synth_rows = int(knob_input(c3, CompareSettings, "synthetic_rows", step=100, key="generators.synth_rows"))
        f1, f2, f3, f4 = st.columns(4)
        fraction = {"step": 0.05, "max_value": 0.9, "slider": True}
        train_f = knob_input(f1, CompareSettings, "train", min_value=0.1, key="generators.f_train", **fraction)
        hold_f = knob_input(f2, CompareSettings, "holdout", min_value=0.05, key="generators.f_holdout", **fraction)
        aux_f = knob_input(f3, CompareSettings, "auxiliary", key="generators.f_aux", **fraction)
        f4.metric("Reserve (population reference)", f"{max(0.0, 1 - train_f - hold_f - aux_f):.2f}")
        names = st.multiselect(
            "Generators", list(GENERATORS), default=list(CompareSettings().generators),
            format_func=lambda n: GENERATORS[n].label, key="generators.names",
        )
        params = {}
        with st.expander("Generator settings"):
            cols = st.columns(3)
            for i, name in enumerate(n for n in GENERATORS if GENERATORS[n].params):
                with cols[i % 3]:
                    st.markdown(f"**{GENERATORS[name].label}**")
                    params[name] = _param_widgets(name)
        ignore = st.multiselect(CompareSettings.knobs()["ignore"].label, list(real.columns), key="generators.ignore")
        submitted = st.form_submit_button("Fit & compare", type="primary")
    if submitted or autorun:
        try:
            settings = CompareSettings(
                generators=tuple(names), params=_changed_params(names, params),
                use_rows=int(use_rows) if use_rows < len(real) else 0, synthetic_rows=synth_rows, train=float(train_f),
                holdout=float(hold_f), auxiliary=float(aux_f), ignore=tuple(ignore),
            )  # fmt: skip
            settings.validate()
            subset, kwargs = comparison_inputs(real, settings, seed=int(seed))
            comparison = _run(subset, kwargs)
        except InputError as exc:
            show_input_error(exc)
            return
        key = fingerprint("generators", subset, settings.as_dict(), int(seed))
        path = f"sample_data/{SAMPLES[source]}" if source in SAMPLES else st.session_state.get("generators.upload_name")
        run = {"settings": settings, "seed": int(seed), "path": path}
        keep_result(key, (comparison, subset, run))  # the session keeps the key; the bounded store the result
        st.session_state[state.Generators.RESULT] = key
        done = [r for r in comparison.runs if r.ok]
        if done:
            best = min(done, key=lambda r: r.audit.attacks["true_distribution"].auc)
            remember_result(PAGE, f"{len(done)} generators compared; least leaky: {best.label}", {
                r.name: f"AUC {r.audit.attacks['true_distribution'].auc:.3f}" for r in done
            })
    key = st.session_state.get(state.Generators.RESULT)
    if key is not None:
        stored = stored_result(key)
        if stored is None:
            st.info("This result was dropped from the server's memory to make room for other audits: run it again.")
            return
        _show(*stored)


main()
