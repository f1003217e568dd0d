"""AppTest of the Generate & compare page: a headless comparison through the widgets."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit_core.common.decision import KINDS
from audit_core.synthetic.generators.base import TabularGenerator
from tests.conftest import click, spy
from ui import state

DECISION_BOXES = tuple(f"**{title}:" for title in KINDS.values())  # a decision box (any kind), not a failure

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "generators.py")


def _compare(at: AppTest) -> AppTest:
    at.multiselect(key="generators.names").set_value(["bootstrap", "population", "bayesian_network"])
    at.number_input(key="generators.use_rows").set_value(1500)
    return at.button[0].click().run()


@pytest.mark.slow
def test_comparison_runs_and_sliders_do_not_refit(monkeypatch):
    fits = spy(monkeypatch, TabularGenerator, "fit")
    at = AppTest.from_file(PAGE, default_timeout=240).run()
    assert not at.exception
    at.number_input(key="generators.seed").set_value(13)  # a seed no other test uses: every fit happens here
    at = _compare(at)
    assert not at.exception
    assert not [e.value for e in at.error if not e.value.startswith(DECISION_BOXES)]  # a high decision: red, no failure
    table = at.dataframe[0].value
    assert list(table["Generator"]) == [
        "Bootstrap (leaky reference)", "Population (chance reference)", "Bayesian network (pgmpy)",
    ]
    auc = dict(zip(table["Generator"], table["AUC (true)"], strict=True))
    assert auc["Bootstrap (leaky reference)"] > 0.7
    assert abs(auc["Population (chance reference)"] - 0.5) < 0.1
    assert len(fits) == 3
    at.slider(key=state.Generators.PRIOR).set_value(0.2).run()  # re-scores the kept audits: nothing is refitted
    assert not at.exception
    assert len(fits) == 3
    assert at.dataframe[0].value["Generator"].tolist() == table["Generator"].tolist()
    at.multiselect(key="generators.names").set_value(["bootstrap", "bayesian_network"])
    at.button[0].click().run()  # a generator fewer: the others' fits are kept
    assert not at.exception
    assert len(fits) == 3
    assert at.dataframe[0].value["Generator"].tolist() == ["Bootstrap (leaky reference)", "Bayesian network (pgmpy)"]


def test_bad_split_is_refused_in_one_sentence():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.slider(key="generators.f_train").set_value(0.8)
    at.slider(key="generators.f_holdout").set_value(0.5)
    at = _compare(at)
    assert not at.exception
    assert len(at.error) == 1
    assert "add up to" in at.error[0].value


def test_generator_setting_widgets_carry_their_help_text():
    """The epochs / batch-size widgets once had empty tooltips: their help text had become the ParamSpec's choices."""
    from audit_core.synthetic.choices import GENERATOR_INFO as GENERATORS

    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.multiselect(key="generators.names").set_value(["ctgan", "bayesian_network", "bootstrap"]).run()
    assert not at.exception
    for name in ("ctgan", "bayesian_network", "bootstrap"):
        for p in GENERATORS[name].params:
            assert at.number_input(key=f"generators.param.{name}.{p.name}").help == p.help
            assert p.help.endswith(".")
            assert p.choices == ()


@pytest.mark.slow
def test_too_few_synthetic_rows_is_one_sentence_before_any_fit():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.number_input(key="generators.synth_rows").set_value(5)
    at = _compare(at)
    assert not at.exception
    assert len(at.error) == 1
    assert "synthetic rows must be at least 20" in at.error[0].value


@pytest.mark.slow
def test_shadow_attack_section_keeps_the_fits_and_reads_the_references():
    """The shadow form re-asks the same comparison with --shadow: nothing is refitted for the audits, each generator
    gets its own result; the bootstrap reference (rows resampled from training) tells its targets apart, the
    population reference (rows nobody trained on) tells nobody apart."""
    at = AppTest.from_file(PAGE, default_timeout=240).run()
    at.multiselect(key="generators.names").set_value(["bootstrap", "population"])
    at.number_input(key="generators.use_rows").set_value(300)
    at.number_input(key="generators.synth_rows").set_value(750)  # 5x the 150 training rows: targets are copied
    at = at.button[0].click().run()
    assert not at.exception
    at.number_input(key=f"{state.Generators.SHADOW}.targets").set_value(4)
    at.number_input(key=f"{state.Generators.SHADOW}.models").set_value(16)
    at = click(at, "Run the shadow attack")
    at = at.run()  # the form's request runs on the rerun
    assert not at.exception
    table = next(d.value for d in at.dataframe if "Told apart" in d.value.columns)
    told = dict(zip(table["Generator"], table["Told apart"], strict=True))
    assert told["Bootstrap (leaky reference)"] == "4 of 4"
    assert told["Population (chance reference)"].startswith("0 of")
    # each generator's own decision in its tab: the bootstrap's targets told apart, the population's nobody
    told_box = [b.value for b in [*at.warning, *at.error] if "Shadow attack on Bootstrap (leaky reference)" in b.value]
    assert told_box
    assert "4 of the 4 most unusual training records can be told apart" in told_box[0]
    assert any("Shadow attack on Population (chance reference)" in b.value for b in at.success)
