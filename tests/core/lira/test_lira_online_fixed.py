"""Online fixed-variance LiRA (issue 20.3) on pools with a known answer."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit_core.lira.evaluation import evaluate_lira
from audit_core.lira.keep_matrix import balanced_keep_matrix

ALPHA = 0.05


def _homoscedastic_pool(n_records: int, n_models: int, seed: int, shift: float):
    """Every record's scores have sd 1 and members sit ``shift`` higher: the fixed variance is the true one."""
    rng = np.random.default_rng(seed)
    keep = balanced_keep_matrix(n_records, n_models=n_models, seed=seed)
    scores = rng.normal(rng.normal(0.0, 2.0, n_records) + shift * keep, 1.0)
    return scores, keep, float(stats.norm.sf(stats.norm.ppf(1 - ALPHA) - shift))


@pytest.mark.slow
def test_fixed_variance_reaches_the_known_tpr_and_beats_per_record_variances_at_few_models():
    scores, keep, truth = _homoscedastic_pool(3000, 64, seed=1, shift=1.0)
    ev = evaluate_lira(scores, keep, fpr=ALPHA, n_bootstrap=50, seed=0)
    assert abs(ev.tpr["online_fixed_variance"] - truth) < 0.03
    lo, hi = ev.tpr_ci["online_fixed_variance"]
    assert lo <= ev.tpr["online_fixed_variance"] <= hi
    assert abs(ev.pooled_fpr["online_fixed_variance"] - ALPHA) < 0.005  # a global threshold at alpha
    scores, keep, truth = _homoscedastic_pool(3000, 16, seed=2, shift=1.0)
    ev = evaluate_lira(scores, keep, fpr=ALPHA, n_bootstrap=0)
    # 7 in- and 7 out-scores per record: per-record sigmas are noisy, the pooled one is not
    assert ev.tpr["online_fixed_variance"] > ev.tpr["naive_online"] + 0.02
    assert ev.to_json()["tpr"]["online_fixed_variance"] == ev.tpr["online_fixed_variance"]


def test_fixed_variance_reads_alpha_without_signal():
    scores, keep, _ = _homoscedastic_pool(3000, 16, seed=3, shift=0.0)
    ev = evaluate_lira(scores, keep, fpr=ALPHA, n_bootstrap=0)
    assert abs(ev.tpr["online_fixed_variance"] - ALPHA) < 0.01
    assert ev.holds_alpha["online_fixed_variance"] is True


# ----------------------------------------------------------------------------- lira --records and --scores-out
@pytest.mark.slow
def test_cli_lira_writes_records_and_the_scores_with_the_keep_matrix(tmp_path, capsys):
    import json
    from pathlib import Path

    import pandas as pd

    from audit_core.__main__ import main

    german = Path(__file__).resolve().parents[3] / "sample_data" / "german_credit.csv"
    out, recs, raw = tmp_path / "lira.json", tmp_path / "records.csv", tmp_path / "scores.parquet"
    rc = main(["--quiet", "lira", "--data", str(german), "--target", "credit", "--models", "8", "--fpr", "0.05",
               "--json", str(out), "--records", str(recs), "--scores-out", str(raw)])  # fmt: skip
    assert rc == 0
    j = json.loads(out.read_text())
    table = pd.read_csv(recs)
    assert len(table) == j["n_samples"] == 1000
    assert {"row", "per_sample_tpr", "fpr_post_processed"} <= set(table.columns)
    scores = pd.read_parquet(raw)
    assert list(scores.columns) == ["model", "record", "score", "in_training"]
    assert len(scores) == 8 * 1000
    assert (scores["model"].to_numpy().reshape(8, 1000) == np.arange(8)[:, None]).all()  # model-major, then record
    assert (scores["record"].to_numpy().reshape(8, 1000) == np.arange(1000)).all()
    keep = scores["in_training"].to_numpy().reshape(8, 1000)
    assert (keep.sum(axis=0) == 4).all()  # each record trained exactly half of the 8 models (complementary pairs)
    assert (keep[0::2] != keep[1::2]).all()
    # the same scores give the same naive TPR the audit reports (any tool can rerun on them)
    from audit_core.lira.evaluation import evaluate_lira

    s = scores["score"].to_numpy().reshape(8, 1000)
    assert evaluate_lira(s, keep.astype(bool), fpr=0.05, n_bootstrap=0).tpr["naive"] == j["tpr"]["naive"]


def test_cli_scores_out_must_be_parquet(tmp_path, capsys):
    from pathlib import Path

    from audit_core.__main__ import main

    german = Path(__file__).resolve().parents[3] / "sample_data" / "german_credit.csv"
    rc = main(["--quiet", "lira", "--data", str(german), "--target", "credit", "--models", "8",
               "--scores-out", str(tmp_path / "scores.csv")])  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "must end in .parquet" in err[0]
    assert not (tmp_path / "scores.csv").exists()
