"""The self-check: the known-answer simulations behind the numbers the audits print (issue 20.7).

Each check simulates data whose answer is known, runs the project's own estimator on it
and compares what it measures with what the method claims:

- **TPR interval** (:func:`audit_core.common.roc.tpr_at_fpr`): Gaussian scores with a
  known TPR at 1 % FPR; the 95 % interval must cover it in >= 93 % of the runs and be
  at most 1.15x as wide as the estimate's own 2.5-97.5 % spread.
- **LiRA per-sample average** (:func:`audit_core.lira.evaluation.evaluate_lira`): Gaussian
  pools with heterogeneous records and a known TPR at alpha = 5 %, at M = 8, 16 and 64
  models; with signal its bias must stay within 0.03 at M >= 16; without signal it must
  read alpha within 0.01 at every M. At M = 8 with signal no accuracy is claimed (the
  extrapolated average is still about 0.14 low there): the row reports the bias as a
  known limit (``passed`` None, "info"). Its 95 % interval at M = 16 (the record bootstrap
  widened by the extrapolation's error allowance) must cover the truth in >= 93 % of the pools.
- **Epsilon bound** (:func:`audit_core.common.privacy_bound.epsilon_lower_bound`):
  randomized response (exactly eps-DP) and the Gaussian mechanism (exact eps at delta);
  the 95 % lower bound may exceed the true epsilon in at most 5 % of the runs.
- **DP one-run bounds** (:func:`audit_core.dp.bounds.audit_bounds`): randomized response at
  eps = 1 (a bare claim: Steinke et al.'s bound reported) and the Gaussian mechanism at eps = 2,
  delta 1e-5 (the claim names the mechanism: the f-DP bound against its curve reported), with
  m = 100 and 1,000 canaries; the reported 95 % bound may exceed the true epsilon in at most
  5 % of the runs.
- **Copy test** (:func:`audit_core.synthetic.copies.fisher_greater`): training and
  holdout copy counts with the same rate (no leak); the one-sided test at 5 % may
  alarm in at most 5 % of the tables.

:func:`run_selfcheck` runs them (``quick`` for the 10-second version the home page
offers); :data:`VERSION` names the set of checks and their targets, so a report can say
which self-check its installation passes (:func:`status_line`). The last result is kept
in the user's cache directory (:func:`cache_path`), written only when a self-check runs.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, stats

__all__ = [
    "ALPHA",
    "VERSION",
    "Check",
    "SelfCheck",
    "cache_path",
    "last_result",
    "lira_pool",
    "run_selfcheck",
    "status_line",
    "store",
]

VERSION = "2"
"""The self-check's version: bump it when a check or a target changes."""

ALPHA = 0.05


@dataclass(frozen=True)
class Check:
    """One known-answer check: what is claimed, what was measured, the target it must meet."""

    name: str
    claim: str
    measured: float
    target: str
    passed: bool | None
    """None: a known limit, reported but not claimed (neither passes nor fails)."""
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "claim": self.claim, "measured": self.measured, "target": self.target,
                "passed": self.passed, "detail": self.detail}  # fmt: skip


@dataclass(frozen=True)
class SelfCheck:
    """Every check of one run; ``seconds`` (wall time) stays out of the JSON, which is seeded and reproducible."""

    checks: tuple[Check, ...]
    quick: bool
    seed: int
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return all(c.passed is not False for c in self.checks)

    @property
    def claimed(self) -> tuple[Check, ...]:
        """The checks with a target (known limits left out)."""
        return tuple(c for c in self.checks if c.passed is not None)

    def to_json(self) -> dict[str, Any]:
        from audit_core import __version__

        return {"version": VERSION, "audit_core": __version__, "quick": self.quick, "seed": self.seed,
                "passed": self.passed, "n_checks": len(self.claimed),
                "n_passed": sum(bool(c.passed) for c in self.claimed),
                "checks": [c.to_json() for c in self.checks]}  # fmt: skip

    def table(self) -> list[str]:
        """The printed table: one line per check."""
        width = max(len(c.name) for c in self.checks)
        lines = [f"{'check':<{width}}  {'measured':>9}  {'target':<22} result"]
        for c in self.checks:
            result = "info" if c.passed is None else "pass" if c.passed else "FAIL"
            lines.append(f"{c.name:<{width}}  {c.measured:>9.4f}  {c.target:<22} {result}")
        return lines

    def verdict(self) -> str:
        kind = "quick self-check" if self.quick else "self-check"
        n_ok = sum(bool(c.passed) for c in self.claimed)
        if self.passed:
            return f"{kind} version {VERSION}: all {len(self.claimed)} known-answer checks pass"
        failed = ", ".join(c.name for c in self.checks if c.passed is False)
        return f"{kind} version {VERSION}: {n_ok} of {len(self.claimed)} checks pass; FAILED: {failed}"


