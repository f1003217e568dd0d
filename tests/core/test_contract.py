"""The contract every audit implements (audit_core.contract) and the registry the front ends are built from."""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from audit_core.__main__ import build_parser
from audit_core.common.errors import InputError
from audit_core.common.limits import Bound
from audit_core.contract import Audit, Inputs, Outcome, Settings, knob, rescore, run, stage_key
from audit_core.registry import REGISTRY, TOOLS

ALL = {**REGISTRY, **TOOLS}

# Settings moved off their defaults, one per audit: the reproduce line must carry every one of them.
CHANGED = {
    "tabular": {"categorical": ("sex", "race"), "ignore": ("fnlwgt",), "bandwidth": 0.3, "bandwidth_scale": 1.4,
                "prior": 0.2, "disclosure": True, "secrets": ("income",), "n_attacks": 500, "link_k": 3, "groups": "sex"},
    "compare": {"generators": ("bootstrap", "ctgan"), "params": ("ctgan.epochs=5",), "use_rows": 900,
                "synthetic_rows": 300, "train": 0.5, "prior": 0.3, "bandwidth": "scott", "shadow": True,
                "shadow_targets": 7, "shadow_models": 12},
    "lira": {"target": "credit", "model": "mlp", "models": 16, "fpr": 0.05, "groups": "purpose"},
    "dp-audit": {"target": "credit", "epsilon": 2.0, "delta": 1e-6, "canaries": 200, "canary_kind": "mislabelled",
                 "model": "mlp", "epochs": 5},
    "fabrication": {"dataset": "mnist", "epsilon": 16 / 255, "steps": 12, "lam": 3.0, "attack": "icw",
                    "architecture": "resnet18"},
    "scores": {"fpr": (0.01, 0.05), "delta": 1e-6},
    "model": {"target": "credit", "attacks": ("loss", "rmia"), "reference_models": 2, "reference_family": "gbdt",
              "trust_skops_types": ("sklearn.tree._tree.Tree",)},
    "generate": {"generator": "ctgan", "rows": 77, "epochs": 3},
    "shadow": {"generator": "tvae", "generator_settings": '{"epochs": 3, "batch_size": 100}', "targets": 5,
               "target_rows": (4, 9), "shadow_models": 16, "rows": 900, "categorical": ("sex",), "ignore": ("fnlwgt",)},
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
    with pytest.raises(InputError, match="--models must be an even number from 8 to 1,024"):
        lira(target="y", models=5000).validate()
    with pytest.raises(InputError, match="--models must be an even number"):
        lira(target="y", models=17).validate()
    with pytest.raises(InputError, match="--model must be one of logistic, mlp"):
        lira(target="y", model="forest").validate()
    with pytest.raises(InputError, match="--target"):
        lira().validate()
    with pytest.raises(InputError, match="--fpr"):
        REGISTRY["scores"].settings(fpr=(0.01, 0.9)).validate()  # each value of a list is checked
    with pytest.raises(InputError, match="--fpr needs at least 1 value"):
        REGISTRY["scores"].settings(fpr=()).validate()
    with pytest.raises(InputError, match=r"--generators must be one of .*got 'gan'"):
        REGISTRY["compare"].settings(generators=("bootstrap", "gan")).validate()  # each item of a list knob


def test_open_bounds_and_a_choice_or_a_number():
    dp = REGISTRY["dp-audit"].settings
    with pytest.raises(InputError, match=r"--delta must be a number above 0 and at most 0\.1; got 0"):
        dp(target="y", epsilon=1.0, delta=0.0).validate()
    dp(target="y", epsilon=1.0, delta=1e-30).validate()  # any positive delta up to 0.1
    tab = REGISTRY["tabular"].settings
    for ok in ("scott", "silverman", "cv", 0.2):
        tab(bandwidth=ok).validate()
    for bad, said in (("wide", "one of silverman, scott, cv, or a number above 0"), (0.0, "above 0"), (-1.0, "above 0")):
        with pytest.raises(InputError, match=said):
            tab(bandwidth=bad).validate()
    parse = tab.knobs()["bandwidth"].parser("silverman")
    assert parse("Scott") == "scott"
    assert parse("0.25") == 0.25


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_knob_value_on_the_cli_is_checked_by_its_knob_alone(name):
    """Validate once: argparse only converts text (its one error: not a number); every rule is the knob's."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[name]
    for action in sub._actions:
        if action.dest in ALL[name].settings.knobs() and action.choices is not None:
            assert action.choices == ALL[name].settings.knobs()[action.dest].choices


def test_rescore_takes_only_rescore_knobs():
    audit = REGISTRY["fabrication"]
    outcome = Outcome(audit, value=object(), inputs=Inputs({}), settings=audit.settings(), seed=0)
    with pytest.raises(ValueError, match="steps need a new run"):
        rescore(outcome, replace(outcome.settings, steps=16))
    assert rescore(outcome, outcome.settings) is outcome  # nothing changed: nothing to do
    assert {n for n, k in REGISTRY["lira"].settings.knobs().items() if k.rescore} == {"groups"}
    assert replace(outcome.settings, lam=0.1).changed(outcome.settings) == {"lam"}


def test_stages_of_the_audits():
    """Which knobs retrain (setup), which re-run the attacks (run) and which only re-score."""
    stages = {name: {st: ALL[name].settings.stage_of(st) for st in ("setup", "rescore")} for name in ALL}
    assert stages["fabrication"] == {"setup": {"dataset", "architecture", "model_format", "trust_torchscript"},
                                     "rescore": {"lam"}}  # fmt: skip
    assert stages["lira"] == {"setup": {"target", "model", "models"}, "rescore": {"groups"}}
    assert stages["tabular"] == {"setup": {"categorical", "numeric", "ignore"},
                                 "rescore": {"bandwidth", "bandwidth_scale", "prior", "groups"}}  # fmt: skip
    for name, audit in ALL.items():  # a setup knob needs a setup stage; a rescore knob a rescore
        assert bool(stages[name]["setup"]) == (audit.prepare is not None), name
        assert bool(stages[name]["rescore"]) == (audit.rescore is not None), name


@dataclass(frozen=True)
class _Value:
    setup: int
    k: int
    factor: float = 1.0

    def to_json(self) -> dict:
        return {"value": self.setup * self.k * self.factor}


@dataclass(frozen=True)
class _Knobs(Settings):
    a: int = knob(1, "a", stage="setup", bound=Bound("a", 0, 10))
    k: int = knob(2, "k", bound=Bound("k", 0, 10))
    factor: float = knob(1.0, "factor", stage="rescore", bound=Bound("factor", 0, 10, integer=False))


def _counting_audit(calls: dict[str, int]) -> Audit:
    def prepare(inputs, s, ctx):
        calls["prepare"] += 1
        assert (s.k, s.factor) == (2, 1.0)  # a setup never sees a later stage's knobs
        return s.a * 10

    def run_(inputs, s, ctx):
        calls["run"] += 1
        assert s.factor == 1.0  # the run sees re-score knobs at their defaults
        return _Value(ctx.prepared, s.k)

    return Audit(name="toy", title="t", icon="", question="q", needs="", method="", inputs=(), settings=_Knobs,
                 prepare=prepare, run=run_, rescore=lambda v, s, ctx: replace(v, factor=s.factor),
                 verdict=lambda v: "")  # fmt: skip


def test_the_setup_stage_is_kept_in_the_cache_and_re_scoring_equals_a_fresh_run():
    calls = {"prepare": 0, "run": 0}
    audit, cache = _counting_audit(calls), {}
    first = run(audit, Inputs({}), _Knobs(k=3, factor=2.0), seed=0, cache=cache)
    assert first.to_json() == {"value": 60.0}
    assert calls == {"prepare": 1, "run": 1}
    second = run(audit, Inputs({}), _Knobs(k=4), seed=0, cache=cache)  # a run knob: the setup is kept
    assert second.to_json() == {"value": 40.0}
    assert calls == {"prepare": 1, "run": 2}
    run(audit, Inputs({}), _Knobs(a=2), seed=0, cache=cache)  # a setup knob: a new setup
    run(audit, Inputs({}), _Knobs(), seed=1, cache=cache)  # a new seed: a new setup
    assert calls == {"prepare": 3, "run": 4}
    run(audit, Inputs({}), _Knobs(), seed=1)  # no cache (the CLI): every stage runs
    assert calls == {"prepare": 4, "run": 5}
    assert rescore(second, replace(second.settings, factor=2.0)).to_json() == {"value": 80.0}
    assert stage_key(audit, Inputs({}), _Knobs(factor=3.0), 0, "run") == stage_key(audit, Inputs({}), _Knobs(), 0, "run")


PAGE_IMPORTS = re.compile(r"^audit_core\.(registry|contract|common\.(errors|glossary|outputs)|\w+\.(spec|figures|verdict))$")
"""What a page may import from audit_core: the registry, the contract, an audit's spec (its typed entry, settings
and choice lists), figures and verdicts (ARCHITECTURE.md)."""

AUDIT_PACKAGES = ("synthetic", "lira", "fabrication", "scores", "model", "dp", "selfcheck")


def _imports(path: Path) -> set[str]:
    """Every ``audit_core...`` module ``path`` imports (at the top or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("audit_core")}


