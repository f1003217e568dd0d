"""The pages' widgets take their limits from audit_core.common.limits, the same bounds the command line checks."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from audit_core.common.limits import ATTACK_STEPS, SEED

PAGES = Path(__file__).resolve().parents[2] / "views"


@pytest.mark.parametrize("page", ["fabrication.py", "lira_calibration.py", "score_check.py"])
def test_seed_widget_has_the_cli_bound(page):
    at = AppTest.from_file(str(PAGES / page), default_timeout=120)
    at.run()
    assert not at.exception
    seeds = [w for w in at.number_input if w.label == "Seed"]
    assert len(seeds) == 1
    assert seeds[0].min == SEED.low
    assert seeds[0].max == SEED.high


def test_attack_steps_widget_has_the_cli_bound():
    at = AppTest.from_file(str(PAGES / "fabrication.py"), default_timeout=120)
    at.run()
    steps = next(w for w in at.number_input if w.label == "Attack steps T")
    assert (steps.min, steps.max) == (ATTACK_STEPS.low, ATTACK_STEPS.high)
