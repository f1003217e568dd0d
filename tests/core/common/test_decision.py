"""The decision's levels on data with a known answer: too few non-members is inconclusive, never low; a signal at a
measurable FPR counts; an interval above chance is counted or said not to be; --fail-on inconclusive gates on it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.decision import LEVELS, Decision, attack_finding, decide, times_chance
from audit_core.common.roc import tpr_at_fpr


def _scores(n_members: int, n_non: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = np.r_[rng.normal(shift, 1.0, n_members), rng.normal(0.0, 1.0, n_non)]
    return s, np.r_[np.ones(n_members, bool), np.zeros(n_non, bool)]


def test_levels_are_ordered_and_inconclusive_gates_only_from_its_own_level() -> None:
    assert LEVELS == ("low", "inconclusive", "elevated", "high")
    d = Decision("inconclusive", "x")
    assert d.reaches("inconclusive")
    assert not d.reaches("elevated")
    assert Decision("elevated", "x").reaches("inconclusive")
    assert d.title == "Release decision: INCONCLUSIVE"
    assert set(d.to_json()) >= {"level", "kind", "headline", "reasons", "next_steps", "rules"}


def test_too_few_non_members_are_inconclusive_whatever_the_scores() -> None:
    # 300 non-members cannot measure an FPR of 1 %: independent scores and a strong signal alike are not "low"
    levels = []
    for seed in range(20):
        s, y = _scores(300, 300, 0.0, seed)
        point = tpr_at_fpr(s, y, 0.01)
        assert not point.supported
        levels.append(attack_finding("the attack", point).level)
    assert set(levels) == {"inconclusive"}
    f = attack_finding("the attack", point)
    assert "needs at least 1,000" in f.reason
    assert "this audit had 300" in f.next_step


def test_a_signal_at_a_measurable_fpr_counts_when_the_low_one_is_not_measurable() -> None:
    # members shifted by 1.5 sd: at 10 % FPR (measurable with 300 non-members) the TPR is ~0.56, far above 3 x 10 %
    s, y = _scores(300, 300, 1.5, 0)
    points = [tpr_at_fpr(s, y, f) for f in (0.01, 0.1)]
    f = attack_finding("the attack", points[0], fallback=points[1:])
    assert f.level == "high"
    assert "measured at 10.0 % FPR" in f.reason
    s, y = _scores(300, 300, 0.0, 1)  # no signal at 10 % either: still inconclusive
    points = [tpr_at_fpr(s, y, f) for f in (0.01, 0.1)]
    assert attack_finding("the attack", points[0], fallback=points[1:]).level == "inconclusive"


def test_independent_scores_with_enough_non_members_read_low_at_about_the_margin_rate() -> None:
    # the shared margin (2 x the FPR) keeps no-signal audits low: at most a few in 100 reach "elevated"
    above = 0
    for seed in range(100):
        s, y = _scores(2000, 2000, 0.0, 100 + seed)
        f = attack_finding("the attack", tpr_at_fpr(s, y, 0.01))
        above += f.level != "low"
        if f.level == "low" and "sits above chance" in f.reason:
            assert "margin" in f.reason  # an interval above chance is said not to count, and why
    assert above <= 5, above


def test_magnitude_in_words() -> None:
    assert times_chance(0.109, 0.01) == "11 times chance"
    assert times_chance(0.026, 0.01) == "2.6 times chance"
    assert times_chance(0.011, 0.01) == "about chance"
    assert times_chance(0.001, 0.01) == "below chance"


def test_non_release_kinds_speak_their_own_words() -> None:
    from audit_core.common.decision import Finding

    d = decide([Finding("high", "The DP claim is disproved: one run proves epsilon >= 3.")], low="x", kind="dp_claim")
    assert d.title == "DP claim: DISPROVED"
    assert d.headline == "The DP claim is disproved: one run proves epsilon >= 3."
    none = decide([], low="the scores separate nothing.", kind="scores")
    assert none.title == "Score check: these scores DO NOT SHOW membership"


@pytest.fixture(scope="module")
def small_tables(tmp_path_factory) -> dict[str, str]:
    """Train, holdout and synthetic rows drawn independently from one population: no copy, chance, 300 non-members."""
    rng = np.random.default_rng(7)
    folder = tmp_path_factory.mktemp("small")

    def table(n: int) -> pd.DataFrame:
        return pd.DataFrame({"age": rng.integers(18, 90, n), "hours": rng.integers(1, 99, n),
                             "job": rng.choice(list("abcdefgh"), n), "city": rng.choice(list("pqrstu"), n)})  # fmt: skip

    paths = {}
    for name, n in (("train", 300), ("holdout", 600), ("synthetic", 300)):
        paths[name] = str(folder / f"{name}.csv")
        table(n).to_csv(paths[name], index=False)
    return paths


def test_fail_on_inconclusive_stops_an_untested_table(tmp_path, capsys, small_tables) -> None:
    js = tmp_path / "out.json"
    argv = ["tabular", "--train", small_tables["train"], "--holdout", small_tables["holdout"], "--synthetic",
            small_tables["synthetic"], "--json", str(js), "--fail-on", "inconclusive", "--quiet"]  # fmt: skip
    assert main(argv) == 3
    verdict = json.loads(js.read_text())["verdict"]
    assert verdict["level"] == "inconclusive"  # no copy, no signal, and far too few non-members to say "low"
    assert verdict["kind"] == "release"
    assert verdict["answer"] == "INCONCLUSIVE"
    assert any("1,000" in rule and "inconclusive" in rule for rule in verdict["rules"])  # the cut-offs are stated
    assert capsys.readouterr().out.strip().splitlines()[-1] == "release decision: inconclusive"
    assert not Decision(verdict["level"], verdict["headline"]).reaches("elevated")  # --fail-on elevated lets it pass
