"""Generators side by side: split a real table, fit each generator, audit and score utility.

The paper behind docs/methods.md §1 compared generators on the same real data; this
module makes that comparison one call. :func:`audit_core.synthetic.split.split_real_table` cuts the real table
into train (members), holdout (non-members), auxiliary (the attacker's data) and a
reserve (rows nobody sees, for the ``population`` reference); :func:`compare_generators`
fits every chosen generator from :mod:`audit_core.synthetic.generators` on train, audits each
synthetic table with :func:`audit_core.synthetic.audit.audit_synthetic`, and scores its
utility with SDMetrics' quality report (:func:`audit_core.synthetic.utility.utility_score`). A generator that fails
gets its own error in its row while the others complete, and a cache entry is written
only after a step finishes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.common.errors import InputError
from audit_core.common.hashing import fingerprint
from audit_core.common.runtime import ProgressFn, as_progress, sub_progress
from audit_core.synthetic.attack_set import MIN_PER_CLASS
from audit_core.synthetic.audit import AuditOptions, audit_synthetic
from audit_core.synthetic.generators.base import check_generator_input
from audit_core.synthetic.generators.registry import GENERATORS, make_generator
from audit_core.synthetic.result import SyntheticAudit
from audit_core.synthetic.scoring import rescore
from audit_core.synthetic.shadow.audit import ShadowOptions, shadow_attack
from audit_core.synthetic.shadow.result import ShadowAttack
from audit_core.synthetic.split import RealSplit, split_real_table
from audit_core.synthetic.utility import UtilityScore, utility_score

__all__ = [
    "ComparisonPlan",
    "GeneratorComparison",
    "GeneratorRun",
    "compare_generators",
    "fit_and_sample",
    "rescore_comparison",
]


# --------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeneratorRun:
    """One generator's row in the comparison: its audit, utility and sample, or its error.

    Attributes
    ----------
    name, label : str
    params : dict
        Parameters used (defaults filled in).
    audit : SyntheticAudit or None
        The docs/methods.md §1 audit of its synthetic table; None when it failed.
    utility : UtilityScore or None
    synthetic : pandas.DataFrame or None
        The synthetic table (for download).
    fit_seconds, sample_seconds : float
        Wall time (0 when served from the cache).
    error : str or None
        The generator's own error message when it failed; the other rows still complete.
    shadow : ShadowAttack or None
        The shadow-generator attack on it (:mod:`audit_core.synthetic.shadow`), when the plan asked for one.
    shadow_error : str or None
        Why that attack did not complete (the audit above still stands).
    """

    name: str
    label: str
    params: dict[str, Any]
    audit: SyntheticAudit | None = None
    utility: UtilityScore | None = None
    synthetic: pd.DataFrame | None = field(default=None, repr=False)
    fit_seconds: float = 0.0
    sample_seconds: float = 0.0
    error: str | None = None
    shadow: ShadowAttack | None = None
    shadow_error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the generator fitted, sampled and was audited."""
        return self.error is None and self.audit is not None


