"""Linkability: can the two halves of a training record be linked through the synthetic table?

The attacker holds two disjoint sets of columns about the same person (say demographics and
finances). For each target it finds the ``k`` nearest synthetic rows of each half separately
(Gower distance over that half only, :mod:`audit_core.synthetic.disclosure.neighbours`);
success: the two neighbour sets share a row. Baseline: two random sets of ``k`` synthetic rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.synthetic.disclosure.attack_risk import AttackRisk
from audit_core.synthetic.disclosure.neighbours import attacked_table, column_encoding, knn_gower
from audit_core.synthetic.disclosure.roles import DisclosureRoles

__all__ = ["linkability"]


def linkability(
    frames: dict[str, pd.DataFrame],
    types: ColumnTypes,
    roles: DisclosureRoles,
    targets: np.ndarray,
    controls: np.ndarray,
    link_k: int,
    rng: np.random.Generator,
) -> tuple[AttackRisk, np.ndarray, np.ndarray]:
    """The linkability attack; returns its risk and which targets and controls were linked."""
    real = [frames["train"], frames["holdout"]]
    syn = frames["synthetic"]
    n_syn = len(syn)
    both = attacked_table(frames, targets, controls)
    nn = []
    for half in (roles.link_a, roles.link_b):  # targets and controls in one scan per half
        enc = column_encoding(real, types, half)
        shuffled = rng.permutation(n_syn)  # ties broken at random, independently in each half
        nn.append(shuffled[knn_gower(enc.transform(both), enc.transform(syn.iloc[shuffled]), link_k)])
    hit = (nn[0][:, :, None] == nn[1][:, None, :]).any(axis=(1, 2))
    linked_t, linked_c = hit[: targets.size], hit[targets.size :]
    k = min(link_k, n_syn)
    rand_a, rand_b = _random_sets(rng, targets.size, n_syn, k), _random_sets(rng, targets.size, n_syn, k)
    base = (rand_a[:, :, None] == rand_b[:, None, :]).any(axis=(1, 2))
    risk = AttackRisk.from_counts(
        "linkability", n_attacks=targets.size, n_success=int(linked_t.sum()), n_control=controls.size,
        control_success=int(linked_c.sum()), n_baseline=targets.size, baseline_success=int(base.sum()),
    )  # fmt: skip
    return risk, linked_t, linked_c


def _random_sets(rng: np.random.Generator, n: int, m: int, k: int) -> np.ndarray:
    """``n`` random sets of ``k`` distinct rows out of ``m`` (k is small next to m)."""
    out = rng.integers(0, m, size=(n, k))
    for i in range(n):
        while np.unique(out[i]).size < k:
            out[i] = rng.choice(m, size=k, replace=False)
    return out
