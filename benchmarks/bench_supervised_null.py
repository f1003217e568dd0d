"""The supervised attack under the null: does it hold its level over many populations? (docs/methods.md §8.3)

Each population: ``--members`` members and ``--non-members`` non-members whose model outputs (three
classes, random logits) and reference-model probabilities are drawn alike, so nothing tells them
apart. The cross-fitted supervised attack scores them (:func:`audit_core.model.attacks.supervised_scores`)
and the audit's rules read the scores: the share of populations whose 95 % interval of the TPR at
1 % FPR misses 1 % (it should be at most about 5 %), and the share the model audit's release rule
(:func:`audit_core.model.verdict.decision`: elevated or high when the interval's lower end exceeds
2 % or the AUC 0.6) would raise on this attack (its false alarms).
Run::

    .venv/bin/python benchmarks/bench_supervised_null.py [--populations 400] [--members 1000 --non-members 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit_core.common.roc import roc_curve, tpr_at_fpr
from audit_core.model.attacks import supervised_features, supervised_scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--populations", type=int, default=400)
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--non-members", type=int, default=1000)
    args = parser.parse_args()

    n = args.members + args.non_members
    misses, alarms, aucs = 0, 0, []
    start = time.perf_counter()
    for i in range(args.populations):
        rng = np.random.default_rng([2029, i])
        logits = rng.normal(scale=1.5, size=(n, 3))
        prob = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        y = rng.integers(0, 3, n)
        p_ref = np.clip(prob[np.arange(n), y] + rng.normal(scale=0.05, size=(4, n)), 1e-3, 1.0)
        member = rng.permutation(np.r_[np.ones(args.members, bool), np.zeros(args.non_members, bool)])
        scores = supervised_scores(supervised_features(prob, y, p_ref)[0], member, seed=i)
        t = tpr_at_fpr(scores, member, 0.01)
        auc = roc_curve(scores, member).auc
        aucs.append(auc)
        misses += not (t.ci_low <= 0.01 <= t.ci_high)
        alarms += t.ci_low > 2 * 0.01 or auc > 0.6  # the model audit's rule (verdict.decision) on one attack
    seconds = time.perf_counter() - start
    r = args.populations
    print(f"{r} null populations of {args.members} members + {args.non_members} non-members, {seconds:.0f} s")
    print(f"AUC mean {np.mean(aucs):.4f}, sd {np.std(aucs):.4f}")
    print(f"TPR at 1 % FPR: the 95 % interval misses 1 % in {misses} ({100 * misses / r:.1f} %)")
    print(f"release rule: elevated or high in {alarms} ({100 * alarms / r:.1f} %) of the populations")


if __name__ == "__main__":
    main()
