"""ART's shadow-model membership inference on the model benchmark's data, timed (run by bench_model.py --art-python).

Our script calling the Adversarial Robustness Toolbox (ART, not a dependency of this project: it
runs in a throwaway environment, e.g. ``python -m venv /tmp/artvenv && /tmp/artvenv/bin/pip install
--no-deps adversarial-robustness-toolbox && /tmp/artvenv/bin/pip install numpy scipy scikit-learn
pandas tqdm six setuptools``). It needs neither this project nor torch: the attack model is
ART's random forest (``attack_model_type="rf"``), the shadow models are scikit-learn.

Same data and split as ``bench_model.py``: the members train the target (the text columns one-hot
encoded, gradient-boosted trees of the same configuration); the population is halved with the
audit's seeded split into candidate non-members and the shadow pool. ART's ``ShadowModels``
trains 4 shadow models of the reference family's configuration (gradient-boosted trees, 200
rounds) on random halves of the pool (the size the audit's reference models get), then
``MembershipInferenceBlackBox`` fits its attack model on the shadow models' predictions and scores
every member and candidate non-member. Timed: from the trained target to the scores (shadow
training, attack fit, inference), as the audit is timed from the model file to its result.

Prints one JSON line: ``seconds``, ``auc``, ``tpr_at_1pct_fpr``, sizes, versions.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import pandas as pd


def _encode(train: pd.DataFrame, population: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.preprocessing import OneHotEncoder

    numeric = [c for c in train.columns if c != "label" and pd.api.types.is_numeric_dtype(train[c])]
    text = [c for c in train.columns if c != "label" and c not in numeric]
    enc = OneHotEncoder(handle_unknown="ignore", sparse_output=False).fit(train[text])
    return tuple(np.hstack([enc.transform(f[text]), f[numeric].to_numpy(dtype=np.float64)]).astype(np.float32)
                 for f in (train, population))  # type: ignore[return-value]  # fmt: skip


def _tpr_at(scores: np.ndarray, member: np.ndarray, fpr: float) -> float:
    neg = np.sort(scores[~member])[::-1]
    k = int(np.floor(fpr * neg.size))
    threshold = neg[k] if k < neg.size else -np.inf  # flag scores strictly above the (k+1)-th highest non-member
    return float(np.mean(scores[member] > threshold))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", required=True, help="members (CSV)")
    parser.add_argument("--population", required=True, help="population (CSV)")
    parser.add_argument("--shadow-models", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import art
    import sklearn
    from art.attacks.inference.membership_inference import MembershipInferenceBlackBox, ShadowModels
    from art.estimators.classification.scikitlearn import ScikitlearnClassifier
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    train, population = pd.read_csv(args.train), pd.read_csv(args.population)
    x_m, x_p = _encode(train, population)
    classes = sorted(set(train["label"]) | set(population["label"]))
    y_m = train["label"].map(classes.index).to_numpy()
    y_p = population["label"].map(classes.index).to_numpy()
    perm = np.random.default_rng(args.seed).permutation(len(x_p))  # the audit's split of the population
    cand, pool = np.sort(perm[: len(x_p) // 2]), np.sort(perm[len(x_p) // 2 :])
    one_hot = np.eye(len(classes), dtype=np.float32)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = HistGradientBoostingClassifier(max_iter=300, max_leaf_nodes=63, early_stopping=False, random_state=0)
        target.fit(x_m, y_m)
        template = ScikitlearnClassifier(model=HistGradientBoostingClassifier(max_iter=200, early_stopping=False,
                                                                              random_state=0))  # fmt: skip
        template.fit(x_p[pool[:200]], one_hot[y_p[pool[:200]]])  # ART clones a template that knows its class count
        start = time.perf_counter()
        classifier = ScikitlearnClassifier(model=target, clip_values=None)
        shadows = ShadowModels(template, num_shadow_models=args.shadow_models, random_state=args.seed)
        (mx, my, mp), (nx, ny, npred) = shadows.generate_shadow_dataset(x_p[pool], one_hot[y_p[pool]])
        attack = MembershipInferenceBlackBox(classifier, attack_model_type="rf")
        attack.fit(mx, my, nx, ny, mp, npred)
        x_eval = np.vstack([x_m, x_p[cand]])
        y_eval = one_hot[np.r_[y_m, y_p[cand]]]
        scores = attack.infer(x_eval, y_eval, probabilities=True)
        seconds = time.perf_counter() - start
    scores = np.asarray(scores, dtype=np.float64).reshape(len(x_eval), -1)[:, -1]
    member = np.r_[np.ones(len(x_m), dtype=bool), np.zeros(len(cand), dtype=bool)]
    print(json.dumps({
        "seconds": seconds, "auc": float(roc_auc_score(member, scores)), "tpr_at_1pct_fpr": _tpr_at(scores, member, 0.01),
        "members": int(member.sum()), "non_members": int((~member).sum()), "shadow_models": args.shadow_models,
        "shadow_train_size": int(len(mx) // args.shadow_models), "art": art.__version__, "sklearn": sklearn.__version__,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
