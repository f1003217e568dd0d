"""The disclosure audit: singling out, linkability and attribute inference on the same tables (:func:`audit_disclosure`).

Seeds: one ``seed`` drives every sample (targets, predicates, baselines); the same inputs
give the same numbers. The method is described in :mod:`audit_core.synthetic.disclosure`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.alignment import align_tables
from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.common.limits import Bound
from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.contract import Settings, knob
from audit_core.synthetic.disclosure.attack_risk import AttackRisk
from audit_core.synthetic.disclosure.inference import NUMERIC_TOLERANCE, inference
from audit_core.synthetic.disclosure.intervals import CONFIDENCE
from audit_core.synthetic.disclosure.linkability import linkability
from audit_core.synthetic.disclosure.predicates import predicate_tables
from audit_core.synthetic.disclosure.roles import DisclosureRoles, check_role_columns, default_roles
from audit_core.synthetic.disclosure.singling_out import SINGLING_OUT_COLUMNS, singling_out

__all__ = [
    "DISCLOSURE_RECORD_COLUMNS",
    "DisclosureAudit",
    "DisclosureOptions",
    "add_to_records",
    "audit_disclosure",
]

_DEFAULT_N_ATTACKS = 2000
"""Attacks per table (targets and control each); all records when a table is smaller."""
_MIN_CONTROL = 20
"""Fewest control (holdout) and training records the attacks accept."""

#: Columns added to the per-record table (``--records`` CSV, exposed records).
DISCLOSURE_RECORD_COLUMNS: tuple[str, ...] = ("singled_out", "linked", "inferred")


@dataclass(frozen=True)
class DisclosureOptions(Settings):
    """The settings of the disclosure attacks (:func:`audit_disclosure`), with their defaults.

    ``n_attacks`` and ``link_k`` are the tabular audit's knobs (``--n-attacks``, ``--link-k``):
    :meth:`validate` checks them by those knobs, with the CLI's sentences; ``n_cols`` and
    ``tolerance`` are knobs of these options. All are checked once per audit, in :func:`audit_disclosure`.

    Attributes
    ----------
    n_attacks : int
        Attacks on each of training and control (all records when a table is smaller);
        singling-out predicates generated.
    link_k : int
        Neighbours per half in the linkability attack.
    n_cols : int
        Columns per multivariate singling-out predicate (1 to 10).
    tolerance : float
        Relative tolerance for numeric secrets (0 to 1).
    """

    n_attacks: int = _DEFAULT_N_ATTACKS
    link_k: int = 1
    n_cols: int = knob(SINGLING_OUT_COLUMNS, "Columns per predicate", flag="n_cols",
                       bound=Bound("the number of columns per singling-out predicate", 1, 10))  # fmt: skip
    tolerance: float = knob(NUMERIC_TOLERANCE, "Numeric tolerance", flag="tolerance",
                            bound=Bound("the numeric tolerance", 0.0, 1.0, integer=False))  # fmt: skip

    def validate(self) -> None:
        """Its own knobs, then the attacks per table and the neighbours by the tabular audit's knobs."""
        from audit_core.synthetic.spec import TabularSettings

        super().validate()
        TabularSettings.checked(n_attacks=self.n_attacks, link_k=self.link_k)

    def to_json(self, seed: int) -> dict[str, Any]:
        """The settings a disclosure audit records (:attr:`DisclosureAudit.settings`)."""
        return {"n_attacks": int(self.n_attacks), "link_k": int(self.link_k), "n_cols": int(self.n_cols),
                "tolerance": float(self.tolerance), "seed": int(seed), "confidence": CONFIDENCE}  # fmt: skip


@dataclass(frozen=True)
class DisclosureAudit:
    """Result of :func:`audit_disclosure`.

    Attributes
    ----------
    singling_out : AttackRisk
        Multivariate singling out.
    singling_out_univariate : AttackRisk
        Univariate singling out.
    linkability : AttackRisk or None
        None when no linkability split was given and none could be made.
    inference : dict of str to AttackRisk
        One per secret column.
    records : pandas.DataFrame
        One row per attacked record: ``source`` ("train" or "holdout"), ``row`` (of that
        input table) and :data:`DISCLOSURE_RECORD_COLUMNS`: ``singled_out`` (a successful
        predicate isolates it; missing when the record was not in the evaluated sample),
        ``linked``, ``inferred`` (the secrets guessed right, ";"-separated).
    roles : DisclosureRoles
    settings : dict
        n_attacks, link_k, n_cols, tolerance, seed.
    """

    singling_out: AttackRisk
    singling_out_univariate: AttackRisk
    linkability: AttackRisk | None
    inference: dict[str, AttackRisk]
    records: pd.DataFrame = field(repr=False)
    roles: DisclosureRoles
    settings: dict[str, Any]

    def results(self) -> list[tuple[str, AttackRisk]]:
        """Every attack as ``(key, result)``, keys as in the JSON (``inference.<column>``)."""
        out = [("singling_out", self.singling_out), ("singling_out.univariate", self.singling_out_univariate)]
        if self.linkability is not None:
            out.append(("linkability", self.linkability))
        out += [(f"inference.{c}", r) for c, r in self.inference.items()]
        return out

    def worst(self) -> tuple[str, AttackRisk]:
        """The attack with the highest lower interval limit (the strongest evidence of disclosure)."""
        return max(self.results(), key=lambda kv: (kv[1].ci_low, kv[1].risk))

    def to_json(self) -> dict[str, Any]:
        """``singling_out`` (with ``univariate`` inside), ``linkability``, ``inference.<column>``, roles, settings."""
        single = self.singling_out.to_json()
        single["univariate"] = self.singling_out_univariate.to_json()
        out: dict[str, Any] = {"singling_out": single}
        if self.linkability is not None:
            out["linkability"] = self.linkability.to_json()
        out["inference"] = {c: r.to_json() for c, r in self.inference.items()}
        out["roles"] = self.roles.to_json()
        out["settings"] = dict(self.settings)
        out["method"] = "Giomi et al., PoPETs 2023 (anonymeter), on exact Gower nearest neighbours"
        return out