# ----------------------------------------------------------------------------- the checks
def _tpr_interval(rng: np.random.Generator, reps: int) -> list[Check]:
    from audit_core.common.roc import tpr_at_fpr

    out = []
    n, fpr = 2000, 0.01
    y = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    for name, dist, mu in (("gaussian", stats.norm, 1.5), ("student_t3", stats.t(3), 2.0)):
        truth = float(dist.sf(dist.ppf(1 - fpr) - mu))
        est, lo, hi = np.empty(reps), np.empty(reps), np.empty(reps)
        for r in range(reps):
            t = tpr_at_fpr(dist.rvs(size=2 * n, random_state=rng) + mu * y, y, fpr)
            est[r], lo[r], hi[r] = t.tpr, t.ci_low, t.ci_high
        coverage = float(np.mean((lo <= truth) & (truth <= hi)))
        spread = float(np.diff(np.quantile(est, [0.025, 0.975]))[0])
        ratio = float(np.mean(hi - lo) / spread)
        where = f"{name} scores, {n:,} per class, TPR at 1 % FPR = {truth:.3f}, {reps} runs"
        out += [
            Check(f"tpr_interval.{name}.coverage", "the 95 % TPR-at-FPR interval covers the true TPR", coverage,
                  ">= 0.93", coverage >= 0.93, where),
            Check(f"tpr_interval.{name}.width", "its width is near the estimate's own spread (not padded)", ratio,
                  "<= 1.15x the spread", ratio <= 1.15, where),
        ]  # fmt: skip
    return out


