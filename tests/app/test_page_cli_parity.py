"""Same inputs, settings and seed: a page's JSON download is the CLI's ``--json`` file, byte for byte.

Every page shows the exact ``python -m audit_core ...`` line for its result ("Reproduce this");
each test drives the page with AppTest, moves settings off their defaults (seed, models,
alpha, prior, bandwidth scale, lambda), runs the page's own line verbatim (only the ``--json``
path changed) and compares the file with the page's download. The metric cards and the
decision box must say what the CLI prints. A seed other than 0 on purpose: a page that rebuilt
part of the run with its own seed would differ.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit_core.common.decision import KINDS
from tests.conftest import cli_json, click, command_argv, json_leaves, page_json, run_command
from ui import state

DECISION_BOXES = tuple(f"**{title}:" for title in KINDS.values())  # a decision box (any kind), not a failure

ROOT = Path(__file__).resolve().parents[2]
VIEWS = ROOT / "views"
GERMAN = ROOT / "sample_data" / "german_credit.csv"
SEED = 7


def _assert_same_decision(at: AppTest, cli: dict, stdout: str) -> None:
    """The page's decision box says the CLI's release decision, and its expander the verdict sentence, word for word."""
    boxes = [e.value for e in (*at.error, *at.warning, *at.info, *at.success) if e.value.startswith(DECISION_BOXES)]
    assert len(boxes) == 1
    assert cli["verdict"]["headline"] in boxes[0]
    assert boxes[0].startswith(f"**{KINDS[cli['verdict']['kind']]}: {cli['verdict']['answer']}.**")
    lines = stdout.strip().splitlines()
    assert lines[-1] == f"release decision: {cli['verdict']['level']}"
    assert lines[-2] in [m.value for m in at.markdown]  # the verdict sentence, word for word


# ----------------------------------------------------------------------------- LiRA


@pytest.fixture(scope="module")
def lira_page() -> AppTest:
    at = AppTest.from_file(str(VIEWS / "lira_calibration.py"), default_timeout=300).run()
    assert not at.exception
    m_input, seed_input = at.number_input[0], at.number_input[1]
    assert seed_input.label == "Seed"
    m_input.set_value(16)
    seed_input.set_value(SEED)
    click(at, "Train")
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]  # a high decision: red, no failure
    return at


@pytest.mark.slow
@pytest.mark.parametrize("fpr", [0.05, 0.1])
def test_lira_page_equals_its_command(lira_page: AppTest, fpr: float, tmp_path: Path, monkeypatch, capsys) -> None:
    at = lira_page
    at.select_slider(key=state.Lira.FPR).set_value(fpr).run()  # re-evaluates the trained models, never retrains
    assert not at.exception
    command = at.session_state["lira.downloads.command"]
    for part in ("--models 16", f"--fpr {fpr}", f"--seed {SEED}", "--data sample_data/german_credit.csv"):
        assert part in command
    text = run_command(command, tmp_path / "cli.json", monkeypatch)
    assert page_json(at, "lira.downloads") == text
    cli, (_, stdout) = json.loads(text), cli_json(command_argv(command), tmp_path / "again.json", capsys)
    cards = {m.label: m.value for m in at.metric}
    labels = {"naive": "naive", "post_processed": "PP, N(0,1)", "post_processed_t": "PP, Student-t",
              "per_sample_mean": "per-sample"}  # fmt: skip
    for key, label in labels.items():
        assert cards[label] == f"{100 * cli['tpr'][key]:.1f} %"
        lo, hi = cli["tpr_ci"][key]
        assert any(f"95 % CI {100 * lo:.1f}–{100 * hi:.1f} %" in c.value for c in at.caption)
    _assert_same_decision(at, cli, stdout)


@pytest.mark.slow
def test_lira_cli_json_is_byte_identical_across_runs(tmp_path: Path) -> None:
    """Same seed, same bytes: the wall-clock training time is not in the JSON."""
    import subprocess
    import sys

    texts = []
    for run in range(2):
        out = tmp_path / f"run{run}.json"
        cmd = [sys.executable, "-m", "audit_core", "lira", "--data", str(GERMAN), "--target", "credit",
               "--models", "16", "--fpr", "0.05", "--seed", str(SEED), "--json", str(out)]  # fmt: skip
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        assert "models in" in done.stderr  # the timing goes to stderr instead
        texts.append(out.read_bytes())
    assert texts[0] == texts[1]
    assert b"seconds" not in texts[0]


# ----------------------------------------------------------------------------- synthetic-data risk


@pytest.mark.slow
def test_synthetic_page_equals_its_command(tmp_path: Path, monkeypatch, capsys) -> None:
    at = AppTest.from_file(str(VIEWS / "synthetic_risk.py"), default_timeout=300)
    at.session_state[state.Synthetic.SOURCE] = "German credit – leaky synthetic"
    at.run()
    at.number_input(key=state.Synthetic.SEED).set_value(SEED)
    click(at, "Run the audit")
    at.slider(key=state.Synthetic.PRIOR).set_value(0.3).run()  # re-scores: prior and bandwidth reach the command
    at.select_slider(key=state.Synthetic.BANDWIDTH).set_value(1.4).run()
    assert not at.exception
    command = at.session_state["synthetic.command"]
    for part in ("--prior 0.3", "--bandwidth-scale 1.4", f"--seed {SEED}", "--train sample_data/german_credit/train.csv"):
        assert part in command
    text = run_command(command, tmp_path / "cli.json", monkeypatch)
    assert page_json(at, "synthetic") == text
    cli = json.loads(text)
    cards: dict[str, str] = {}
    for m in at.metric:  # the true-distribution attack's cards come first
        cards.setdefault(m.label, m.value)
    true = cli["attacks"]["true_distribution"]
    assert cards["AUC"] == f"{true['auc']:.3f}"
    for key, label in (("0.001", "0.1 %"), ("0.01", "1 %"), ("0.1", "10 %")):
        assert cards[f"TPR at {label} FPR"].startswith(f"{100 * true['tpr_at_fpr'][key]:.1f} %")
    _, stdout = cli_json(command_argv(command), tmp_path / "again.json", capsys)
    _assert_same_decision(at, cli, stdout)


# ----------------------------------------------------------------------------- score check


def test_score_check_page_equals_its_command(tmp_path: Path, monkeypatch) -> None:
    at = AppTest.from_file(str(VIEWS / "score_check.py"), default_timeout=120).run()
    [seed] = [n for n in at.number_input if n.label == "Seed"]
    seed.set_value(11)
    at.multiselect[0].set_value([0.01, 0.05])
    click(at, "Check the scores")
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]  # a high decision: red, no failure
    command = at.session_state["score_check.downloads.command"]
    assert "--seed 11" in command
    assert "--fpr 0.01,0.05" in command
    text = run_command(command, tmp_path / "cli.json", monkeypatch)
    assert page_json(at, "score_check.downloads") == text
    cli = json.loads(text)
    assert cli["settings"]["seed"] == 11
    shown = [m.value for m in at.metric if m.label == "epsilon ≥"]
    assert shown == [f"{a['epsilon_lower_bound']['epsilon']:.2f}" for a in cli["attacks"].values()]


# ----------------------------------------------------------------------------- generators, fabrication


def _without_timings(text: str) -> dict:
    summary = json.loads(text)
    for run in summary["generators"].values():
        run.pop("fit_seconds")  # wall-clock time: the one thing two runs cannot share
    return summary


@pytest.mark.slow
def test_compare_page_equals_its_command(tmp_path: Path, monkeypatch) -> None:
    at = AppTest.from_file(str(VIEWS / "generators.py"), default_timeout=300).run()
    at.radio(key=state.Generators.SOURCE).set_value("German credit (bundled sample)").run()
    at.multiselect(key="generators.names").set_value(["bootstrap", "population", "bayesian_network"])
    at.number_input(key="generators.use_rows").set_value(700)
    at.number_input(key="generators.seed").set_value(4)
    click(at, "Fit & compare")
    at.slider(key=state.Generators.PRIOR).set_value(0.3).run()  # a re-score: the command must carry it
    assert not at.exception
    command = at.session_state["generators.report.command"]
    for part in ("compare --data sample_data/german_credit.csv", "--use-rows 700", "--prior 0.3"):
        assert part in command
    cli = run_command(command, tmp_path / "cli.json", monkeypatch)
    assert _without_timings(page_json(at, "generators.report")) == _without_timings(cli)


@pytest.mark.slow
def test_fabrication_page_equals_its_command(tmp_path: Path, monkeypatch) -> None:
    at = AppTest.from_file(str(VIEWS / "fabrication.py"), default_timeout=300).run()
    at.slider[0].set_value(48)  # epsilon in /255
    at.number_input[0].set_value(6)  # attack steps
    [seed] = [n for n in at.number_input if n.label == "Seed"]
    seed.set_value(2)
    click(at, "Train, attack and measure")
    at.select_slider(key=state.Fabrication.LAMBDA).set_value(3.0).run()  # a re-score: the command must carry it
    assert not at.exception
    command = at.session_state["fabrication.report.command"]
    for part in ("--dataset digits", "--epsilon 48/255", "--steps 6", "--lambda 3.0", "--seed 2"):
        assert part in command
    page = json.loads(page_json(at, "fabrication.report"))
    cli = json.loads(run_command(command, tmp_path / "cli.json", monkeypatch))
    for (path, got), (path_cli, want) in zip(json_leaves(page), json_leaves(cli), strict=True):
        assert path == path_cli
        if isinstance(want, float) and isinstance(got, float):  # torch computes in float32: equal to its rounding
            assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9), path
        else:
            assert got == want, path
