"""Attribute inference: can a secret of a training record be read off its nearest synthetic row?

For each secret column the attacker knows the quasi-identifiers, takes the nearest synthetic
row on them (:mod:`audit_core.synthetic.disclosure.neighbours`) and reads its secret. Success:
the same category (or both missing), or for a numeric secret ``|guess - truth| <= tolerance *
|truth|`` (default 5 %; anonymeter divides by the guess instead). Baseline: the secret of a
random synthetic row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.synthetic.disclosure.attack_risk import AttackRisk
from audit_core.synthetic.disclosure.neighbours import attacked_table, column_encoding
from audit_core.synthetic.disclosure.roles import DisclosureRoles
from audit_core.synthetic.distance import nearest_gower

__all__ = ["NUMERIC_TOLERANCE", "inference"]

NUMERIC_TOLERANCE = 0.05
"""Relative tolerance within which a numeric secret counts as inferred."""


def inference(
    frames: dict[str, pd.DataFrame],
    types: ColumnTypes,
    roles: DisclosureRoles,
    targets: np.ndarray,
    controls: np.ndarray,
    tolerance: float,
    rng: np.random.Generator,
) -> tuple[dict[str, AttackRisk], dict[str, list[list[str]]]]:
    """The attribute-inference attack on every secret column.

    Returns
    -------
    inference : dict of str to AttackRisk
        One result per secret column.
    inferred : dict of str to list of list of str
        For ``"train"`` (each target) and ``"holdout"`` (each control), the secrets guessed right.
    """
    real = [frames["train"], frames["holdout"]]
    syn = frames["synthetic"]
    n_syn = len(syn)
    enc = column_encoding(real, types, roles.known)
    shuffled = rng.permutation(n_syn)  # ties broken at random, not by the synthetic table's row order
    both = attacked_table(frames, targets, controls)
    nearest = shuffled[nearest_gower(enc.transform(both), enc.transform(syn.iloc[shuffled])).index]
    guesses = {"train": nearest[: targets.size], "holdout": nearest[targets.size :]}
    random_rows = rng.integers(0, n_syn, size=targets.size)
    inference: dict[str, AttackRisk] = {}
    inferred: dict[str, list[list[str]]] = {"train": [[] for _ in targets], "holdout": [[] for _ in controls]}
    for secret in roles.secrets:
        numeric = secret in types.numeric
        guess_values = syn[secret].to_numpy()
        ok = {}
        for name, rows in (("train", targets), ("holdout", controls)):
            ok[name] = _correct(guess_values[guesses[name]], frames[name][secret].to_numpy()[rows], numeric, tolerance)
            for i in np.flatnonzero(ok[name]):
                inferred[name][i].append(secret)
        base = _correct(guess_values[random_rows], frames["train"][secret].to_numpy()[targets], numeric, tolerance)
        inference[secret] = AttackRisk.from_counts(
            "inference", column=secret, n_attacks=targets.size, n_success=int(ok["train"].sum()),
            n_control=controls.size, control_success=int(ok["holdout"].sum()), n_baseline=targets.size,
            baseline_success=int(base.sum()),
        )  # fmt: skip
    return inference, inferred


def _correct(guess: np.ndarray, truth: np.ndarray, numeric: bool, tolerance: float) -> np.ndarray:
    """Whether each guess is the secret: same category, or within ``tolerance * |truth|`` for numbers; both missing counts."""
    g, t = pd.isna(guess), pd.isna(truth)
    both = g & t
    if numeric:
        gv = np.asarray(guess, dtype=np.float64)
        tv = np.asarray(truth, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            hit = np.abs(gv - tv) <= tolerance * np.abs(tv)
    else:
        hit = (~g) & (~t) & (np.asarray(guess, dtype=object) == np.asarray(truth, dtype=object))
    return np.asarray(both | hit, dtype=bool)
