"""No public entry point of the computation clamps or accepts what the page and the CLI refuse (issue 32).

Each function a notebook may call directly (``rescore``, ``evaluate_pool``, ``train_pool``,
``select_bandwidth``, ``fit_posterior``, ``fpc_simulation``, ``score_check``, ``run_dp_audit``,
``audit_uploaded_model``, ``audit_model``, ``audit_synthetic``, ``audit_disclosure``) checks its
arguments by the audit's knobs (``Settings.checked``): a value the knob refuses raises the CLI's
:class:`InputError` sentence before any work, and a value it accepts is used as given.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.__main__ import main
from audit_core.common.errors import InputError
from audit_core.common.table_files import read_table
from audit_core.lira.keep_matrix import balanced_keep_matrix
from audit_core.lira.pool import ModelPool

ROOT = Path(__file__).resolve().parents[2]
GERMAN = ROOT / "sample_data" / "german_credit"


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The CLI's one line for ``argv`` (it must refuse with exit status 2), without its ``error: `` prefix."""
    capsys.readouterr()
    assert main(["--quiet", *argv]) == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: "), line
    assert "\n" not in line, line
    return line.removeprefix("error: ")


@pytest.fixture(scope="module")
def small_audit():
    """A membership audit of a leaky synthetic table (German Credit sample: 400 members, 300 non-members)."""
    from audit_core.synthetic.audit import audit_synthetic

    tables = [read_table(GERMAN / f"{n}.csv", name=n) for n in ("train", "holdout", "synthetic_leaky", "auxiliary")]
    return audit_synthetic(*tables, seed=0)


@pytest.mark.parametrize(
    ("setting", "value", "flag"),
    [
        ("bandwidth", -1.0, "--bandwidth"),  # was clamped to the grid's smallest bandwidth: another AUC
        ("bandwidth", 0.0, "--bandwidth"),
        ("bandwidth", "widest", "--bandwidth"),  # was a bare KeyError
        ("bandwidth_scale", 0.0, "--bandwidth-scale"),  # was clamped too
        ("bandwidth_scale", -2.0, "--bandwidth-scale"),
        ("prior", 1.0, "--prior"),
    ],
)
def test_rescore_refuses_what_the_cli_refuses_with_its_sentence(small_audit, setting, value, flag, capsys):
    from audit_core.synthetic.scoring import rescore

    with pytest.raises(InputError) as err:
        rescore(small_audit, **{setting: value})
    cli = _cli_error(["tabular", "--train", "sample_data/german_credit/train.csv", "--holdout",
                      "sample_data/german_credit/holdout.csv", "--synthetic", "sample_data/german_credit/synthetic_leaky.csv",
                      flag, str(value), "--json", "/dev/null"], capsys)  # fmt: skip
    assert str(err.value) == cli


def test_rescore_uses_an_accepted_value_as_given(small_audit):
    """Inside the knob, nothing is clamped: the widest scale gives 20x the rule's bandwidth, a fixed one is kept."""
    from audit_core.synthetic.scoring import rescore

    base = small_audit.posterior_true.members.bandwidth
    assert rescore(small_audit, bandwidth_scale=20.0).posterior_true.members.bandwidth == pytest.approx(20 * base)
    fixed = rescore(small_audit, bandwidth=0.25)
    assert fixed.posterior_true.members.bandwidth == pytest.approx(0.25)
    assert fixed.attacks["true_distribution"].auc != small_audit.attacks["true_distribution"].auc


def test_the_density_functions_refuse_an_unknown_rule_and_a_bad_prior():
    from audit_core.synthetic.density import fit_posterior
    from audit_core.synthetic.kde import select_bandwidth

    x = np.linspace(0.0, 1.0, 50)
    with pytest.raises(InputError, match=r"^--bandwidth must be one of silverman, scott, cv, or a number"):
        select_bandwidth(x, method="widest")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^--bandwidth must be a number above 0"):
        select_bandwidth(x, method=-0.5)
    with pytest.raises(InputError, match=r"^--bandwidth-scale must be a number from 0.05"):
        select_bandwidth(x, scale=0.0)
    with pytest.raises(InputError, match=r"^--prior must be a number from 1e-06"):
        fit_posterior(x[:25], x[25:], prior=0.0)
    assert select_bandwidth(x, method=0.3, scale=2.0) == pytest.approx(0.6)  # accepted: used as given