def audit_disclosure(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    types: ColumnTypes | None = None,
    roles: DisclosureRoles | None = None,
    options: DisclosureOptions = DisclosureOptions(),
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> DisclosureAudit:
    """Singling out, linkability and attribute inference risks of a synthetic table.

    Parameters
    ----------
    train : pandas.DataFrame
        The generator's training table (the targets).
    holdout : pandas.DataFrame
        Records of the same population the generator never saw (the control).
    synthetic : pandas.DataFrame
        The table to release.
    types : ColumnTypes, optional
        Column types; inferred from ``train`` when None.
    roles : DisclosureRoles, optional
        The attacker's knowledge, as :func:`~audit_core.synthetic.disclosure.roles.check_roles`
        accepts it (the tabular audit's ``check`` runs it before the audit);
        :func:`~audit_core.synthetic.disclosure.roles.default_roles` when None.
    options : DisclosureOptions
        Attacks per table, linkability neighbours, predicate width, numeric tolerance.
    seed : int
        Drives every sample.
    progress : ProgressFn, optional

    Returns
    -------
    DisclosureAudit

    Raises
    ------
    InputError
        Mismatched tables, too few rows, or roles naming a column the aligned tables do not compare.
    """
    options.validate()  # every option, by its knob, once per audit
    report = as_progress(progress)
    frames, types, roles = _aligned_inputs(train, holdout, synthetic, types, roles)
    n_train, n_control = len(frames["train"]), len(frames["holdout"])
    n_attacks = int(options.n_attacks)
    rng = np.random.default_rng(seed)

    report(0.0, "singling out")
    mats = predicate_tables(frames, list(roles.known), types)
    single = singling_out(mats, rng, n_attacks=n_attacks, n_cols=int(options.n_cols))

    targets = np.sort(rng.choice(n_train, size=min(n_attacks, n_train), replace=False))
    controls = np.sort(rng.choice(n_control, size=min(n_attacks, n_control), replace=False))
    linked, linked_t, linked_c = None, None, None
    if roles.link_a:
        report(0.4, "linkability")
        linked, linked_t, linked_c = linkability(frames, types, roles, targets, controls, int(options.link_k), rng)

    report(0.7, "attribute inference")
    inferences, inferred = inference(frames, types, roles, targets, controls, options.tolerance, rng)
    records = _records(single.train, single.control, targets, controls, linked_t, linked_c, inferred)
    report(1.0, "disclosure attacks done")
    return DisclosureAudit(single.multivariate, single.univariate, linked, inferences, records, roles, options.to_json(seed))


def _aligned_inputs(
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    synthetic: pd.DataFrame,
    types: ColumnTypes | None,
    roles: DisclosureRoles | None,
) -> tuple[dict[str, pd.DataFrame], ColumnTypes, DisclosureRoles]:
    """The aligned tables, the column types used and the roles (:func:`default_roles` when None).

    Default roles follow the training table's column order, without the columns alignment dropped.
    """
    if types is None:
        types = infer_column_types(train)
    order = [c for c in train.columns if c in types.columns]
    aligned = align_tables(
        {"train": train, "holdout": holdout, "synthetic": synthetic},
        types=types,
        min_rows={"train": _MIN_CONTROL, "holdout": _MIN_CONTROL, "synthetic": 1},
    )
    types = aligned.types
    order = [c for c in order if c in types.columns]
    roles = default_roles(order) if roles is None else roles
    check_role_columns(roles, order)  # a column the alignment dropped (entirely missing in a table)
    return aligned.frames, types, roles


def _records(so_train, so_control, targets, controls, linked_t, linked_c, inferred) -> pd.DataFrame:
    parts = []
    for source, so, rows, linked, inf in (
        ("train", so_train, targets, linked_t, inferred["train"]),
        ("holdout", so_control, controls, linked_c, inferred["holdout"]),
    ):
        a = pd.DataFrame({"source": source, "row": so[0].astype(np.int64), "singled_out": so[1].astype(bool)})
        b = pd.DataFrame({
            "source": source, "row": rows.astype(np.int64),
            "linked": pd.array(linked if linked is not None else [pd.NA] * rows.size, dtype="boolean"),
            "inferred": [";".join(x) for x in inf],
        })  # fmt: skip
        merged = a.merge(b, on=["source", "row"], how="outer")
        merged["singled_out"] = merged["singled_out"].astype("boolean")
        parts.append(merged)
    out = pd.concat(parts, ignore_index=True)
    return out[["source", "row", *DISCLOSURE_RECORD_COLUMNS]].sort_values(["source", "row"], ignore_index=True)


def add_to_records(records: pd.DataFrame, disclosure: DisclosureAudit) -> pd.DataFrame:
    """The per-record table (``source``, ``row``, ...) with :data:`DISCLOSURE_RECORD_COLUMNS` added.

    Records no disclosure attack looked at get missing values; nothing else changes.
    """
    extra = disclosure.records.rename(columns={c: f"disclosure_{c}" for c in DISCLOSURE_RECORD_COLUMNS})
    merged = records.merge(extra, on=["source", "row"], how="left")
    merged.index = records.index
    return merged
