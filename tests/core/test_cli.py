"""The command line's shared contract: exit 2 and one line on stderr for bad input."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit_core", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_missing_flag_is_one_line_exit_2():
    r = _run("tabular", "--train", "x.csv")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "--holdout" in r.stderr


@pytest.mark.slow
def test_bad_epsilon_is_one_line_exit_2():
    r = _run("fabrication", "--dataset", "digits", "--epsilon", "eight")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_every_subcommand_has_a_help_page():
    from audit_core.registry import REGISTRY, TOOLS

    for name in ["", *REGISTRY, *TOOLS]:
        r = _run(*([name] if name else []), "--help")
        assert r.returncode == 0, r.stderr
        assert "usage: python -m audit_core" in r.stdout


FLAGS_BEFORE_THE_REGISTRY = {  # every flag the hand-written parser had: pipelines rely on them (docs/contract.md)
    "tabular": "--train --holdout --synthetic --auxiliary --categorical --numeric --ignore --bandwidth --prior "
    "--bandwidth-scale --seed --json --records --html --pdf --disclosure --known --link-a --link-b --secrets "
    "--n-attacks --link-k",
    "generate": "--train --generator --rows --categorical --ignore --epochs --seed --out",
    "lira": "--data --target --models --model --fpr --seed --json --html --pdf",
    "fpc-sim": "--population --train-size --models --repeats --seed --json",
    "fabrication": "--images --model --architecture --dataset --epsilon --steps --lambda --attack --seed --json --html --pdf",
    "scores": "--scores --fpr --delta --seed --json --html --pdf",
}


def test_the_generated_cli_keeps_every_flag_it_had():
    from audit_core.__main__ import _subparser, build_parser

    parser = build_parser()
    for command, flags in FLAGS_BEFORE_THE_REGISTRY.items():
        have = {s for a in _subparser(parser, command)._actions for s in a.option_strings}
        assert set(flags.split()) | {"--scheduler", "--workers", "--quiet"} <= have, command


def _compare(*args: str) -> subprocess.CompletedProcess:
    return _run("--quiet", "compare", "--data", "sample_data/german_credit.csv", "--generators", "bootstrap,population", *args)


@pytest.mark.slow
def test_compare_with_nothing_to_compare_is_a_refusal_not_a_result():
    """Both once exited 0 with "No generator completed" after trying every generator."""
    columns = (ROOT / "sample_data" / "german_credit.csv").read_text().splitlines()[0]
    for args, words in (
        (("--ignore", columns), "Every column of the real table is ignored; un-ignore at least one column to compare."),
        (("--rows", "1"), "The number of synthetic rows must be at least 20 (the audit needs that many synthetic "
         "records); got 1."),
    ):
        r = _compare(*args)
        assert r.returncode == 2, r.stdout
        assert r.stderr.strip() == f"error: {words}"
        assert r.stdout == ""


@pytest.mark.slow
def test_nan_and_infinite_generator_settings_are_refused():
    for value in ("nan", "NaN", "inf", "-inf"):
        r = _compare("--params", f"bootstrap.noise={value}")
        assert r.returncode == 2
        assert r.stderr.strip() == f"error: --params bootstrap.noise must be a number from 0 to 1; got {float(value)}."


@pytest.mark.slow
def test_lira_unknown_target_lists_every_column_and_suggests_the_closest():
    """The probe's case: the sentence listed the first 20 of 21 columns, so the right one ('credit') was missing."""
    columns = (ROOT / "sample_data" / "german_credit.csv").read_text().splitlines()[0].split(",")
    r = _run("--quiet", "lira", "--data", "sample_data/german_credit.csv", "--target", "Credit ")
    assert r.returncode == 2
    text = r.stderr.strip()
    assert text.startswith("error: The target column 'Credit ' is not in the table; its 21 columns are 'status', 'duration'")
    assert all(f"'{c}'" in text for c in columns)
    assert text.endswith(", 'credit'; did you mean 'credit'?")
    assert len(text.splitlines()) == 1


def test_the_contract_document_lists_every_flag_as_help_prints_it():
    """docs/contract.md's flag blocks are what ``--help`` prints (``python docs/update_contract.py`` rewrites them)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("update_contract", ROOT / "docs" / "update_contract.py")
    update = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(update)
    text = update.DOC.read_text()
    assert update.updated(text) == text, "docs/contract.md is out of date: run python docs/update_contract.py"
    from audit_core.registry import REGISTRY, TOOLS

    assert {m.group("name") for m in update.BLOCK.finditer(text)} == {*REGISTRY, *TOOLS}


@pytest.mark.slow
def test_progress_is_lines_only_when_asked_and_a_late_refusal_stays_one_line(tmp_path, capsys):
    """Without a terminal: no progress, so a refusal found after the run (an output that cannot be written) is the
    only line on stderr; ``--progress`` prints the steps as lines for a log; on a terminal one line is redrawn."""
    import io

    import numpy as np
    import pandas as pd

    from audit_core.__main__ import _Progress, main

    scores = tmp_path / "scores.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"score": rng.normal(size=300), "is_member": rng.integers(0, 2, 300)}).to_csv(scores, index=False)
    assert main(["scores", "--scores", str(scores), "--json", "/dev/full"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["error: Writing --json /dev/full failed (No space left on device)."]
    from tests.hostile_inputs import canary_table
    from tests.model_files import two_class_onnx

    model, canaries = tmp_path / "m.onnx", tmp_path / "canaries.csv"
    model.write_bytes(two_class_onnx())
    canary_table().to_csv(canaries, index=False)
    dp = ["dp-audit-model", "--model", str(model), "--canaries-file", str(canaries), "--target", "y", "--epsilon", "1"]
    assert main(dp) == 0
    assert "%]" not in capsys.readouterr().err  # stderr is no terminal here
    assert main(["--progress", *dp]) == 0
    assert "[100.0 %] Done" in capsys.readouterr().err.splitlines()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stderr", terminal)
        shown = _Progress(quiet=False, lines=False)
        shown(0.5, "half way")
        shown.clear()
    assert terminal.getvalue() == "\r\x1b[K[ 50.0 %] half way\r\x1b[K"  # drawn in place, then erased
