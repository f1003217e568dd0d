"""Audit my model: upload a trained model (ONNX, skops or safetensors image weights) and see per-record membership risk."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from audit_core.common.errors import InputError
from audit_core.contract import Inputs
from audit_core.model.figures import (
    epsilon_table,
    exposed_table,
    family_sentence,
    family_table,
    fidelity_table,
    log_roc,
    rmia_table,
    tpr_table,
)
from audit_core.model.spec import MODEL, ModelSettings
from ui import state
from ui.cards import CHART, HELP, metric_card, show_table, tpr_card
from ui.decision import assumption_caption, glossary_expander, show_decision, threat_cards
from ui.downloads import outcome_downloads
from ui.run import Request, audit_outcome, load_input, show_input_error
from ui.session import remember_result, take_autorun
from ui.source import database_table
from ui.widgets import knob_input, seed_input

PAGE = "Audit my model"
ROOT = Path(__file__).resolve().parents[1]
SAMPLES = {  # label -> (folder, label column); the first is the default and the home page's sample run
    "Sample: an overfit MLP on Adult (2,000 members; 1,000 non-members measure a 1 % FPR)": ("adult", "income_per_year"),
    "Sample: an overfit MLP on German Credit (400 members; 150 non-members, too few for a 1 % FPR)": ("german_credit",
                                                                                                      "credit"),
}
SAMPLE_LABEL = next(iter(SAMPLES))
UPLOAD = "Upload my model and tables"
FROM_DATABASE = "Upload my model, tables from a database"


def _sample(label: str) -> dict[str, Path]:
    folder = ROOT / "sample_data" / SAMPLES[label][0]
    return {"model": folder / "model_mlp.skops", "train": folder / "train.csv", "population": folder / "holdout.csv"}

st.title("🧠 Audit my model")
st.markdown(
    "Upload the model your team trained, its **training table** (the members, with the label column) and a "
    "**population** table from the same distribution that it was not trained on. The model is read without running "
    "any code: **ONNX** (standard operators, one self-contained file) or **scikit-learn saved with skops**; a pickle "
    "is refused. It gets the table's feature columns as they are (every column but the label, numbers as floats, in "
    "table order): export a pipeline with its own encoder when it needs categories encoded. An **image model** of the "
    "fabrication page's architectures (small_cnn, resnet18) comes as **.safetensors** weights, with the members and "
    "the population as **.npz** images (arrays `images` and `labels`); its reference models are of its own architecture."
)

autorun = take_autorun(state.OwnModel.AUTORUN)
if autorun:
    st.session_state[state.OwnModel.SOURCE] = SAMPLE_LABEL
source = st.radio("Model and tables", [*SAMPLES, UPLOAD, FROM_DATABASE], key=state.OwnModel.SOURCE)

data: dict = {}
paths: dict[str, str] = {}
try:
    if source in (UPLOAD, FROM_DATABASE):
        cols = list(st.columns(3))
        files = {
            "model": cols[0].file_uploader("Model (.onnx, .skops, .safetensors)",
                                           type=["onnx", "skops", "safetensors", "pkl", "pickle", "joblib"],
                                           key=state.OwnModel.UPLOAD + ".model"),
        }
        if source == UPLOAD:
            files["train"] = cols[1].file_uploader("Members (CSV, Parquet or .npz images)", type=["csv", "parquet", "npz"],
                                                   key=state.OwnModel.UPLOAD + ".train")  # fmt: skip
            files["population"] = cols[2].file_uploader("Population (CSV, Parquet or .npz images)",
                                                        type=["csv", "parquet", "npz"],
                                                        key=state.OwnModel.UPLOAD + ".population")  # fmt: skip
        else:  # the members' and the population's tables from a database, as the CLI's --train / --population URLs
            for col, (role, label) in zip(cols[1:], {"train": "Members", "population": "Population"}.items(), strict=True):
                table, _, url = database_table(f"{state.OwnModel.DATABASE}.{role}", label=f"{label}: database URL",
                                               where=col, empty_help=None)  # fmt: skip
                if table is not None and url is not None:
                    data[role], paths[role] = table, url
        for role, upload in files.items():
            if upload is not None:
                data[role] = load_input(MODEL, role, upload.getvalue(), upload.name, upload=True)
                paths[role] = upload.name
        if len(data) < 3:
            st.info("Upload the model, the members' table and the population table." if source == UPLOAD else
                    "Upload the model and type the database URLs (?table=NAME or ?query=SELECT ...) of the members' "
                    "table and the population table.")  # fmt: skip
    else:
        data = {role: load_input(MODEL, role, p, p.name, upload=False) for role, p in _sample(source).items()}
        paths = {role: str(p.relative_to(ROOT)) for role, p in _sample(source).items()}
except InputError as exc:
    show_input_error(exc)
    data = {}

request = None
if len(data) == 3:
    images = Path(paths["train"]).suffix.lower() == ".npz"  # an image model's members (ImageSet: images, labels)
    columns = [] if images else [str(c) for c in data["train"].columns]
    epochs = ModelSettings.defaults()["reference_epochs"]
    with st.form("own_model.form"):
        left, mid, right = st.columns(3)
        target = None
        if not images:
            sample_target = SAMPLES[source][1] if source in SAMPLES else None
            default = sample_target if sample_target in columns else columns[-1]
            target = left.selectbox("Label column", columns, index=columns.index(default),
                                    help=ModelSettings.knobs()["target"].help)  # fmt: skip
        attacks = knob_input(left, ModelSettings, "attacks", options=ModelSettings.knobs()["attacks"].choices)
        variance = knob_input(left, ModelSettings, "lira_variance")
        k = knob_input(mid, ModelSettings, "reference_models")
        if images:
            epochs = knob_input(mid, ModelSettings, "reference_epochs")
        family, trusted = ModelSettings.defaults()["reference_family"], ""  # an image model: its own architecture
        if not images:
            family = knob_input(mid, ModelSettings, "reference_family")
            trusted = right.text_input("Trusted skops types (comma-separated)", "",
                                       help=ModelSettings.knobs()["trust_skops_types"].help)  # fmt: skip
        seed = seed_input(right)
        submitted = st.form_submit_button("▶ Audit the model", type="primary")
    if autorun:
        request = Request(Inputs(data, paths), ModelSettings(target=SAMPLES[SAMPLE_LABEL][1]), 0)
    elif submitted:
        settings = ModelSettings(target=target, attacks=tuple(a for a in (ModelSettings.knobs()["attacks"].choices or ())
                                                              if a in attacks),
                                 reference_models=int(k), reference_family=family, lira_variance=variance,
                                 reference_epochs=int(epochs),
                                 trust_skops_types=tuple(t.strip() for t in trusted.split(",") if t.strip()))  # fmt: skip
        request = Request(Inputs(data, paths), settings, int(seed))

outcome = audit_outcome(MODEL, state.OwnModel.RESULT, request, label="Auditing the model")
if outcome is None:
    st.stop()
audit = outcome.value
st.divider()
st.subheader(f"Result: {outcome.inputs.name('model')}")
show_decision(outcome.decision(), outcome.verdict())
threat_cards(MODEL.name)
assumption_caption()
for w in audit.warnings:
    st.warning(w)

st.markdown("**Fidelity check: do the reference models behave like the target?**")
st.caption(family_sentence(audit))
families = family_table(audit)
if not families.empty:
    with st.expander("Reference family chosen by fidelity: every family tried", expanded=True):
        st.caption("The family whose reference models behave most like the model on records no attack scores (train and "
                   "test accuracy, loss distributions) is kept. The attack columns show what the other families would "
                   "have found; they are never used to choose.")  # fmt: skip
        show_table(families)
show_table(fidelity_table(audit))
if not audit.fidelity.ok:
    st.error(audit.fidelity.sentence())

for attack in audit.attacks.values():
    with st.container(border=True):
        st.markdown(f"**{attack.name}** · {attack.curve.n_pos:,} members, {attack.curve.n_neg:,} non-members")
        cols = st.columns(2 + len(attack.tpr_at_fpr))
        with cols[0]:
            metric_card("AUC", f"{attack.auc:.3f}", help=HELP["auc"])
        with cols[1]:
            metric_card("epsilon ≥", f"{attack.epsilon.epsilon:.2f}", help=attack.epsilon.sentence())
        for col, t in zip(cols[2:], attack.tpr_at_fpr.values(), strict=True):
            with col:
                tpr_card(f"TPR at {100 * t.target_fpr:g} % FPR", t)

st.plotly_chart(log_roc(audit), width="stretch", config=CHART)
if audit.rmia_by_k:
    st.markdown("**RMIA with the first 1, 2, 4, ... reference models**")
    show_table(rmia_table(audit))
st.markdown("**Epsilon lower bound per attack**")
show_table(epsilon_table(audit))
with st.expander("TPR at each target FPR (table)"):
    show_table(tpr_table(audit))

st.subheader("Most exposed members")
st.caption("The members the strongest attack ranks highest, with their values; 'non-members scoring as high' = the "
           "share of non-members with at least this score (the FPR at which this record would be flagged). The report "
           "prints these records redacted unless asked (below).")  # fmt: skip
show_table(exposed_table(audit))
if hasattr(outcome.inputs["train"], "images"):  # an image model: show the exposed members' images
    shown = outcome.inputs["train"].images[audit.exposed["row"].to_numpy()[:10]]
    st.image([im.transpose(1, 2, 0).squeeze() for im in shown], width=64,
             caption=[f"row {r}" for r in audit.exposed["row"].to_numpy()[:10]])  # fmt: skip
with st.expander("Per-record table (every candidate)"):
    show_table(audit.records.head(2000))

st.subheader("Downloads")
outcome_downloads(outcome, key="own_model.downloads")

best = audit.best()
remember_result(
    PAGE,
    f"{outcome.inputs.name('model')}: strongest attack '{best.name}', fidelity {'ok' if audit.fidelity.ok else 'NOT ok'}.",
    {"AUC": f"{best.auc:.3f}", "TPR at 1 % FPR": f"{100 * best.tpr_at_fpr['0.01'].tpr:.1f} %",
     "epsilon ≥": f"{max(a.epsilon.epsilon for a in audit.attacks.values()):.2f}"},
    decision=outcome.decision(),
)
glossary_expander(outcome.verdict(), "membership inference member non-member LOSS attack RMIA LiRA reference models "
                  "AUC TPR at FPR log-ROC 95 % interval epsilon lower bound differential privacy fidelity")
