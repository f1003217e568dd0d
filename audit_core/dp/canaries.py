"""Canaries of a one-run audit: which records, what label, and which are trained on (seeded coin flips).

The table's rows are shuffled once (seeded) and cut into a test split (:data:`_TEST_FRACTION`,
for the accuracies), m canaries, and the base training rows. Each canary is included in
training independently with probability 1/2. A ``population`` canary is the record as it is
(held out of the base rows); a ``mislabelled`` canary carries another class than its own,
drawn at random, which no other record supports: a much stronger membership signal. An
``outlier`` canary is a mislabelled one moved off the data: its encoded features shifted by
``sqrt(d)`` in a random direction (about one standard deviation per feature), so no record
lies near it and a model without DP memorises it (the crafted canaries of the auditing
literature; it is no longer a row of the table, so the train-here mode alone offers it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit_core.common.errors import InputError

__all__ = ["Canaries", "draw_canaries"]

_TEST_FRACTION = 0.2
"""Share of the rows kept out of all training, for the test accuracy."""


@dataclass(frozen=True)
class Canaries:
    """The split of one audit.

    Attributes
    ----------
    rows : np.ndarray
        ``(m,)`` table rows of the canaries.
    y : np.ndarray
        ``(m,)`` their labels as trained (flipped for mislabelled canaries).
    included : np.ndarray
        ``(m,)`` bool: trained on.
    base, test : np.ndarray
        Rows always trained on, and rows never trained on (accuracy only).
    kind : str
    """

    rows: np.ndarray
    y: np.ndarray
    included: np.ndarray
    base: np.ndarray
    test: np.ndarray
    kind: str
    shift: np.ndarray | None = None
    """``(m, d)`` an outlier canary's move off its row, in encoded features (None for the other kinds)."""

    @property
    def m(self) -> int:
        return len(self.rows)

    def features(self, X: np.ndarray) -> np.ndarray:
        """``(m, d)`` the canaries' encoded features as trained: their rows' (moved, for outlier canaries)."""
        return X[self.rows] if self.shift is None else (X[self.rows] + self.shift).astype(X.dtype)


def _max_canaries(n_rows: int) -> int:
    """Most canaries a table of ``n_rows`` gives: half the rows outside the test split (the rest train the model)."""
    return (n_rows - round(_TEST_FRACTION * n_rows)) // 2


def draw_canaries(y: np.ndarray, *, m: int, kind: str, n_classes: int, seed: int, n_features: int = 0) -> Canaries:
    """Split the rows and draw the canaries, their labels and their coin flips (seeded).

    Raises
    ------
    InputError
        More canaries than the table gives, or a draw that includes no
        canary (or every canary): the audit needs canaries on both sides.
    """
    n = len(y)
    most = _max_canaries(n)
    if m > most:
        raise InputError(f"{m:,} canaries is more than the table's {n:,} rows allow: at most {most:,} (half of the "
                         f"rows outside the {_TEST_FRACTION:.0%} test split; the other half trains the model).")  # fmt: skip
    rng = np.random.default_rng([seed, 23])
    order = rng.permutation(n)
    n_test = round(_TEST_FRACTION * n)
    test, rows, base = order[:n_test], order[n_test : n_test + m], order[n_test + m :]
    included = rng.random(m) < 0.5
    labels = np.asarray(y, dtype=np.int64)[rows].copy()
    if kind in ("mislabelled", "outlier"):  # another class, uniformly among the others
        labels = (labels + rng.integers(1, n_classes, size=m)) % n_classes
    shift = None
    if kind == "outlier":  # a random direction, length sqrt(d): about one standard deviation per encoded feature
        direction = np.random.default_rng([seed, 37]).normal(size=(m, n_features))
        shift = direction / np.linalg.norm(direction, axis=1, keepdims=True) * np.sqrt(n_features)
    if not included.any() or included.all():
        side = "included in" if not included.any() else "left out of"
        raise InputError(f"No canary was {side} training in this draw of {m} canaries (seed {seed}): the audit needs "
                         "canaries on both sides; use more canaries or another seed.")  # fmt: skip
    return Canaries(rows=rows, y=labels, included=included, base=np.sort(base), test=np.sort(test), kind=kind,
                    shift=shift)  # fmt: skip