def lira_pool(n_records: int, n_models: int, seed: int, *, signal: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
    """Gaussian LiRA scores with known per-record parameters and the known TPR at alpha = 5 %.

    Records differ in where their out-distribution sits (means N(0, 2^2), sds U(0.3, 2));
    with ``signal`` a member's score is shifted by Exponential(0.8) of its sd. The truth
    is the mean over records of ``1 - Phi(z_{1 - alpha} - shift)`` (alpha without signal).
    """
    from audit_core.lira.keep_matrix import balanced_keep_matrix

    rng = np.random.default_rng(seed)
    keep = balanced_keep_matrix(n_records, n_models=n_models, seed=seed)
    mu_out = rng.normal(0.0, 2.0, n_records)
    sd = rng.uniform(0.3, 2.0, n_records)
    shift = rng.exponential(0.8, n_records) if signal else np.zeros(n_records)
    scores = rng.normal(mu_out + shift * sd * keep, sd)
    return scores, keep, float(np.mean(stats.norm.sf(stats.norm.ppf(1 - ALPHA) - shift)))


def _lira(seed: int, repeats: int, sizes: tuple[int, ...]) -> list[Check]:
    from audit_core.lira.evaluation import evaluate_lira

    out = []
    for m in sizes:
        for signal in (True, False):
            errors = []
            for r in range(repeats):
                scores, keep, truth = lira_pool(3000, m, seed + 1000 * m + r, signal=signal)
                errors.append(evaluate_lira(scores, keep, fpr=ALPHA, n_bootstrap=0).tpr["per_sample_mean"] - truth)
            bias = float(np.mean(errors))
            tol = 0.03 if signal else 0.01
            kind = "with signal (truth about 0.23)" if signal else "without signal (truth alpha = 0.05)"
            claimed = m >= 16 or not signal
            out.append(Check(
                f"lira.per_sample_mean.M{m}.{'signal' if signal else 'no_signal'}",
                f"LiRA's per-sample average at M = {m} models is unbiased {kind}", bias,
                f"|bias| <= {tol:g}" if claimed else "known limit: use M >= 16",
                abs(bias) <= tol if claimed else None, f"3,000 records, {repeats} pool(s)",
            ))  # fmt: skip
    return out


def _lira_coverage(seed: int, pools: int, n_records: int) -> list[Check]:
    """The per-sample average's 95 % interval at M = 16 (record bootstrap widened by the extrapolation's allowance)."""
    from audit_core.lira.evaluation import evaluate_lira

    hits, widths = 0, []
    for r in range(pools):
        scores, keep, truth = lira_pool(n_records, 16, seed + 5000 + r)
        lo, hi = evaluate_lira(scores, keep, fpr=ALPHA, n_bootstrap=200, seed=r).tpr_ci["per_sample_mean"]
        hits += lo <= truth <= hi
        widths.append(hi - lo)
    coverage = hits / pools
    return [Check("lira.per_sample_mean.M16.coverage", "the per-sample average's 95 % interval at M = 16 covers the "
                  "true TPR (its extrapolation's error included)", coverage, ">= 0.93", coverage >= 0.93,
                  f"{n_records:,} records, {pools} pools, mean width {np.mean(widths):.3f}")]  # fmt: skip


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon at ``delta`` of the Gaussian mechanism with sensitivity / sigma = mu."""

    def gap(eps: float) -> float:
        return float(stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta)

    return float(optimize.brentq(gap, 0.0, 200.0))


def _epsilon(rng: np.random.Generator, reps: int) -> list[Check]:
    from audit_core.common.privacy_bound import epsilon_lower_bound

    out = []
    n = 10_000
    y = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    eps = 1.0
    above, means = [], []
    for r in range(reps):
        truthful = rng.random(2 * n) < math.exp(eps) / (1 + math.exp(eps))
        b = epsilon_lower_bound(np.where(truthful, y, ~y).astype(float), y, delta=0.0, seed=r).epsilon
        above.append(b > eps)
        means.append(b)
    share = float(np.mean(above))
    out.append(Check("epsilon.randomized_response", "the 95 % epsilon lower bound exceeds the true epsilon <= 5 % of runs",
                     share, "<= 0.05 above", share <= 0.05,
                     f"randomized response, eps = 1, {n:,} per class, {reps} runs, mean bound {np.mean(means):.3f}"))  # fmt: skip
    mu, delta, n = 1.0, 1e-5, 2000
    truth = _gaussian_epsilon(mu, delta)
    y = np.r_[np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]
    bounds = np.array([epsilon_lower_bound(rng.normal(size=2 * n) + mu * y, y, delta=delta, seed=r).epsilon
                       for r in range(reps)])  # fmt: skip
    share = float(np.mean(bounds > truth))
    out.append(Check("epsilon.gaussian", "the same on the Gaussian mechanism (mu = 1)", share, "<= 0.05 above",
                     share <= 0.05, f"true eps {truth:.2f} at delta 1e-5, mean bound {bounds.mean():.3f}"))  # fmt: skip
    null = np.array([epsilon_lower_bound(rng.normal(size=2 * n), y, delta=0.0, seed=r).epsilon for r in range(reps)])
    share = float(np.mean(null > 0))
    out.append(Check("epsilon.no_signal", "scores unrelated to membership show a privacy loss <= 5 % of runs", share,
                     "<= 0.05 above 0", share <= 0.05, f"{n:,} per class, {reps} runs"))  # fmt: skip
    return out


def _dp_one_run(rng: np.random.Generator, reps: int, sizes: tuple[int, ...]) -> list[Check]:
    from audit_core.dp.bounds import audit_bounds
    from audit_core.dp.tradeoff import gaussian_family

    out = []
    mu, delta = 0.50188, 1e-5  # the Gaussian mechanism with eps = 2 at delta 1e-5 (_gaussian_epsilon)
    truth = _gaussian_epsilon(mu, delta)
    for m in sizes:
        rr, gauss = [], []
        for r in range(reps):
            included = rng.random(m) < 0.5
            truthful = rng.random(m) < 1 / (1 + math.exp(-1.0))
            rr.append(audit_bounds(np.where(truthful, included, ~included).astype(float), included, delta=0.0,
                                   seed=r).epsilon)  # fmt: skip
            included = rng.random(m) < 0.5
            gauss.append(audit_bounds(rng.normal(size=m) + mu * included, included, delta=delta,
                                      mechanism=gaussian_family(delta), seed=r).epsilon)  # fmt: skip
        for name, bounds, eps, how in (("randomized_response", rr, 1.0, "Steinke et al.'s bound (a bare claim)"),
                                       ("gaussian", gauss, truth, "the f-DP bound against the Gaussian curve")):  # fmt: skip
            share = float(np.mean(np.array(bounds) > eps))
            out.append(Check(f"dp_one_run.{name}.m{m}", f"the reported one-run bound exceeds the true epsilon <= 5 % "
                             f"of runs ({how})", share, "<= 0.05 above", share <= 0.05,
                             f"true eps {eps:.2f}, m = {m:,}, {reps} runs, mean bound {np.mean(bounds):.3f}"))  # fmt: skip
    return out


def _copies(rng: np.random.Generator, reps: int) -> list[Check]:
    from audit_core.synthetic.copies import COPY_TEST_ALPHA, fisher_greater

    n, rate = 1000, 0.01
    a, b = rng.binomial(n, rate, reps), rng.binomial(n, rate, reps)
    alarms = float(np.mean([fisher_greater(int(x), n, int(z), n) < COPY_TEST_ALPHA for x, z in zip(a, b, strict=True)]))
    return [Check("copies.false_alarm", "the exact-copy test alarms on tables with no leak <= its 5 % level", alarms,
                  "<= 0.05", alarms <= COPY_TEST_ALPHA,
                  f"copy rate 1 % in both training and holdout, {n:,} records each, {reps} tables")]  # fmt: skip


def run_selfcheck(*, quick: bool = False, seed: int = 0) -> SelfCheck:
    """Every known-answer check; ``quick`` runs fewer repetitions (under 10 s instead of about a minute)."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    checks = [
        *_tpr_interval(rng, 150 if quick else 1500),
        *_lira(seed, 1 if quick else 4, (16, 64) if quick else (8, 16, 64)),
        *_lira_coverage(seed, 6 if quick else 40, 500 if quick else 1000),
        *_epsilon(rng, 40 if quick else 400),
        *_dp_one_run(rng, 20 if quick else 100, (100,) if quick else (100, 1000)),
        *_copies(rng, 1000 if quick else 20_000),
    ]
    return SelfCheck(tuple(checks), quick=quick, seed=seed, seconds=time.perf_counter() - start)