def test_the_layers_shared_code_knows_no_audit_and_ui_reaches_only_specs_figures_and_verdicts():
    """Drawing the layers: common/ and the contract import no audit package; ui/ and views/ reach an audit only
    through its spec, figures and verdict (choice lists come through the spec; the self-check through the registry)."""
    root = Path(__file__).resolve().parents[2]
    audit = re.compile(rf"^audit_core\.({'|'.join(AUDIT_PACKAGES)})(\.|$)")
    for path in [*(root / "audit_core" / "common").rglob("*.py"), root / "audit_core" / "contract.py"]:
        bad = sorted(m for m in _imports(path) if audit.match(m))
        assert not bad, f"{path.relative_to(root)} imports {bad}"
    for path in [*(root / "ui").glob("*.py"), *(root / "views").glob("*.py"), root / "app.py"]:
        bad = sorted(m for m in _imports(path) if audit.match(m) and not m.endswith((".spec", ".figures", ".verdict")))
        assert not bad, f"{path.relative_to(root)} imports {bad}"


def test_pages_import_the_registry_the_contract_figures_and_ui_only():
    root = Path(__file__).resolve().parents[2]
    for page in (root / "views").glob("*.py"):
        for node in ast.walk(ast.parse(page.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("audit_core"):
                assert PAGE_IMPORTS.match(node.module), f"{page.name} imports {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("audit_core") for a in node.names), page.name


def test_no_page_builds_an_outcome_or_a_cache_key():
    root = Path(__file__).resolve().parents[2]
    for page in (root / "views").glob("*.py"):
        text = page.read_text()
        for word in ("Outcome(", "fingerprint", "stage_key", "cached_run", "contract.run("):
            assert word not in text, f"{page.name}: {word}"


def test_every_page_is_a_registered_audit_with_a_run_on_the_sample_flag():
    from ui.state import AUTORUN

    root = Path(__file__).resolve().parents[2]
    pages = {a.page for a in REGISTRY.values()}
    assert pages == {f"views/{p.name}" for p in (root / "views").glob("*.py")} - {"views/home.py"}
    assert set(AUTORUN) == set(REGISTRY)


def test_one_document_per_audit_the_report_carries_the_registry_title_and_the_json():
    """The report's title and question are the registry's, its JSON the --json document (no second document)."""
    from audit_core.common.report import command_block, to_json_text
    from audit_core.common.table_files import read_table

    root = Path(__file__).resolve().parents[2]
    audit = REGISTRY["scores"]
    table = read_table(root / "sample_data" / "scores.csv", name="scores.csv")
    outcome = run(audit, Inputs({"scores": table}, {"scores": "sample_data/scores.csv"}), audit.settings(), seed=3)
    report = outcome.report()
    assert (report.title, report.question) == (audit.title, audit.question)
    assert to_json_text(report.metrics) == to_json_text(outcome.to_json())
    assert audit.title in report.to_html()
    assert command_block(outcome.command()) in report.to_html()  # the command, one flag a line (never a broken token)
    titles = [a.title for a in ALL.values()]
    assert len(titles) == len(set(titles))  # one title per audit
