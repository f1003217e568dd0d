"""Why a record is exposed: the most exposed records, and one record beside its nearest synthetic row.

docs/methods.md §1.6. Each attack record's Gower distance to its nearest synthetic record
is split into per-column contributions (they add up to the distance): the columns on which
the two rows match exactly, and the ones that make up the difference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.synthetic.distance import column_contributions
from audit_core.synthetic.result import SyntheticAudit

__all__ = ["TOO_LITTLE_DATA", "exposed_records", "record_comparison"]

#: What a record whose P(member | d) does not rest on data says (records ``..._supported`` False).
TOO_LITTLE_DATA = "too little data to tell"

_SOURCES = ("train", "holdout")


def _contributions(audit: SyntheticAudit, records: pd.DataFrame) -> pd.DataFrame:
    """Per-column contributions to each record's distance (rows sum to the distance)."""
    enc = audit.encoding
    syn = enc.transform(audit.frames["synthetic"].iloc[records["nearest_synthetic_row"].to_numpy()])
    parts = []
    for source in _SOURCES:
        mask = (records["source"] == source).to_numpy()
        if not mask.any():
            continue
        query = enc.transform(audit.frames[source].iloc[records["row"].to_numpy()[mask]])
        pos = np.flatnonzero(mask)
        contrib = column_contributions(
            query,
            syn.rows(pos),
            query_rows=np.arange(pos.size),
            reference_rows=np.arange(pos.size),
            column_order=enc.column_order,
        )
        contrib.index = records.index[mask]
        parts.append(contrib)
    return pd.concat(parts).loc[records.index]


def exposed_records(
    audit: SyntheticAudit,
    *,
    k: int = 20,
    by: str = "p_member_true",
    members_only: bool = False,
) -> pd.DataFrame:
    """The ``k`` records with the highest membership probability, explained.

    Records are ranked by ``by`` (``p_member_true`` or ``p_member_realistic``),
    ties by the smaller distance. Each row names the record, its nearest
    synthetic record, how many compared columns match exactly and which columns
    make up the distance (largest contribution first). docs/methods.md §1.6.

    Parameters
    ----------
    audit : SyntheticAudit
    k : int
        Number of records.
    by : {"p_member_true", "p_member_realistic"}
        The score to rank by.
    members_only : bool
        Rank training records only (the ones whose exposure matters).

    Returns
    -------
    pandas.DataFrame
        Columns ``rank``, ``source``, ``row``, ``is_member``, ``p_member_true``,
        ``p_member_realistic``, ``distance``, ``nearest_synthetic_row``, the two ``..._supported`` flags,
        ``matching_columns`` ("12 of 14"), ``differs_in`` ("age 0.021, hours_per_week 0.014") and
        ``note`` ("too little data to tell" where the ranked probability does not rest on data:
        neither class has records near that distance, so it reads near the prior).
    """
    if by not in ("p_member_true", "p_member_realistic"):
        raise InputError(f"Rank exposed records by p_member_true or p_member_realistic, not {by!r}.")
    recs = audit.records
    if members_only:
        recs = recs[recs["is_member"]]
    top = recs.sort_values([by, "distance"], ascending=[False, True], kind="mergesort").head(max(int(k), 0))
    out = top.reset_index(drop=True)
    out.insert(0, "rank", np.arange(1, len(out) + 1))
    if out.empty:
        out["matching_columns"] = pd.Series(dtype=object)
        out["differs_in"] = pd.Series(dtype=object)
        out["note"] = pd.Series(dtype=object)
        return out
    contrib = _contributions(audit, top).reset_index(drop=True)
    n_cols = contrib.shape[1]
    out["matching_columns"] = [f"{int((row == 0).sum())} of {n_cols}" for row in contrib.to_numpy()]
    differs = []
    for _, row in contrib.iterrows():
        nz = row[row > 0].sort_values(ascending=False)
        differs.append(", ".join(f"{col} {val:.3f}" for col, val in nz.items()) or "nothing (exact copy)")
    out["differs_in"] = differs
    out["note"] = np.where(out[f"{by}_supported"].to_numpy(dtype=bool), "", TOO_LITTLE_DATA)
    return out


def record_comparison(audit: SyntheticAudit, record: int) -> pd.DataFrame:
    """One attack record beside its nearest synthetic record, column by column.

    Parameters
    ----------
    audit : SyntheticAudit
    record : int
        Row position in ``audit.records``.

    Returns
    -------
    pandas.DataFrame
        One row per compared column: ``column``, ``record``, ``nearest_synthetic``,
        ``contribution`` (adds up to the distance) and ``share_of_distance``
        (adds up to 1; 0 for an exact copy).
    """
    if not 0 <= int(record) < len(audit.records):
        raise InputError(f"There is no record {record}; choose one between 0 and {len(audit.records) - 1}.")
    rec = audit.records.iloc[[int(record)]]
    contrib = _contributions(audit, rec).iloc[0]
    cols = list(contrib.index)
    real = audit.frames[str(rec["source"].iloc[0])].iloc[int(rec["row"].iloc[0])]
    syn = audit.frames["synthetic"].iloc[int(rec["nearest_synthetic_row"].iloc[0])]
    d = float(rec["distance"].iloc[0])
    values = contrib.to_numpy(dtype=np.float64)
    return pd.DataFrame(
        {
            "column": cols,
            "record": [real[c] for c in cols],
            "nearest_synthetic": [syn[c] for c in cols],
            "contribution": values,
            "share_of_distance": values / d if d > 0 else np.zeros_like(values),
        }
    )
