"""The Python API (audit_core/api.py): the CLI's JSON from DataFrames, the CLI's sentence for a bad setting."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import pandas as pd
import pytest

import audit_core
from audit_core import InputError, audit_model, audit_table, check_dp_claim, check_scores, run_audit
from audit_core.__main__ import main
from audit_core.common.table_files import read_table
from audit_core.registry import REGISTRY, TOOLS

ROOT = Path(__file__).resolve().parents[2]
GERMAN = ROOT / "sample_data" / "german_credit"


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the CLI in this process from the project folder: its exit status and its stderr."""
    capsys.readouterr()
    status = main(["--quiet", *argv])
    return status, capsys.readouterr().err


def test_import_audit_core_is_cheap_and_the_api_is_one_import():
    import subprocess
    import sys

    code = ("import sys, audit_core; print('pandas' in sys.modules); from audit_core import audit_table; "
            "print(audit_table.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    assert out == ["False", "audit_core.api"]
    assert set(audit_core.__all__) >= {"audit_table", "audit_model", "check_dp_claim", "check_scores", "compare_generators"}


def test_check_scores_gives_the_cli_json_and_records(tmp_path, capsys):
    result = check_scores(ROOT / "sample_data" / "scores.csv", fpr=[0.001, 0.01], delta=1e-5, seed=3)
    status, _ = _cli(["scores", "--scores", "sample_data/scores.csv", "--fpr", "0.001,0.01", "--seed", "3",
                      "--json", str(tmp_path / "s.json"), "--records", str(tmp_path / "r.csv")], capsys)  # fmt: skip
    assert status == 0
    assert result.to_json() == (tmp_path / "s.json").read_text()
    assert result.to_dict()["verdict"]["level"] == result.verdict.level == "high"  # the sample's lira attack leaks
    records = pd.read_csv(tmp_path / "r.csv")
    pd.testing.assert_frame_equal(result.records.reset_index(drop=True), records, check_dtype=False)
    assert shlex.split(result.command)[3:] == ["scores", "--scores", str(ROOT / "sample_data" / "scores.csv"), "--fpr",
                                               "0.001,0.01", "--seed", "3", "--json", "out.json"]  # fmt: skip


@pytest.mark.slow
def test_audit_table_from_dataframes_gives_the_cli_json_a_report_and_a_short_repr(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    frames = {r: read_table(GERMAN / f"{f}.csv", name=r) for r, f in
              (("train", "train"), ("holdout", "holdout"), ("synthetic", "synthetic_leaky"))}  # fmt: skip
    result = audit_table(frames["train"], frames["holdout"], frames["synthetic"], prior=0.4, bandwidth="scott")
    status, _ = _cli(["tabular", "--train", f"{GERMAN}/train.csv", "--holdout", f"{GERMAN}/holdout.csv", "--synthetic",
                      f"{GERMAN}/synthetic_leaky.csv", "--prior", "0.4", "--bandwidth", "scott",
                      "--json", str(tmp_path / "t.json")], capsys)  # fmt: skip
    assert status == 0
    assert result.to_json() == (tmp_path / "t.json").read_text()
    assert result.verdict.level == "high"  # 100 of the 400 synthetic rows are training rows
    text = repr(result)
    assert text.startswith("<AuditResult tabular: high: ")
    assert len(text) < 1000
    assert "AUC" in text
    html = result.to_html(tmp_path / "r.html").read_text()
    assert result.outcome.audit.question in html
    assert result.verdict.headline[:40] in html
    assert list(result.records.columns[:3]) == ["source", "row", "is_member"]


def _bad_value(knob, default):
    """A value outside the knob's bound, or None when the knob has no bound to break."""
    bound = knob.bound
    if bound is None or isinstance(default, bool):
        return None
    value = bound.high * 10 + 1 if bound.high < 1e12 else bound.low - 1
    value = int(value) if bound.integer else float(value)
    return (value,) if isinstance(default, tuple) else value


@pytest.mark.parametrize("name", [*REGISTRY, *TOOLS])
def test_every_bounded_setting_is_refused_with_the_cli_sentence(name, tmp_path, capsys):
    """The API validates through the knobs: the InputError is the CLI's line, for every bounded knob of every audit."""
    audit = {**REGISTRY, **TOOLS}[name]
    inputs = {s.name: str(tmp_path / "never-read.csv") for s in audit.inputs if s.required}
    knobs = audit.settings.knobs()
    required = {n: 1 if knobs[n].bound is not None else knobs[n].choices[0] if knobs[n].choices else "x"
                for n in audit.settings.required()}  # fmt: skip
    defaults = audit.settings.defaults()
    checked = 0
    for field, knob in audit.settings.knobs().items():
        bad = _bad_value(knob, defaults.get(field))
        if bad is None:
            continue
        with pytest.raises(InputError) as err:
            run_audit(name, **inputs, **{**required, field: bad})
        argv = [name, *[a for k, v in inputs.items() for a in (next(s.cli_flag for s in audit.inputs if s.name == k), v)]]
        argv += [a for k, v in {**required, field: bad}.items()
                 for a in (audit.settings.flag(k), ",".join(map(str, v)) if isinstance(v, tuple) else str(v))]  # fmt: skip
        argv += ["--out", str(tmp_path / "never-written.csv")] if "out" in audit.outputs else []
        status, stderr = _cli(argv, capsys)
        assert status == 2
        assert stderr.strip() == f"error: {err.value}", field
        checked += 1
    assert checked or name == "selfcheck"


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"bandwidth": -1.0}, "--bandwidth must be a number above 0"),
        ({"bandwidth_scale": 0}, "--bandwidth-scale must be"),
        ({"bandwidth": "widest"}, "--bandwidth must be one of"),
        ({"n_attacks": "many"}, "--n-attacks: expected"),
        ({"bandwith": 0.1}, "tabular has no setting 'bandwith'"),
    ],
)
def test_settings_the_computation_would_clamp_are_refused_before_any_work(settings, says):
    with pytest.raises(InputError, match=None) as err:
        audit_table(GERMAN / "train.csv", GERMAN / "holdout.csv", GERMAN / "synthetic_leaky.csv", **settings)
    assert str(err.value).startswith(says) or says in str(err.value), str(err.value)


