"""ART 1.20's shadow-model black-box membership attack on one target, in ART's own environment (run by bench_model_art.py).

Our script calling the Adversarial Robustness Toolbox (not a dependency of this project: it runs in
a throwaway environment, e.g. ``python -m venv /tmp/artvenv && /tmp/artvenv/bin/pip install
adversarial-robustness-toolbox==1.20.1 scikit-learn==1.9.1 numpy scipy pandas tqdm six setuptools
packaging``). It needs neither this project nor torch.

Given the benchmark's arrays (``--data``: members, population, the audit's split of the population
into candidate non-members and the shadow pool), it fits the target again from its recipe
(``--target``: a scikit-learn class and its parameters, seeded: the same model the audit got as a
file, checked by its probabilities), then ART's ``ShadowModels`` (``--shadow-models`` copies of
the target's own recipe, each on a random half of the pool: ART at its best, knowing how the target
was trained) and ``MembershipInferenceBlackBox`` with the attack model ``--attack-model`` (``rf`` or
``gb``; ART's default neural network needs torch). It scores every member and candidate non-member.
CPU time (``time.process_time``) and wall time run from the trained target to the scores.

Writes ``--out`` (.npz: ``scores``, the target's ``probabilities``) and prints one JSON line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
import warnings

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--target", required=True, help='JSON: {"module", "class", "params"}')
    parser.add_argument("--shadow-models", type=int, default=4)
    parser.add_argument("--attack-model", default="rf", choices=("rf", "gb"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import art
    from art.attacks.inference.membership_inference import MembershipInferenceBlackBox, ShadowModels
    from art.estimators.classification.scikitlearn import ScikitlearnClassifier

    d = np.load(args.data)
    x_m, y_m, x_p, y_p, cand, pool = (d[k] for k in ("x_m", "y_m", "x_p", "y_p", "cand", "pool"))
    spec = json.loads(args.target)
    cls = getattr(importlib.import_module(spec["module"]), spec["class"])
    classes = int(max(y_m.max(), y_p.max())) + 1
    one_hot = np.eye(classes, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = cls(**spec["params"]).fit(x_m, y_m)
        x_eval = np.vstack([x_m, x_p[cand]])
        y_eval = one_hot[np.r_[y_m, y_p[cand]]]
        probabilities = target.predict_proba(x_eval)
        cpu, wall = time.process_time(), time.perf_counter()
        template = ScikitlearnClassifier(model=cls(**spec["params"]))
        template.fit(x_p[pool[:200]], one_hot[y_p[pool[:200]]])  # ART clones a template that knows its class count
        shadows = ShadowModels(template, num_shadow_models=args.shadow_models, random_state=args.seed)
        (mx, my, mp), (nx, ny, npred) = shadows.generate_shadow_dataset(x_p[pool], one_hot[y_p[pool]])
        attack = MembershipInferenceBlackBox(ScikitlearnClassifier(model=target), attack_model_type=args.attack_model)
        attack.fit(mx, my, nx, ny, mp, npred)
        scores = np.asarray(attack.infer(x_eval, y_eval, probabilities=True), dtype=np.float64)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    scores = scores.reshape(len(x_eval), -1)[:, -1]
    np.savez(args.out, scores=scores, probabilities=probabilities)
    print(json.dumps({"cpu_seconds": cpu, "wall_seconds": wall, "art": art.__version__, "attack_model": args.attack_model,
                      "shadow_models": args.shadow_models, "shadow_train_size": int(len(mx) // args.shadow_models)}))


if __name__ == "__main__":
    main()
