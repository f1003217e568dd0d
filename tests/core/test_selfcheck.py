"""The self-check (issue 20.7): it passes on this code, it fails on a broken estimator, and what it leaves behind."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from audit_core.__main__ import main
from audit_core.common import privacy_bound, roc
from audit_core.selfcheck import checks


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUDIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "selfcheck.json"


@pytest.mark.slow
def test_cli_quick_selfcheck_passes_prints_the_table_and_keeps_the_result(cache, tmp_path, capsys):
    assert checks.status_line().startswith(f"version {checks.VERSION}: not run")
    out = tmp_path / "selfcheck.json"
    assert main(["selfcheck", "--quick", "--json", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "tpr_interval.gaussian.coverage" in printed
    assert "all 15 known-answer checks pass" in printed
    body = json.loads(out.read_text())
    assert body["passed"] is True
    assert body["version"] == checks.VERSION
    assert body["n_passed"] == body["n_checks"] == 15
    names = {c["name"] for c in body["checks"]}
    assert {"tpr_interval.gaussian.width", "lira.per_sample_mean.M16.signal", "epsilon.randomized_response",
            "copies.false_alarm", "lira.per_sample_mean.M16.coverage", "dp_one_run.gaussian.m100",
            "dp_one_run.randomized_response.m100"} <= names  # fmt: skip
    assert json.loads(cache.read_text())["checks"] == body["checks"]
    assert "passed, quick self-check" in checks.status_line()
    from audit_core.common.report import package_versions

    assert package_versions()["self-check"] == checks.status_line()


@pytest.mark.slow
def test_a_too_narrow_tpr_interval_fails_the_coverage_check(monkeypatch):
    honest = roc.tpr_at_fpr

    def narrow(*args, **kwargs):
        t = honest(*args, **kwargs)
        half = (t.ci_high - t.ci_low) / 4
        return replace(t, ci_low=t.tpr - half, ci_high=t.tpr + half)

    monkeypatch.setattr(roc, "tpr_at_fpr", narrow)
    coverage, width = checks._tpr_interval(np.random.default_rng(0), 150)[:2]
    assert coverage.passed is False
    assert coverage.measured < 0.8
    assert width.passed is True  # narrow is not padded


def test_an_inflated_epsilon_bound_fails_validity(monkeypatch):
    honest = privacy_bound.epsilon_lower_bound
    monkeypatch.setattr(privacy_bound, "epsilon_lower_bound",
                        lambda *a, **k: replace(honest(*a, **k), epsilon=1.3 * honest(*a, **k).epsilon))  # fmt: skip
    rr = checks._epsilon(np.random.default_rng(0), 20)[0]
    assert rr.passed is False
    assert rr.measured > 0.5


def test_an_inflated_one_run_bound_fails_validity(monkeypatch):
    from audit_core.dp import bounds

    honest = bounds.audit_bounds

    def inflated(*args, **kwargs):
        b = honest(*args, **kwargs)
        return replace(b, steinke=replace(b.steinke, epsilon=3 * b.steinke.epsilon),
                       fdp=replace(b.fdp, epsilon=3 * b.fdp.epsilon))  # fmt: skip

    monkeypatch.setattr(bounds, "audit_bounds", inflated)
    rr, gauss = checks._dp_one_run(np.random.default_rng(0), 20, (1000,))
    assert rr.passed is False  # the honest bounds reach 0.4-0.8 of the truth at m = 1,000: three times that is above it
    assert gauss.passed is False
    assert min(rr.measured, gauss.measured) > 0.5


@pytest.mark.slow
def test_the_lira_interval_without_its_extrapolation_allowance_fails_coverage(monkeypatch):
    from audit_core.lira import per_sample

    monkeypatch.setattr(per_sample, "_ALLOWANCE", 0.0)  # the record bootstrap alone: the extrapolation's bias left out
    coverage = checks._lira_coverage(0, 4, 3000)[0]
    assert coverage.passed is False
    assert coverage.measured <= 0.5  # 20 % of 3,000-record pools at M = 16 (README)


@pytest.mark.slow
def test_copy_check_is_seeded_and_a_liberal_test_fails_it(monkeypatch):
    a, b = checks._copies(np.random.default_rng(3), 2000), checks._copies(np.random.default_rng(3), 2000)
    assert a == b
    assert a[0].passed is True
    from audit_core.synthetic import copies

    monkeypatch.setattr(copies, "fisher_greater", lambda x, n, y, m: 0.0 if x > y else 1.0)  # "more copies" = alarm
    liberal = checks._copies(np.random.default_rng(3), 2000)[0]
    assert liberal.passed is False
    assert liberal.measured > 0.3


def test_lira_pool_truth_and_known_limit_row():
    scores, keep, truth = checks.lira_pool(500, 16, seed=0)
    assert scores.shape == keep.shape == (16, 500)
    assert 0.15 < truth < 0.35
    assert checks.lira_pool(500, 16, seed=0, signal=False)[2] == pytest.approx(checks.ALPHA)
    m8 = checks._lira(0, 1, (8,))
    assert m8[0].passed is None  # with signal at M = 8: reported, not claimed
    assert m8[1].passed is True  # without signal it reads alpha