# ----------------------------------------------------------------------------- the last result, for the home page and reports
def cache_path() -> Path:
    """Where the last self-check result is kept.

    ``$AUDIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/audit_core``, else ``~/.cache/audit_core``.
    """
    root = os.environ.get("AUDIT_CACHE_DIR")
    if root:
        return Path(root) / "selfcheck.json"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "audit_core" / "selfcheck.json"


def store(result: SelfCheck) -> Path | None:
    """Keep ``result`` as the last self-check (whole file or nothing); None when the cache is not writable."""
    path = cache_path()
    finished = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    body = {**result.to_json(), "seconds": round(result.seconds, 1), "finished": finished}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(body, indent=2))
        tmp.replace(path)
    except OSError:
        return None
    return path


def last_result() -> dict[str, Any] | None:
    """The last stored self-check, or None (never run here, or the file is unreadable)."""
    try:
        body = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) and "checks" in body else None


def status_line() -> str:
    """One line for a report's Software section: which self-check this installation passes."""
    from audit_core import __version__

    last = last_result()
    command = "python -m audit_core selfcheck"
    if last is None or last.get("version") != VERSION or last.get("audit_core") != __version__:
        return f"version {VERSION}: not run on this installation ({command})"
    kind = "quick self-check" if last.get("quick") else "full self-check"
    state = "passed" if last.get("passed") else f"FAILED ({last.get('n_passed')} of {last.get('n_checks')} checks)"
    return f"version {VERSION}: {state}, {kind} of {last.get('finished', '?')} ({command})"
