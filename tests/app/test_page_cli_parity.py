"""Same inputs, settings and seed: the page shows what the CLI prints (issue: page or CLI, same numbers).

Each page is driven with AppTest and its JSON summary (``st.session_state[f"{key}.metrics"]``,
kept by ``ui.common.report_downloads`` from the same ``to_json()`` the CLI writes) is compared
with ``python -m audit_core ... --json`` run with the same settings; so are the numbers on the
metric cards and the verdict sentence. A seed other than 0 is used on purpose: a page that
rebuilt part of the run with its own seed would differ.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit_core.__main__ import main
from audit_core.common.report import to_json_text
from ui import state

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "views"
GERMAN = ROOT / "sample_data" / "german_credit.csv"
ADULT = ROOT / "sample_data" / "adult"
SEED = 7


def _plain(obj) -> dict:
    """The JSON as a file would hold it (numpy values converted, NaN as null)."""
    return json.loads(to_json_text(obj))


def _cli(argv: list[str], tmp_path: Path, capsys) -> tuple[dict, str]:
    out = tmp_path / "cli.json"
    capsys.readouterr()
    assert main(["--quiet", *argv, "--json", str(out)]) == 0
    return json.loads(out.read_text()), capsys.readouterr().out


# ----------------------------------------------------------------------------- LiRA


@pytest.fixture(scope="module")
def lira_page() -> AppTest:
    at = AppTest.from_file(str(PAGES / "lira_calibration.py"), default_timeout=300)
    at.run()
    assert not at.exception
    m_input, seed_input = at.number_input[0], at.number_input[1]
    assert seed_input.label == "Seed"
    m_input.set_value(16)
    seed_input.set_value(SEED)
    at.button[0].click().run()
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith("**Release decision")]  # a high decision: red, no failure
    return at


def _lira_cards(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _assert_same_decision(at: AppTest, cli: dict, stdout: str) -> None:
    """The page's decision box says the CLI's release decision, and its expander the verdict sentence, word for word."""
    boxes = [e.value for e in (*at.error, *at.warning, *at.success) if e.value.startswith("**Release decision")]
    assert len(boxes) == 1
    assert cli["verdict"]["headline"] in boxes[0]
    assert boxes[0].startswith(f"**Release decision: {cli['verdict']['level'].upper()}.**")
    lines = stdout.strip().splitlines()
    assert lines[-1] == f"release decision: {cli['verdict']['level']}"
    assert lines[-2] in [m.value for m in at.markdown]  # the verdict sentence, word for word


@pytest.mark.parametrize("fpr", [0.05, 0.1])
def test_lira_page_equals_cli(lira_page: AppTest, fpr: float, tmp_path: Path, capsys) -> None:
    at = lira_page
    if at.select_slider(key=state.Lira.FPR).value != fpr:
        at.select_slider(key=state.Lira.FPR).set_value(fpr).run()  # re-scores the trained pool, never retrains
        assert not at.exception
    page = _plain(at.session_state["lira.downloads.metrics"])
    cli, stdout = _cli(
        ["lira", "--data", str(GERMAN), "--target", "credit", "--models", "16", "--fpr", str(fpr), "--seed", str(SEED)],
        tmp_path,
        capsys,
    )
    assert (page["n_models"], page["fpr"]) == (16, fpr)
    assert page == cli  # the report's JSON is the CLI's --json document, exactly
    cards = _lira_cards(at)
    labels = {
        "naive": "naive",
        "post_processed": "PP, N(0,1)",
        "post_processed_t": "PP, Student-t",
        "per_sample_mean": "per-sample",
    }
    for key, label in labels.items():
        assert cards[label] == f"{100 * cli['tpr'][key]:.1f} %"
        lo, hi = cli["tpr_ci"][key]
        assert any(c.value.startswith(f"95 % CI {100 * lo:.1f}–{100 * hi:.1f} %") for c in at.caption)
    _assert_same_decision(at, cli, stdout)


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


@pytest.mark.parametrize(
    ("source", "synthetic"),
    [("Adult – leaky synthetic (some training rows copied)", "synthetic_leaky")],
)
def test_synthetic_page_equals_cli_tabular(source: str, synthetic: str, tmp_path: Path, capsys) -> None:
    at = AppTest.from_file(str(PAGES / "synthetic_risk.py"), default_timeout=300)
    at.session_state[state.Synthetic.SOURCE] = source
    at.run()
    assert not at.exception
    at.number_input(key=state.Synthetic.SEED).set_value(SEED)
    [run] = [b for b in at.button if "Run the audit" in b.label]
    run.click().run()
    assert not at.exception
    page = _plain(at.session_state["synthetic.metrics"])
    cli, stdout = _cli(
        ["tabular", "--train", str(ADULT / "train.csv"), "--holdout", str(ADULT / "holdout.csv"),
         "--synthetic", str(ADULT / f"{synthetic}.csv"), "--auxiliary", str(ADULT / "auxiliary.csv"),
         "--seed", str(SEED)],
        tmp_path,
        capsys,
    )  # fmt: skip
    assert page == cli
    cards: dict[str, str] = {}
    for m in at.metric:  # the true-distribution attack's cards come first
        cards.setdefault(m.label, m.value)
    true = cli["attacks"]["true_distribution"]
    assert cards["AUC"] == f"{true['auc']:.3f}"
    for key, label in (("0.001", "0.1 %"), ("0.01", "1 %"), ("0.1", "10 %")):
        assert cards[f"TPR at {label} FPR"].startswith(f"{100 * true['tpr_at_fpr'][key]:.1f} %")
    _assert_same_decision(at, cli, stdout)


# ----------------------------------------------------------------------------- score check


def test_score_check_page_equals_cli_scores(tmp_path: Path, capsys) -> None:
    at = AppTest.from_file(str(PAGES / "score_check.py"), default_timeout=120)
    at.run()
    assert not at.exception
    [seed] = [n for n in at.number_input if n.label == "Seed"]
    seed.set_value(SEED)
    at.button[0].click().run()
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith("**Release decision")]  # a high decision: red, no failure
    page = _plain(at.session_state["score_check.downloads.metrics"])
    cli, _ = _cli(
        ["scores", "--scores", str(ROOT / "sample_data" / "scores.csv"), "--fpr", "0.001,0.01,0.1",
         "--delta", "1e-5", "--seed", str(SEED)],
        tmp_path,
        capsys,
    )  # fmt: skip
    assert page == cli  # the report's JSON is the CLI's --json document, exactly
    assert cli["settings"]["seed"] == SEED
    shown = [m.value for m in at.metric if m.label == "epsilon ≥"]
    assert shown == [f"{a['epsilon_lower_bound']['epsilon']:.2f}" for a in cli["attacks"].values()]
