"""The shadow-generator attack, step by step: :func:`shadow_attack` (issue 29.2; docs/methods.md §1.12).

1. The tables are aligned (training, population, and the release when one is given); population
   rows equal to a training row are left out (they may be the same people).
2. The Gower encoding is fitted on the real records; every training record's isolation is
   measured and the targets chosen (:mod:`~audit_core.synthetic.shadow.targets`).
3. The time is estimated and refused up front where a CPU would run too long
   (:mod:`~audit_core.synthetic.shadow.cost`).
4. The release is the given synthetic table, or the generator fitted on the training table.
5. K shadow training sets are drawn (:mod:`~audit_core.synthetic.shadow.design`); on each the
   same generator with the same settings is fitted and sampled, seeded, in this process or as one
   Dask task per set, and the output's features for every target are kept
   (:mod:`~audit_core.synthetic.shadow.features`).
6. One test per target, cross-fitted, with its permutation p-value, and the release scored
   (:mod:`~audit_core.synthetic.shadow.scoring`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.alignment import align_tables
from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.common.errors import InputError
from audit_core.common.limits import MIN_TRAIN_ROWS
from audit_core.common.runtime import ProgressFn, as_progress, sub_progress
from audit_core.synthetic.copies import row_keys
from audit_core.synthetic.encoding import EncodedTable, GowerEncoding, encode_for_gower
from audit_core.synthetic.generators.base import check_generator_input
from audit_core.synthetic.generators.registry import make_generator
from audit_core.synthetic.shadow.cost import check_shadow_time
from audit_core.synthetic.shadow.design import ShadowDesign, design_shadows
from audit_core.synthetic.shadow.features import TargetFeatures, describe_targets, target_features
from audit_core.synthetic.shadow.result import ShadowAttack
from audit_core.synthetic.shadow.scoring import PERMUTATIONS, cross_fit
from audit_core.synthetic.shadow.targets import isolation, select_targets

__all__ = ["ShadowOptions", "shadow_attack"]

_MAX_FOLDS = 8


@dataclass(frozen=True)
class ShadowOptions:
    """The settings of one shadow attack (the ``shadow`` tool's knobs checked them).

    Attributes
    ----------
    n_targets : int
        T, the most isolated training records attacked (ignored when ``target_rows`` is given).
    n_shadows : int
        K, the shadow training sets (even).
    target_rows : tuple of int or None
        Rows of the training table the steward names as targets.
    rows : int or None
        Rows of each synthetic output; None: the release's size, or the training table's.
    permutations : int
        Re-drawn designs behind each target's p-value.
    """

    n_targets: int = 20
    n_shadows: int = 32
    target_rows: tuple[int, ...] | None = None
    rows: int | None = None
    permutations: int = PERMUTATIONS


@dataclass(frozen=True)
class _Shadow:
    """What one shadow fit needs besides its training set (the same for every set; scattered once on a cluster)."""

    generator: str
    params: Mapping[str, Any]
    types: ColumnTypes
    rows: int
    encoder: GowerEncoding
    targets: EncodedTable
    how: TargetFeatures
    reserve: pd.DataFrame | None


def _fit_output(shared: _Shadow, frame: pd.DataFrame, seed: int) -> tuple[np.ndarray, float]:
    """Fit the generator on ``frame``, sample an output, return every target's features in it and the seconds taken."""
    start = time.perf_counter()
    gen = make_generator(shared.generator, **dict(shared.params))
    gen.fit(frame, types=shared.types, seed=seed, reserve=shared.reserve)
    output = gen.sample(shared.rows, seed=seed)
    features = target_features(shared.targets, shared.encoder.transform(output), shared.how)
    return features, time.perf_counter() - start


def _outputs(
    design: ShadowDesign, shared: _Shadow, population: pd.DataFrame, targets: pd.DataFrame, *,
    progress: ProgressFn, client: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """``[K, T, F]`` features and ``[K]`` seconds of every shadow output, here or one Dask task per set."""
    k_sets = design.n_shadows
    label = f"shadow model {{}} of {k_sets}: {shared.generator}"
    if client is None:
        parts = []
        for k in range(k_sets):
            progress(k / k_sets, label.format(k + 1) + " fitting")
            parts.append(_fit_output(shared, design.training_set(k, population, targets), int(design.seeds[k])))
    else:
        from audit_core.common.cluster import run_tasks

        scattered = client.scatter(shared, broadcast=True, hash=False)
        tasks = [(scattered, design.training_set(k, population, targets), int(design.seeds[k])) for k in range(k_sets)]
        done = [0]

        def tick(i: int, _result: Any) -> None:
            done[0] += 1
            progress(done[0] / k_sets, f"{done[0]} of {k_sets} shadow models fitted on the cluster ({shared.generator})")

        def again(i: int) -> tuple:
            return (client.scatter(shared, hash=False), *tasks[i][1:])

        parts = run_tasks(client, _fit_output, tasks, labels=[label.format(k + 1) for k in range(k_sets)], on_done=tick,
                          inputs_again=again)  # fmt: skip
    return np.stack([p[0] for p in parts]), np.array([p[1] for p in parts])


def _without_training_rows(
    population: pd.DataFrame, train: pd.DataFrame, types: ColumnTypes, warnings: list[str]
) -> pd.DataFrame:
    """The population without rows equal to a training row (they may be the same people: members, not strangers)."""
    same = np.isin(row_keys(population, types), row_keys(train, types))
    if same.any():
        warnings.append(f"{int(same.sum()):,} population rows equal a training row and were left out of the shadow sets.")
    return population.loc[~same].reset_index(drop=True)


def shadow_attack(
    train: pd.DataFrame,
    population: pd.DataFrame,
    *,
    generator: str,
    params: Mapping[str, Any] | None = None,
    synthetic: pd.DataFrame | None = None,
    types: ColumnTypes | None = None,
    options: ShadowOptions = ShadowOptions(),
    seed: int = 0,
    progress: ProgressFn | None = None,
    client: Any = None,
    reserve: pd.DataFrame | None = None,
) -> ShadowAttack:
    """Attack a known generator with shadow generators (module docstring; docs/methods.md §1.12).

    Parameters
    ----------
    train : pandas.DataFrame
        The generator's training table (the members; the targets are among them).
    population : pandas.DataFrame
        Records of the same population that are not members (holdout and auxiliary): the
        shadow training sets are drawn from them.
    generator : str
        A registry generator (:data:`audit_core.synthetic.generators.registry.GENERATORS`).
    params : mapping, optional
        Its settings (the others keep their defaults).
    synthetic : pandas.DataFrame, optional
        The release; None: the generator is fitted on ``train`` here (seed ``seed``).
    types : ColumnTypes, optional
        Column types; inferred from ``train`` when None.
    options : ShadowOptions
        T, K, named targets, rows per output, permutations.
    seed : int
        Seeds the design, every fit and sample, and the permutations.
    progress : ProgressFn, optional
    client : distributed.Client, optional
        Fit the shadow sets as Dask tasks (the same numbers).
    reserve : pandas.DataFrame, optional
        Rows nobody trained on, for the ``population`` reference (inside a comparison).

    Raises
    ------
    InputError
        Bad tables, too few rows, a named row out of range, or a fit a CPU would run past the limit.
    """
    started = time.perf_counter()
    report = as_progress(progress)
    report(0.0, "checking the tables")
    params = dict(make_generator(generator, **dict(params or {})).params)
    if types is None:
        types = infer_column_types(train)
    check_generator_input(train, types=types)
    frames = {"train": train, "population": population} | ({"synthetic": synthetic} if synthetic is not None else {})
    aligned = align_tables(frames, types=types, min_rows={"train": MIN_TRAIN_ROWS, "population": MIN_TRAIN_ROWS})
    types, warnings = aligned.types, list(aligned.warnings)
    tr = aligned["train"]
    pop = _without_training_rows(aligned["population"], tr, types, warnings)
    if len(pop) < MIN_TRAIN_ROWS:
        raise InputError(f"The population table has {len(pop)} rows that are not training rows; the shadow sets need "
                         f"at least {MIN_TRAIN_ROWS}.")  # fmt: skip
    encoder = encode_for_gower([tr, pop], types=types)
    tr_enc, pop_enc = encoder.transform(tr), encoder.transform(pop)
    report(0.02, "choosing the targets (isolation: mean distance to the 5 nearest real records)")
    iso = isolation(tr_enc, pop_enc)
    rows = select_targets(iso, n_targets=int(options.n_targets), named=options.target_rows)
    targets = tr.iloc[rows].reset_index(drop=True)
    targets_enc = encoder.transform(targets)
    how = describe_targets(targets_enc, pop_enc, iso[rows])
    n_out = int(options.rows or (len(synthetic) if synthetic is not None else len(tr)))
    k_sets = int(options.n_shadows)
    from audit_core.common.cluster import n_workers
    from audit_core.common.runtime import pick_device

    check_shadow_time(generator, params, rows=max(len(tr), n_out), columns=len(types.columns),
                      fits=k_sets + (synthetic is None), device_type=pick_device().type,
                      workers=n_workers(client) if client is not None else 1)  # fmt: skip
    design = design_shadows(rows.size, len(pop), n_rows=len(tr), n_shadows=k_sets,
                            n_folds=min(_MAX_FOLDS, k_sets // 2), seed=seed)  # fmt: skip
    short = len(tr) - int(design.keep.sum(axis=1).max()) - len(pop)
    if short > 0:
        warnings.append(f"The population holds {len(pop):,} rows, too few to fill shadow sets as large as the training "
                        f"table ({len(tr):,} rows): some sets are up to {short:,} rows smaller, which the attack then "
                        "learns from as well.")  # fmt: skip
    shared = _Shadow(generator, params, types, n_out, encoder, targets_enc, how, reserve)
    if synthetic is None:
        report(0.04, f"fitting {generator} on the training table (the release)")
        release, _ = _fit_output(shared, tr, seed)
    else:
        release = target_features(targets_enc, encoder.transform(aligned["synthetic"]), how)
    features, seconds = _outputs(design, shared, pop, targets, progress=sub_progress(report, 0.05, 0.9), client=client)
    report(0.9, f"testing each of the {rows.size} targets ({int(options.permutations)} permutations)")
    scores = cross_fit(features, design.keep, design.folds, release, seed=seed, permutations=int(options.permutations))
    report(1.0, "done")
    return ShadowAttack(
        generator=generator, params=params, target_rows=rows, isolation=iso[rows], named=bool(options.target_rows),
        scores=scores, keep=design.keep, feature_names=tuple(how.names(t)[int(scores.feature[t])] for t in range(rows.size)),
        targets=targets, n_train=len(tr), n_population=len(pop), shadow_rows=len(tr), synthetic_rows=n_out,
        fit_seconds=seconds, seconds=time.perf_counter() - started, release_fitted=synthetic is None,
        settings={"n_targets": int(rows.size), "n_shadow_models": k_sets, "folds": design.n_folds, "seed": int(seed),
                  "permutations": int(options.permutations), "target_rows": list(options.target_rows or ())},
        warnings=tuple(warnings),
    )  # fmt: skip