@dataclass(frozen=True)
class GeneratorComparison:
    """Several generators fitted on one real training table, each audited (docs/methods.md §1).

    Attributes
    ----------
    runs : tuple of GeneratorRun
        One per generator, in the order asked.
    split : RealSplit
        The train / holdout / auxiliary / reserve parts used.
    types : ColumnTypes
    rows : int
        Synthetic rows drawn per generator.
    seed : int
    """

    runs: tuple[GeneratorRun, ...]
    split: RealSplit = field(repr=False)
    types: ColumnTypes
    rows: int
    seed: int
    real: pd.DataFrame | None = field(default=None, repr=False)
    """The real table that was split (the report describes it)."""
    shadow: ShadowOptions | None = None
    """The shadow attack's settings, when one was run on every generator."""

    def __getitem__(self, name: str) -> GeneratorRun:
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(name)

    def completed(self) -> list[tuple[GeneratorRun, SyntheticAudit]]:
        """The runs that completed, each with its audit, in the order asked."""
        return [(run, run.audit) for run in self.runs if run.ok and run.audit is not None]

    def table(self) -> pd.DataFrame:
        """The paper's table: one row per generator (AUC, TPR at low FPR with CIs, F1, utility)."""
        records = []
        for run in self.runs:
            rec: dict[str, Any] = {"generator": run.name, "label": run.label}
            audit = run.audit if run.ok else None
            if audit is not None:
                true = audit.attacks["true_distribution"]
                real = audit.attacks["realistic"]
                rec["auc_true"] = true.auc
                rec["auc_realistic"] = real.auc
                for key, tag in (("0.001", "0.1%"), ("0.01", "1%")):
                    t = true.tpr_at_fpr[key]
                    rec[f"tpr@{tag}"] = t.tpr
                    rec[f"tpr@{tag}_ci"] = f"[{t.ci_low:.3f}, {t.ci_high:.3f}]"
                    rec[f"tpr@{tag}_supported"] = bool(t.supported)
                rec["f1_true"] = true.f1
                rec["f1_realistic"] = real.f1
                rec["f1_method1"] = _method1_f1(audit)
                rec["utility"] = run.utility.overall if run.utility is not None else np.nan
            rec["fit_s"] = run.fit_seconds
            rec["error"] = run.error or ""
            records.append(rec)
        return pd.DataFrame.from_records(records)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON summary: settings and, per generator, its audit JSON or error."""
        return {
            "split": {"fractions": self.split.fractions, "sizes": self.split.sizes(), "seed": self.split.seed},
            "rows": self.rows,
            "seed": self.seed,
            "generators": {
                run.name: {
                    "label": run.label,
                    "params": run.params,
                    "error": run.error,
                    "fit_seconds": run.fit_seconds,
                    "audit": run.audit.to_json() if run.ok and run.audit is not None else None,
                    "utility": run.utility.to_json() if run.utility is not None else None,
                    **(self._shadow_json(run) if self.shadow else {}),
                }
                for run in self.runs
            },
        }


    @staticmethod
    def _shadow_json(run: GeneratorRun) -> dict[str, Any]:
        """``shadow`` (the attack's JSON, or None) and ``shadow_error`` of one run."""
        return {"shadow": run.shadow.to_json() if run.shadow is not None else None, "shadow_error": run.shadow_error}


def _method1_f1(audit: SyntheticAudit) -> float:
    """F1 of the hard-label distance rule (docs/methods.md §1 step 5, tau = non-members' median)."""
    return float(audit.distance_threshold.metrics.f1)


def rescore_comparison(
    comparison: GeneratorComparison, *, bandwidth: str | float | None = None, prior: float | None = None
) -> GeneratorComparison:
    """Re-score every audit for a new bandwidth or prior without refitting or recomputing distances.

    Parameters
    ----------
    comparison : GeneratorComparison
    bandwidth, prior : optional
        New KDE bandwidth rule / membership prior (docs/methods.md §1 steps 2-3); None keeps each audit's.

    Returns
    -------
    GeneratorComparison
    """
    runs = tuple(
        replace(run, audit=rescore(run.audit, bandwidth=bandwidth, prior=prior)) if run.ok and run.audit is not None else run
        for run in comparison.runs
    )
    return replace(comparison, runs=runs)


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return first if isinstance(exc, InputError) else f"{type(exc).__name__}: {first}".rstrip(": ")


def fit_and_sample(
    name: str,
    split: RealSplit,
    *,
    types: ColumnTypes,
    params: Mapping[str, Any] | None = None,
    rows: int,
    seed: int = 0,
    progress: ProgressFn | None = None,
    cache: MutableMapping[Any, Any] | None = None,
) -> tuple[pd.DataFrame, float, float]:
    """Fit one generator on ``split.train`` and draw ``rows`` rows, reusing ``cache``.

    The cache holds fitted generators under (name, params, train, types, seed) and
    samples under that key plus the row count. An entry is written only after
    its step completed, so a cancelled or failed fit leaves nothing half-written.

    Returns
    -------
    (synthetic, fit_seconds, sample_seconds)
    """
    gen = make_generator(name, **dict(params or {}))
    report = as_progress(progress)
    fit_key = (
        "fit", name, tuple(sorted(gen.params.items())), fingerprint(split.train),
        fingerprint(split.reserve) if name == "population" else "", types, seed,
    )
    sample_key = ("sample", *fit_key[1:], int(rows))
    if cache is not None and sample_key in cache:
        report(1.0, f"{name}: from cache")
        return cache[sample_key], 0.0, 0.0
    fit_seconds = 0.0
    if cache is not None and fit_key in cache:
        gen = cache[fit_key]
    else:
        start = time.perf_counter()
        gen.fit(split.train, types=types, seed=seed, progress=sub_progress(report, 0.0, 0.95), reserve=split.reserve)
        fit_seconds = time.perf_counter() - start
        if cache is not None:
            cache[fit_key] = gen
    start = time.perf_counter()
    synthetic = gen.sample(int(rows), seed=seed)
    sample_seconds = time.perf_counter() - start
    if cache is not None:
        cache[sample_key] = synthetic
    report(1.0, f"{name}: {len(synthetic):,} rows sampled")
    return synthetic, fit_seconds, sample_seconds


@dataclass(frozen=True)
class _RunSettings:
    """What every generator's run shares: the column types, the rows drawn, the seed and the audit's options."""

    types: ColumnTypes
    rows: int
    seed: int
    options: AuditOptions
    shadow: ShadowOptions | None = None


def _shadow_population(split: RealSplit) -> pd.DataFrame:
    """The records the shadow attacker draws its shadow sets from: every real row that is not a training row."""
    return pd.concat([split.holdout, split.auxiliary, split.reserve], ignore_index=True)


def _run_shadow(
    name: str, split: RealSplit, synthetic: pd.DataFrame, gen_params: Mapping[str, Any], settings: _RunSettings, *,
    progress: ProgressFn | None, cache: MutableMapping[Any, Any] | None,
) -> tuple[ShadowAttack | None, str | None]:
    """The shadow attack on one generator of the comparison (kept in ``cache``); its error as a sentence."""
    assert settings.shadow is not None
    population = _shadow_population(split)
    key = ("shadow", name, tuple(sorted(gen_params.items())), fingerprint(synthetic), fingerprint(split.train),
           fingerprint(population), settings.types, settings.seed, settings.shadow)  # fmt: skip
    if cache is not None and key in cache:
        return cache[key], None
    try:
        attack = shadow_attack(split.train, population, generator=name, params=gen_params, synthetic=synthetic,
                               types=settings.types, options=settings.shadow, seed=settings.seed, progress=progress,
                               reserve=split.reserve if len(split.reserve) else None)  # fmt: skip
    except Exception as exc:  # the generator's audit stands; the shadow attack's error goes in its own field
        return None, _error_text(exc)
    if cache is not None:
        cache[key] = attack
    return attack, None


def _run_generator(
    name: str,
    split: RealSplit,
    auxiliary: pd.DataFrame | None,
    gen_params: Mapping[str, Any],
    settings: _RunSettings,
    *,
    progress: ProgressFn | None,
    cache: MutableMapping[Any, Any] | None,
) -> GeneratorRun:
    """Fit, sample, audit and score one generator; a failure becomes the error of its own row."""
    both = as_progress(progress)
    spec = GENERATORS[name]
    types, n_rows, seed = settings.types, settings.rows, settings.seed
    stops = (0.2, 0.3, 0.35) if settings.shadow is not None else (0.6, 0.95, 1.0)  # fit, audit, utility; shadow
    try:
        shown = make_generator(name, **gen_params).params
        synthetic, fit_s, sample_s = fit_and_sample(
            name, split, types=types, params=gen_params, rows=n_rows, seed=seed,
            progress=sub_progress(both, 0.0, stops[0]), cache=cache,
        )
        audit_key = ("audit", name, tuple(sorted(shown.items())), fingerprint(synthetic),
                     fingerprint(split.train), fingerprint(split.holdout), types, seed, settings.options)
        if cache is not None and audit_key in cache:
            audit, utility = cache[audit_key]
        else:
            audit = audit_synthetic(
                split.train, split.holdout, synthetic, auxiliary, types=types, options=settings.options, seed=seed,
                progress=sub_progress(both, stops[0], stops[1]),
            )
            both(stops[1], f"{name}: utility")
            utility = utility_score(split.train, synthetic, types=types)
            if cache is not None:
                cache[audit_key] = (audit, utility)
        shadow, shadow_error = None, None
        if settings.shadow is not None:
            shadow, shadow_error = _run_shadow(name, split, synthetic, shown, settings,
                                               progress=sub_progress(both, stops[2], 1.0), cache=cache)  # fmt: skip
        both(1.0, f"{name}: done")
        return GeneratorRun(
            name=name, label=spec.label, params=shown, audit=audit, utility=utility, synthetic=synthetic,
            fit_seconds=fit_s, sample_seconds=sample_s, shadow=shadow, shadow_error=shadow_error,
        )
    except Exception as exc:  # one generator failing must not stop the others
        both(1.0, f"{name}: failed")
        return GeneratorRun(name=name, label=spec.label, params=dict(gen_params), error=_error_text(exc))


def _generator_task(name, split, auxiliary, gen_params, settings, cached):
    """One cluster task: a generator's run with its own cache entries; returns the run and the new entries."""
    cache = dict(cached)
    run = _run_generator(name, split, auxiliary, gen_params, settings, progress=None, cache=cache)
    return run, {k: v for k, v in cache.items() if k not in cached}


def _compare_on_cluster(client, names, split, auxiliary, params, settings, overall, cache, per_generator_progress):
    """Each generator as its own Dask task (so the wall time is about the slowest one's with enough workers).

    A task gets the cache entries of its own generator (a fitted model or sample from an
    earlier run is reused) and brings back the ones it made. Progress reaches the page
    per generator, when its task starts waiting and when it finishes; a generator whose
    workers died gets that as the error of its own row.
    """
    from audit_core.common.cluster import run_tasks

    own = {n: (per_generator_progress(n) if per_generator_progress is not None else None) or as_progress(None) for n in names}
    shared = client.scatter([split, auxiliary], broadcast=True, hash=False)  # a lost worker loses no input
    tasks = []
    for name in names:
        cached = {k: v for k, v in (cache or {}).items() if isinstance(k, tuple) and len(k) > 1 and k[1] == name}
        own[name](0.0, f"{name}: queued on the cluster")
        gen_params = dict(params.get(name, {}))
        tasks.append((name, *shared, gen_params, settings, cached))
    done = [0]

    def finished(i: int, result: tuple) -> None:
        run = result[0]
        done[0] += 1
        own[names[i]](1.0, f"{names[i]}: " + ("done" if run.ok else "failed"))
        overall(done[0] / len(names), f"{names[i]}: finished ({done[0]} of {len(names)} generators)")

    def failed(i: int, exc: BaseException) -> tuple:
        spec = GENERATORS[names[i]]
        return GeneratorRun(name=names[i], label=spec.label, params=dict(params.get(names[i], {})), error=_error_text(exc)), {}

    results = run_tasks(client, _generator_task, tasks, labels=[f"generator {n}" for n in names], on_done=finished,
                        on_error=failed)  # fmt: skip
    if cache is not None:
        for _, entries in results:
            cache.update(entries)
    return [run for run, _ in results]


def _compare_in_process(
    names: Sequence[str],
    split: RealSplit,
    auxiliary: pd.DataFrame | None,
    params: Mapping[str, Mapping[str, Any]],
    settings: _RunSettings,
    overall: ProgressFn,
    cache: MutableMapping[Any, Any] | None,
    per_generator_progress: Callable[[str], ProgressFn | None] | None,
) -> list[GeneratorRun]:
    """Each generator in turn in this process, each with an equal share of the overall progress."""
    runs = []
    share = 1.0 / len(names)
    for i, name in enumerate(names):
        step = sub_progress(overall, i * share, (i + 1) * share)
        own = per_generator_progress(name) if per_generator_progress is not None else None

        def both(fraction: float, message: str, _step: ProgressFn = step, _own: ProgressFn | None = own) -> None:
            _step(fraction, message)
            if _own is not None:
                _own(fraction, message)

        gen_params = dict(params.get(name, {}))
        runs.append(_run_generator(name, split, auxiliary, gen_params, settings, progress=both, cache=cache))
    return runs


@dataclass(frozen=True)
class ComparisonPlan:
    """What a comparison fits and audits (:func:`compare_generators`): the generators, the split, the rows, the audits.

    The comparison's knobs (``audit_core.synthetic.spec.CompareSettings``) checked every value:
    the names (at least one, each a generator), each ``--params`` value, each fraction.

    Attributes
    ----------
    names : tuple of str
        Generator names (keys of :data:`~audit_core.synthetic.generators.registry.GENERATORS`),
        in the order the rows show them; a repeated name runs once.
    params : mapping
        ``{name: {param: value}}``; missing ones take their defaults.
    fractions : mapping or None
        Split fractions (see :func:`audit_core.synthetic.split.split_real_table`); None: the defaults.
    rows : int or None
        Synthetic rows per generator; None: as many as the train part.
    options : AuditOptions
        The settings of every generator's audit (:func:`audit_core.synthetic.audit.audit_synthetic`);
        the prior and bandwidth are re-scored afterwards by :func:`rescore_comparison`.
    shadow : ShadowOptions or None
        Also attack every generator with shadow generators (:func:`audit_core.synthetic.shadow.audit.shadow_attack`:
        shadow sets drawn from every real row that is not a training row, the release the generator's own table).
    """

    names: tuple[str, ...]
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    fractions: Mapping[str, float] | None = None
    rows: int | None = None
    options: AuditOptions = field(default_factory=AuditOptions)
    shadow: ShadowOptions | None = None


def compare_generators(
    real_df: pd.DataFrame,
    plan: ComparisonPlan,
    *,
    types: ColumnTypes | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    cache: MutableMapping[Any, Any] | None = None,
    per_generator_progress: Callable[[str], ProgressFn | None] | None = None,
    client: Any = None,
) -> GeneratorComparison:
    """Fit several generators on one real table and audit each (docs/methods.md §1).

    Parameters
    ----------
    real_df : pandas.DataFrame
        The steward's real table; it is split by :func:`split_real_table`.
    plan : ComparisonPlan
        The generators and their settings, the split fractions, the rows, the audits' options.
    types : ColumnTypes, optional
        Column types; inferred from the real table when None.
    seed : int
        Seeds the split, every fit, every sample and the audits.
    progress : ProgressFn, optional
        Overall progress.
    cache : mutable mapping, optional
        Where fitted generators and samples are kept between calls (a dict the
        page keeps in session state); see :func:`fit_and_sample`.
    per_generator_progress : callable, optional
        ``name -> ProgressFn`` for a progress bar per generator (epochs where
        the generator has them; with a cluster, queued and finished).
    client : distributed.Client, optional
        Fit each generator as its own task on this Dask cluster; the runs are
        the same as in one process (every step is seeded), in the same order.

    Returns
    -------
    GeneratorComparison
        One run per generator. A generator that fails (cannot fit, diverges,
        bad parameter) gets its own error message in its row; the others still complete.

    Raises
    ------
    InputError
        Bad real table or split, every column ignored, fewer synthetic rows than the audit needs (these
        concern every generator alike), or no generator completed (each reason named).
    """
    names = list(dict.fromkeys(plan.names))
    if types is None:
        types = infer_column_types(real_df)
    if not types.columns:
        raise InputError("Every column of the real table is ignored; un-ignore at least one column to compare.")
    check_generator_input(real_df, types=types)
    split = split_real_table(real_df, fractions=plan.fractions, seed=seed)
    n_rows = len(split.train) if plan.rows is None else int(plan.rows)
    if n_rows < MIN_PER_CLASS:  # the audit of each sample needs that many synthetic records: refused before any fit
        raise InputError(
            f"The number of synthetic rows must be at least {MIN_PER_CLASS} (the audit needs that many synthetic "
            f"records); got {n_rows}."
        )
    overall = as_progress(progress)
    auxiliary = split.auxiliary if len(split.auxiliary) else None
    settings = _RunSettings(types=types, rows=n_rows, seed=seed, options=plan.options, shadow=plan.shadow)
    if client is not None:
        runs = _compare_on_cluster(client, names, split, auxiliary, plan.params, settings, overall, cache,
                                   per_generator_progress)  # fmt: skip
    else:
        runs = _compare_in_process(names, split, auxiliary, plan.params, settings, overall, cache,
                                   per_generator_progress)  # fmt: skip
    overall(1.0, "comparison done")
    if not any(run.ok for run in runs):  # nothing to compare: a refusal, not a result
        reasons = {run.error for run in runs}
        why = next(iter(reasons)) if len(reasons) == 1 else "; ".join(f"{run.name}: {run.error}" for run in runs)
        raise InputError(f"No generator completed ({why.rstrip('.')}); fix that and run the comparison again.")
    return GeneratorComparison(runs=tuple(runs), split=split, types=types, rows=n_rows, seed=seed, real=real_df,
                               shadow=plan.shadow)  # fmt: skip
