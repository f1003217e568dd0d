"""The ``python -m audit_core tabular`` contract (docs/contract.md): flags, JSON keys, records CSV, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from audit_core.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT / "sample_data" / "adult"


def _args(**paths: str | Path) -> list[str]:
    base = {
        "train": ADULT / "train.csv",
        "holdout": ADULT / "holdout.csv",
        "synthetic": ADULT / "synthetic_leaky.csv",
    }
    base.update(paths)
    out = ["--quiet", "tabular"]
    for key, value in base.items():
        out += [f"--{key}", str(value)]
    return out


@pytest.mark.slow
def test_leaky_sample_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js, rec, html = tmp_path / "out.json", tmp_path / "records.csv", tmp_path / "report.html"
    argv = [*_args(auxiliary=ADULT / "auxiliary.csv"), "--seed", "3", "--json", str(js), "--records", str(rec)]
    rc = main([*argv, "--html", str(html)])
    assert rc == 0
    summary = json.loads(js.read_text())
    train_rows = len(pd.read_csv(ADULT / "train.csv"))
    assert summary["n_members"] == summary["n_non_members"] == train_rows
    assert summary["n_synthetic"] == len(pd.read_csv(ADULT / "synthetic_leaky.csv"))
    for name in ("true_distribution", "realistic"):
        attack = summary["attacks"][name]
        assert {"auc", "tpr_at_fpr", "accuracy", "precision", "recall", "f1"} <= set(attack)
        assert set(attack["tpr_at_fpr"]) == {"0.001", "0.01", "0.1"}
        # The leaky table copies training rows: far above chance at 1 % FPR.
        assert attack["tpr_at_fpr"]["0.01"] > 0.05
    assert {"threshold", "accuracy", "precision", "recall", "f1"} <= set(summary["attacks"]["distance_threshold"])
    records = pd.read_csv(rec)
    assert list(records.columns[:6]) == ["source", "row", "is_member", "distance", "p_member_true", "p_member_realistic"]
    assert len(records) == summary["n_members"] + summary["n_non_members"]
    assert set(records["source"]) == {"train", "holdout"}
    assert records["row"].min() >= 0
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "most exposed" in page
    copies = summary["exact_copies"]
    assert copies["train_copies"] == 205  # make_samples.py copied 200 training rows; 5 more occur by chance
    assert copies["holdout_copies"] == 4
    assert copies["excess"]
    assert copies["p_value"] < 1e-40
    assert copies["test"].startswith("one-sided Fisher exact test")
    assert summary["overlaps"]["train_in_synthetic"]["rows"] == 205
    assert {"holdout_in_train", "auxiliary_in_train", "auxiliary_in_synthetic"} <= set(summary["overlaps"])
    out = capsys.readouterr().out
    assert "UNSAFE to release as it is: 205 of the 2,000 training rows (10.2 %) appear verbatim" in out
    assert "verbatim copies 205 of 2000 training rows" in out.splitlines()[0]


@pytest.mark.slow
def test_parquet_inputs_and_column_flags(tmp_path: Path) -> None:
    for name in ("train", "holdout"):
        pd.read_csv(ADULT / f"{name}.csv").to_parquet(tmp_path / f"{name}.parquet")
    js = tmp_path / "out.json"
    argv = _args(train=tmp_path / "train.parquet", holdout=tmp_path / "holdout.parquet")
    rc = main([*argv, "--categorical", "education_num", "--ignore", "native_country", "--json", str(js)])
    assert rc == 0
    summary = json.loads(js.read_text())
    assert "education_num" in summary["columns"]["categorical"]
    assert summary["columns"]["ignored"] == ["native_country"]
    assert summary["auxiliary_source"] == "holdout"


def _small(tmp_path: Path) -> dict[str, Path]:
    frame = pd.DataFrame({"age": range(40), "city": ["a", "b"] * 20})
    paths = {}
    for name in ("train", "holdout", "synthetic"):
        paths[name] = tmp_path / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    return paths


BAD_INPUTS = {  # case -> (change to the files, words the one-line message must contain)
    "missing file": (lambda p: {"synthetic": p["synthetic"].with_name("nope.csv")}, "no file"),
    "empty file": (lambda p: (p["holdout"].write_text(""), {})[1], "empty"),
    "header only": (lambda p: (p["holdout"].write_text("age,city\n"), {})[1], "no rows"),
    "mismatched columns": (
        lambda p: (pd.DataFrame({"age": [1, 2], "town": ["a", "b"]}).to_csv(p["synthetic"], index=False), {})[1],
        "town",
    ),
    "text in numeric column": (
        lambda p: (p["synthetic"].write_text("age,city\n" + "1,a\n" * 30 + "old,b\n"), {})[1],
        "old",
    ),
    "not UTF-8": (lambda p: (p["train"].write_bytes("age,city\n1,Zürich\n".encode("latin-1")), {})[1], "UTF-8"),
    "too few rows": (lambda p: (p["train"].write_text("age,city\n1,a\n2,b\n"), {})[1], "at least"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_table_exits_2_with_one_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = _small(tmp_path)
    change, words = BAD_INPUTS[case]
    paths.update(change(paths))
    rc = main(_args(**paths))
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith("error:")
    assert len(err.splitlines()) == 1
    assert words in err


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--bandwidth", "wide"], "bandwidth"),
        (["--bandwidth", "-0.1"], "bandwidth"),
        (["--prior", "1.2"], "prior"),
        (["--categorical", "no_such_column"], "no_such_column"),
        (["--categorical", "age", "--numeric", "age"], "both"),
        (["--json", "/no/such/folder/out.json"], "folder"),
    ],
)
def test_bad_flags_exit_2_with_one_line(flags: list[str], match: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:  # a value the flag's own parser refuses stops in argparse (SystemExit 2), the others in the audit (return 2)
        rc = main([*_args(**_small(tmp_path)), *flags])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1
    assert match in err


def test_one_file_as_train_holdout_and_synthetic_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    same = ADULT / "train.csv"
    rc = main(_args(train=same, holdout=same, synthetic=same))
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1
    assert "2,000 of the 2,000 holdout rows also appear verbatim in the training table" in err


@pytest.mark.slow
def test_module_entry_point_exit_code(tmp_path: Path) -> None:
    """The real ``python -m audit_core`` process: status 2, one line, no traceback."""
    argv = _args(train=tmp_path / "missing.csv")
    proc = subprocess.run(
        [sys.executable, "-m", "audit_core", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr
    missing_flag = subprocess.run(
        [sys.executable, "-m", "audit_core", "tabular", "--train", "x.csv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert missing_flag.returncode == 2
    assert len(missing_flag.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- release decision and --fail-on
@pytest.mark.slow
@pytest.mark.parametrize(("synthetic", "fail_on", "status"), [
    ("synthetic_leaky", "high", 3), ("synthetic_leaky", "elevated", 3), ("synthetic_gaussian_copula", "elevated", 0),
])  # fmt: skip
def test_fail_on_gates_a_pipeline_on_the_verdict(tmp_path: Path, capsys, synthetic: str, fail_on: str, status: int) -> None:
    """Exit 3 when the decision reaches --fail-on, after every output is written (exit 2 stays bad input)."""
    js, html = tmp_path / "out.json", tmp_path / "report.html"
    argv = [*_args(synthetic=ADULT / f"{synthetic}.csv", auxiliary=ADULT / "auxiliary.csv"), "--json", str(js),
            "--html", str(html), "--fail-on", fail_on]  # fmt: skip
    assert main(argv) == status
    verdict = json.loads(js.read_text())["verdict"]
    assert set(verdict) >= {"level", "headline", "reasons", "next_steps"}  # keys are added, never renamed
    assert verdict["kind"] == "release"
    assert verdict["rules"]
    assert verdict["level"] == ("high" if synthetic == "synthetic_leaky" else "low")
    assert html.exists()
    assert "Release decision" in html.read_text()
    out, err = capsys.readouterr()
    assert out.strip().splitlines()[-1] == f"release decision: {verdict['level']}"
    assert (f"--fail-on {fail_on}" in err) == (status == 3)


def test_fail_on_takes_only_a_level(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*_args(), "--fail-on", "low"])
    assert exc.value.code == 2
    assert "--fail-on" in capsys.readouterr().err
