"""Make the bundled membership-score file for the Score check page (a seeded simulation).

Usage::

    python sample_data/make_scores.py

Output: ``scores.csv`` in this folder, 10,000 rows = two attacks ("lira" and "loss")
scoring the same 5,000 records (2,500 members, 2,500 non-members), with the columns
``record_id, attack, score, is_member``. The scores are simulated, not taken from a
model: a non-member's score is N(0, 1); a member's is shifted by 0.3 (the small,
average leak every member has) and, for 8 % of the members (the exposed few), by a
further 3.2 under "lira" (a strong per-record attack) or 1.2 under "loss" (a weak
global-threshold one). Averages (AUC) barely move; the TPR at low FPR and the
epsilon lower bound show the exposed few. Deterministic: same seed, same file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEED = 20261201
N_PER_CLASS = 2_500
EXPOSED = 0.08


def make_scores(seed: int = SEED, n_per_class: int = N_PER_CLASS) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    is_member = rng.permutation(np.r_[np.ones(n_per_class, dtype=int), np.zeros(n_per_class, dtype=int)])
    exposed = (is_member == 1) & (rng.random(is_member.size) < EXPOSED)
    record_id = [f"r{i:05d}" for i in range(is_member.size)]
    frames = []
    for attack, shift in (("lira", 3.2), ("loss", 1.2)):
        score = rng.normal(size=is_member.size) + 0.3 * is_member + shift * exposed
        frames.append(pd.DataFrame({"record_id": record_id, "attack": attack, "score": score.round(4), "is_member": is_member}))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    out = HERE / "scores.csv"
    make_scores().to_csv(out, index=False)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