def test_the_page_s_refusals_are_the_api_s(capsys):
    """8 models cannot measure alpha = 1e-4 on German Credit: refused by the audit's check, as on the page and CLI."""
    with pytest.raises(InputError) as err:
        run_audit("lira", data=ROOT / "sample_data" / "german_credit.csv", target="credit", models=8, fpr=1e-4)
    status, stderr = _cli(["lira", "--data", "sample_data/german_credit.csv", "--target", "credit", "--models", "8",
                           "--fpr", "1e-4", "--json", "/dev/null"], capsys)  # fmt: skip
    assert status == 2
    assert stderr.strip() == f"error: {err.value}"


def test_each_function_routes_to_its_audit():
    with pytest.raises(InputError, match="--reference-models"):
        audit_model(GERMAN / "model_mlp.skops", GERMAN / "train.csv", GERMAN / "holdout.csv", target="credit",
                    reference_models=10**9)  # fmt: skip
    with pytest.raises(InputError, match="--canaries"):
        check_dp_claim(ROOT / "sample_data" / "german_credit.csv", target="credit", epsilon=1, canaries=10**9)
    with pytest.raises(InputError, match="--included-column"):
        check_dp_claim(model=GERMAN / "model_mlp.skops", canaries_file=GERMAN / "train.csv", target="credit", epsilon=1,
                       included_column="nope")  # fmt: skip
    with pytest.raises(InputError, match="not both"):
        check_dp_claim(ROOT / "sample_data" / "german_credit.csv", model=GERMAN / "model_mlp.skops")
    with pytest.raises(InputError, match="needs holdout"):
        audit_table(GERMAN / "train.csv", None, GERMAN / "synthetic_leaky.csv")
    with pytest.raises(InputError, match="must be a DataFrame, a file path or a database URL"):
        check_scores(io.BytesIO(b"score,is_member\n"))