def test_the_audit_options_refuse_the_tabular_knobs_values():
    from audit_core.synthetic.audit import AuditOptions, audit_synthetic
    from audit_core.synthetic.disclosure.audit import DisclosureOptions, audit_disclosure

    empty = pd.DataFrame({"a": [1.0]})
    with pytest.raises(InputError, match=r"^--bandwidth-scale must be"):
        audit_synthetic(empty, empty, empty, options=AuditOptions(bandwidth_scale=0.0))
    with pytest.raises(InputError, match=r"^--prior must be"):
        audit_synthetic(empty, empty, empty, options=AuditOptions(prior=1.5))
    with pytest.raises(InputError, match=r"^--n-attacks must be"):
        audit_disclosure(empty, empty, empty, options=DisclosureOptions(n_attacks=0))
    with pytest.raises(InputError, match=r"^--link-k must be"):
        audit_disclosure(empty, empty, empty, options=DisclosureOptions(link_k=0))


def _pool(n_records: int, n_models: int) -> ModelPool:
    """A trained pool's scores without training: Gaussian scores, members shifted up."""
    rng = np.random.default_rng(0)
    keep = balanced_keep_matrix(n_records, n_models=n_models, seed=0)
    return ModelPool(scores=rng.normal(keep * 0.5, 1.0), keep=keep, model="logistic", target="credit",
                     classes=("bad", "good"), n_features=3, train_accuracy=np.full(n_models, 0.8),
                     test_accuracy=np.full(n_models, 0.7), seconds=0.0)  # fmt: skip


def test_evaluate_pool_refuses_an_alpha_eight_models_cannot_measure_as_the_cli_does(capsys):
    """German Credit's 1,000 records x 8 models: alpha = 1e-4 refused with the CLI's sentence (it was evaluated)."""
    from audit_core.lira.result import evaluate_pool

    with pytest.raises(InputError) as err:
        evaluate_pool(_pool(1000, 8), fpr=1e-4, n_bootstrap=0)
    cli = _cli_error(["lira", "--data", "sample_data/german_credit.csv", "--target", "credit", "--models", "8",
                      "--fpr", "1e-4", "--json", "/dev/null"], capsys)  # fmt: skip
    assert str(err.value) == cli
    with pytest.raises(InputError, match=r"^--fpr must be a number from 1e-06 to 0.5"):
        evaluate_pool(_pool(1000, 8), fpr=0.7, n_bootstrap=0)
    assert evaluate_pool(_pool(1000, 8), fpr=0.05, n_bootstrap=0).evaluation.fpr == 0.05  # measurable: evaluated


def test_train_pool_and_the_fpc_simulation_refuse_what_their_knobs_refuse():
    from audit_core.lira.fpc import fpc_simulation
    from audit_core.lira.pool import train_pool

    data = read_table(ROOT / "sample_data" / "german_credit.csv", name="german_credit.csv")
    with pytest.raises(InputError, match=r"^--models must be"):
        train_pool(data, target="credit", n_models=7)  # odd: each record cannot be in exactly half
    with pytest.raises(InputError, match=r"^--model must be one of"):
        train_pool(data, target="credit", model="forest", n_models=8)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^--train-size must be below --population"):
        fpc_simulation(population=100, train_size=100)
    with pytest.raises(InputError, match=r"^--models must be"):
        fpc_simulation(population=100, train_size=50, n_models=2)


def test_score_dp_and_model_entry_points_refuse_what_their_knobs_refuse():
    from audit_core.dp.audit import run_dp_audit
    from audit_core.dp.uploaded import audit_uploaded_model
    from audit_core.model.audit import audit_model
    from audit_core.scores.audit import score_check

    scores = read_table(ROOT / "sample_data" / "scores.csv", name="scores.csv")
    with pytest.raises(InputError, match=r"^--fpr must be a number from 1e-06 to 0.5; got 0.9"):
        score_check(scores, fprs=(0.01, 0.9))
    with pytest.raises(InputError, match=r"^--delta must be"):
        score_check(scores, delta=0.5)
    table = pd.DataFrame({"x": [1.0, 2.0], "credit": ["a", "b"]})
    with pytest.raises(InputError, match=r"^--canaries must be"):
        run_dp_audit(table, target="credit", epsilon=1.0, delta=1e-5, m=5)
    with pytest.raises(InputError, match=r"^--epsilon must be"):
        run_dp_audit(table, target="credit", epsilon=0.0, delta=1e-5)
    with pytest.raises(InputError, match=r"^--canary-kind must be one of"):
        run_dp_audit(table, target="credit", epsilon=1.0, delta=1e-5, kind="loud")
    with pytest.raises(InputError, match=r"^--delta must be"):
        audit_uploaded_model(b"", table, target="credit", epsilon=1.0, delta=0.0)
    with pytest.raises(InputError, match=r"^--steps must be"):
        audit_uploaded_model(b"", table, target="credit", epsilon=1.0, delta=1e-5, mechanism=(1.0, 0.01, 0))
    with pytest.raises(InputError, match=r"^--reference-models must be"):
        audit_model(b"", table, table, target="credit", n_reference=0)
    with pytest.raises(InputError, match=r"^--lira-variance must be one of"):
        audit_model(b"", table, table, target="credit", variance="local")
