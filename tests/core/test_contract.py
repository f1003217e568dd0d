"""The contract every audit implements (audit_core.contract) and the registry the front ends are built from."""

from __future__ import annotations

import shlex
from dataclasses import replace

import pytest

from audit_core.__main__ import build_parser
from audit_core.common.errors import InputError
from audit_core.contract import Inputs, Outcome
from audit_core.registry import REGISTRY, TOOLS

ALL = {**REGISTRY, **TOOLS}

# Settings moved off their defaults, one per audit: the reproduce line must carry every one of them.
CHANGED = {
    "tabular": {"categorical": ("sex", "race"), "ignore": ("fnlwgt",), "bandwidth": 0.3, "bandwidth_scale": 1.4,
                "prior": 0.2, "disclosure": True, "secrets": ("income",), "n_attacks": 500, "link_k": 3, "groups": "sex"},
    "compare": {"generators": ("bootstrap", "ctgan"), "params": ("ctgan.epochs=5",), "use_rows": 900,
                "synthetic_rows": 300, "train": 0.5, "prior": 0.3, "bandwidth": "scott"},
    "lira": {"target": "credit", "model": "mlp", "models": 16, "fpr": 0.05, "groups": "purpose"},
    "dp-audit": {"target": "credit", "epsilon": 2.0, "delta": 1e-6, "canaries": 200, "canary_kind": "mislabelled",
                 "model": "mlp", "epochs": 5},
    "fabrication": {"dataset": "mnist", "epsilon": "16/255", "steps": 12, "lam": 3.0, "attack": "icw",
                    "architecture": "resnet18"},
    "scores": {"fpr": (0.01, 0.05), "delta": 1e-6},
    "model": {"target": "credit", "attacks": ("loss", "rmia"), "reference_models": 2, "reference_family": "gbdt",
              "trust_skops_types": ("sklearn.tree._tree.Tree",)},
    "generate": {"generator": "ctgan", "rows": 77, "epochs": 3},
    "fpc-sim": {"population": 500, "train_size": 250, "models": 16, "repeats": 9},
    "selfcheck": {"quick": True},
    "dp-audit-model": {"target": "credit", "epsilon": 0.5, "delta": 1e-6, "included_column": "in training",
                       "trust_skops_types": ("sklearn.tree._tree.Tree",)},
}  # fmt: skip


def test_every_audit_and_tool_has_a_case_here():
    assert set(CHANGED) == set(ALL)


@pytest.mark.parametrize("name", sorted(ALL))
def test_the_reproduce_line_parses_back_to_the_same_settings(name):
    audit = ALL[name]
    settings = audit.settings(**CHANGED[name])
    settings.validate()
    paths = {spec.name: f"in put/{spec.name}.csv" for spec in audit.inputs}  # a space: the line must quote it
    outcome = Outcome(audit, value=None, inputs=Inputs({}, paths), settings=settings, seed=123)
    argv = shlex.split(outcome.command(json=None))[3:]
    if "out" in audit.outputs:
        argv += ["--out", "o.csv"]
    args = build_parser().parse_args(argv)
    assert audit.settings(**{n: getattr(args, n) for n in audit.settings.knobs()}) == settings
    assert args.seed == 123
    assert {spec.name: getattr(args, spec.name) for spec in audit.inputs} == paths


@pytest.mark.parametrize("name", sorted(ALL))
def test_knobs_have_labels_unique_flags_and_valid_defaults(name):
    settings_cls = ALL[name].settings
    knobs = settings_cls.knobs()
    assert all(k.label for k in knobs.values())
    flags = [settings_cls.flag(n) for n in knobs] + [s.cli_flag for s in ALL[name].inputs]
    assert len(flags) == len(set(flags))
    required = settings_cls.required()
    if not required:
        settings_cls().validate()  # the defaults are valid settings


def test_a_bound_or_a_choice_is_refused_in_one_sentence_naming_the_flag():
    lira = REGISTRY["lira"].settings
    with pytest.raises(InputError, match="--models must be a whole number from 2 to 1,024"):
        lira(target="y", models=5000).validate()
    with pytest.raises(InputError, match="--model must be one of logistic, mlp"):
        lira(target="y", model="forest").validate()
    with pytest.raises(InputError, match="--target"):
        lira().validate()
    with pytest.raises(InputError, match="--fpr"):
        REGISTRY["scores"].settings(fpr=(0.01, 0.9)).validate()  # each value of a list is checked


def test_rescore_takes_only_rescore_knobs():
    audit = REGISTRY["lira"]
    outcome = Outcome(audit, value=object(), inputs=Inputs({}), settings=audit.settings(target="y"), seed=0)
    with pytest.raises(ValueError, match="models need a new run"):
        outcome.rescore(models=16)
    assert outcome.rescore(fpr=0.01) is outcome  # nothing changed: nothing to do
    assert {n for n, k in audit.settings.knobs().items() if k.rescore} == {"fpr", "groups"}
    assert replace(outcome.settings, fpr=0.1).changed(outcome.settings) == {"fpr"}


def test_every_page_is_a_registered_audit_with_a_run_on_the_sample_flag():
    from pathlib import Path

    from ui.state import AUTORUN

    root = Path(__file__).resolve().parents[2]
    pages = {a.page for a in REGISTRY.values()}
    assert pages == {f"views/{p.name}" for p in (root / "views").glob("*.py")} - {"views/home.py"}
    assert set(AUTORUN) == set(REGISTRY)
