"""Every page shows the exact ``python -m audit_core ...`` line for its result; running it gives the page's JSON.

The line is read from the page (``st.session_state[f"{key}.command"]``, set where the page
shows it under "Reproduce this"), split as a shell would, run verbatim from the project
folder with only the ``--json`` path changed, and its JSON is compared with the page's.
Settings are moved off their defaults on purpose (seed, number of models, alpha, prior,
bandwidth scale), so a command that dropped one of them would give other numbers.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit_core.__main__ import main
from audit_core.common.report import to_json_text
from ui import state

ROOT = Path(__file__).resolve().parents[2]
VIEWS = ROOT / "views"


def _run_command(command: str, tmp_path: Path, monkeypatch) -> dict:
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "audit_core"]
    out = tmp_path / "reproduced.json"
    argv[argv.index("--json") + 1] = str(out)
    monkeypatch.chdir(ROOT)  # sample paths in the command are relative to the project folder
    assert main(["--quiet", *argv[3:]]) == 0
    return json.loads(out.read_text())


def _plain(obj) -> dict:
    return json.loads(to_json_text(obj))


def test_score_check_command_reproduces_the_page(tmp_path: Path, monkeypatch) -> None:
    at = AppTest.from_file(str(VIEWS / "score_check.py"), default_timeout=120).run()
    [seed] = [n for n in at.number_input if n.label == "Seed"]
    seed.set_value(11)
    at.multiselect[0].set_value([0.01, 0.05])
    at.button[0].click().run()
    assert not at.exception
    command = at.session_state["score_check.downloads.command"]
    assert "--seed 11" in command
    assert "--fpr 0.01,0.05" in command
    cli = _run_command(command, tmp_path, monkeypatch)
    assert _plain(at.session_state["score_check.downloads.metrics"]) == cli


def test_lira_command_reproduces_the_page(tmp_path: Path, monkeypatch) -> None:
    at = AppTest.from_file(str(VIEWS / "lira_calibration.py"), default_timeout=300).run()
    m_input, seed_input = at.number_input[0], at.number_input[1]
    m_input.set_value(12)
    seed_input.set_value(5)
    at.button[0].click().run()
    at.select_slider(key=state.Lira.FPR).set_value(0.1).run()  # a re-score: the command must carry it
    assert not at.exception
    command = at.session_state["lira.downloads.command"]
    assert "--models 12" in command
    assert "--fpr 0.1" in command
    assert "--seed 5" in command
    page, cli = _plain(at.session_state["lira.downloads.metrics"]), _run_command(command, tmp_path, monkeypatch)
    assert page == cli


@pytest.mark.slow
def test_synthetic_command_reproduces_the_page(tmp_path: Path, monkeypatch) -> None:
    at = AppTest.from_file(str(VIEWS / "synthetic_risk.py"), default_timeout=300)
    at.session_state[state.Synthetic.SOURCE] = "German credit – leaky synthetic"
    at.run()
    at.number_input(key=state.Synthetic.SEED).set_value(3)
    [run] = [b for b in at.button if "Run the audit" in b.label]
    run.click().run()
    at.slider(key=state.Synthetic.PRIOR).set_value(0.3).run()  # re-scores: prior and bandwidth reach the command
    at.select_slider(key=state.Synthetic.BANDWIDTH).set_value(1.4).run()
    assert not at.exception
    command = at.session_state["synthetic.command"]
    assert "--prior 0.3" in command
    assert "--bandwidth-scale 1.4" in command
    assert "--seed 3" in command
    assert "--train sample_data/german_credit/train.csv" in command
    assert _plain(at.session_state["synthetic.metrics"]) == _run_command(command, tmp_path, monkeypatch)


def _without_timings(summary: dict) -> dict:
    for run in summary["generators"].values():
        run.pop("fit_seconds")  # wall-clock time: the one thing two runs cannot share
    return summary


@pytest.mark.slow
def test_compare_command_reproduces_the_page(tmp_path: Path, monkeypatch) -> None:
    at = AppTest.from_file(str(VIEWS / "generators.py"), default_timeout=300).run()
    at.radio(key=state.Generators.SOURCE).set_value("German credit (bundled sample)").run()
    at.multiselect(key="generators.names").set_value(["bootstrap", "population", "bayesian_network"])
    at.number_input(key="generators.use_rows").set_value(700)
    at.number_input(key="generators.seed").set_value(4)
    at.button[0].click().run()
    at.slider(key=state.Generators.PRIOR).set_value(0.3).run()  # a re-score: the command must carry it
    assert not at.exception
    command = at.session_state["generators.report.command"]
    assert "compare --data sample_data/german_credit.csv" in command
    assert "--use-rows 700" in command
    assert "--prior 0.3" in command
    page = _without_timings(_plain(at.session_state["generators.report.metrics"]))
    assert page == _without_timings(_run_command(command, tmp_path, monkeypatch))


@pytest.mark.slow
def test_fabrication_command_reproduces_the_page(tmp_path: Path, monkeypatch) -> None:
    at = AppTest.from_file(str(VIEWS / "fabrication.py"), default_timeout=300).run()
    at.slider[0].set_value(48)  # epsilon in /255
    at.number_input[0].set_value(6)  # attack steps
    [seed] = [n for n in at.number_input if n.label == "Seed"]
    seed.set_value(2)
    at.button[0].click().run()
    at.select_slider(key=state.Fabrication.LAMBDA).set_value(3.0).run()  # a re-score: the command must carry it
    assert not at.exception
    command = at.session_state["fabrication.report.command"]
    for part in ("--dataset digits", "--epsilon 48/255", "--steps 6", "--lambda 3.0", "--seed 2"):
        assert part in command
    page, cli = _plain(at.session_state["fabrication.report.cli_json"]), _run_command(command, tmp_path, monkeypatch)
    assert page.keys() == cli.keys()
    for (path, got), (path_cli, want) in zip(_leaves(page), _leaves(cli), strict=True):
        assert path == path_cli
        if isinstance(want, float) and isinstance(got, float):  # torch's float sums: equal to rounding
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), path
        else:
            assert got == want, path


def _leaves(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, x
