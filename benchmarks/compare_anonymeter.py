"""Disclosure risks (audit_core.synthetic.disclosure) next to anonymeter's on the same data, same parameters.

anonymeter pins ``numpy < 1.27``, so it can never sit in this project's .venv. Run it
from a throwaway environment that also sees this repository::

    python3 -m venv /tmp/anonvenv && /tmp/anonvenv/bin/pip install anonymeter
    /work/main/.venv/bin/python benchmarks/compare_anonymeter.py --ours      # writes /tmp/disclosure_ours.json
    /tmp/anonvenv/bin/python benchmarks/compare_anonymeter.py --anonymeter   # writes /tmp/disclosure_anonymeter.json
    /work/main/.venv/bin/python benchmarks/compare_anonymeter.py --table     # prints the table

(each side runs in its own interpreter; ``--anonymeter`` does nothing when anonymeter is
not importable). Data: ``sample_data/adult.csv`` (UCI Adult), 3,000 training rows and
3,000 control rows drawn at random, and three synthetic tables of 3,000 rows: a
bootstrap of the training rows, an independent sample of other Adult rows, and that
independent sample with 150 training rows planted verbatim. Parameters: 2,000 attacks,
the attacker knows every column but ``income_per_year`` (the secret), linkability
halves = the first and second half of the known columns, k = 1, multivariate
singling-out predicates of 3 columns. Timings are wall-clock of each side's three
attacks (anonymeter with ``n_jobs=2``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OURS = Path("/tmp/disclosure_ours.json")
THEIRS = Path("/tmp/disclosure_anonymeter.json")
N_ROWS, N_PLANTED, N_ATTACKS, SEED = 3000, 150, 2000, 0
SECRET = "income_per_year"


def scenarios(n_rows: int = N_ROWS) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """Training, control and the three synthetic tables (same on both sides: numpy's seeded permutation).

    With ``n_rows`` above a third of Adult (the speed benchmark's 20,000), the rows are
    drawn with replacement; only the bootstrap table is then meaningful.
    """
    full = pd.read_csv(ROOT / "sample_data" / "adult.csv")
    rng = np.random.default_rng(SEED)
    idx = rng.permutation(len(full))
    if 3 * n_rows > len(full):
        idx = rng.integers(0, len(full), size=3 * n_rows)
    train = full.iloc[idx[:n_rows]].reset_index(drop=True)
    control = full.iloc[idx[n_rows : 2 * n_rows]].reset_index(drop=True)
    independent = full.iloc[idx[2 * n_rows : 3 * n_rows]].reset_index(drop=True)
    boot = train.iloc[rng.integers(0, n_rows, size=n_rows)].reset_index(drop=True)
    planted = independent.copy()
    planted.iloc[:N_PLANTED] = train.iloc[rng.choice(n_rows, size=N_PLANTED, replace=False)].to_numpy()
    planted = planted.astype(independent.dtypes.to_dict())
    return train, control, {"bootstrap": boot, "independent": independent, "planted copies": planted}


def roles(columns: list[str]) -> tuple[list[str], list[str], list[str]]:
    known = [c for c in columns if c != SECRET]
    half = (len(known) + 1) // 2
    return known, known[:half], known[half:]


def run_ours() -> None:
    sys.path.insert(0, str(ROOT))
    from audit_core.synthetic.disclosure.audit import DisclosureOptions, audit_disclosure
    from audit_core.synthetic.disclosure.roles import DisclosureRoles

    train, control, synth = scenarios()
    known, a, b = roles(list(train.columns))
    r = DisclosureRoles(known=tuple(known), link_a=tuple(a), link_b=tuple(b), secrets=(SECRET,))
    warm = DisclosureOptions(n_attacks=50)
    audit_disclosure(train.head(200), control.head(200), train.head(200), roles=r, options=warm)  # compile first
    out = {}
    for name, syn in synth.items():
        t0 = time.perf_counter()
        res = audit_disclosure(train, control, syn, roles=r, options=DisclosureOptions(n_attacks=N_ATTACKS), seed=SEED)
        dt = time.perf_counter() - t0
        out[name] = {key: [x.risk, x.ci_low, x.ci_high, x.attack_rate, x.control_rate, x.baseline_rate]
                     for key, x in res.results()} | {"seconds": dt}  # fmt: skip
    OURS.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


def run_anonymeter(n_rows: int = N_ROWS, only: str | None = None, out_path: Path = THEIRS) -> None:
    try:
        from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
    except ImportError:
        print("anonymeter is not importable here; see this file's docstring for the throwaway venv.")
        return
    import warnings

    warnings.simplefilter("ignore")
    train, control, synth = scenarios(n_rows)
    known, a, b = roles(list(train.columns))
    out = {}
    for name, syn in synth.items():
        if only and name != only:
            continue
        res = {}
        t0 = time.perf_counter()
        for key, mode in (("singling_out", "multivariate"), ("singling_out.univariate", "univariate")):
            ev = SinglingOutEvaluator(ori=train[known], syn=syn[known], control=control[known], n_attacks=N_ATTACKS,
                                      n_cols=3, seed=SEED).evaluate(mode=mode)  # fmt: skip
            res[key] = ev
        res["linkability"] = LinkabilityEvaluator(ori=train, syn=syn, control=control, n_attacks=N_ATTACKS,
                                                  aux_cols=(a, b), n_neighbors=1).evaluate(n_jobs=2)  # fmt: skip
        res[f"inference.{SECRET}"] = InferenceEvaluator(ori=train, syn=syn, control=control, aux_cols=known,
                                                        secret=SECRET, n_attacks=N_ATTACKS).evaluate(n_jobs=2)  # fmt: skip
        dt = time.perf_counter() - t0
        row = {}
        for key, ev in res.items():
            rr = ev.results()
            risk = ev.risk()
            row[key] = [risk.value, risk.ci[0], risk.ci[1], rr.attack_rate.value,
                        rr.control_rate.value, rr.baseline_rate.value]  # fmt: skip
        out[name] = row | {"seconds": dt}
    out_path.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


def table() -> None:
    ours, theirs = json.loads(OURS.read_text()), json.loads(THEIRS.read_text())
    print("| synthetic table | attack | ours: risk [95 % CI] | anonymeter: risk [95 % CI] "
          "| ours train / control / baseline | anonymeter train / control / baseline |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name in ours:
        for key in (k for k in ours[name] if k != "seconds"):
            o, t = ours[name][key], theirs[name][key]
            print(f"| {name} | {key} | {o[0]:.3f} [{o[1]:.3f}, {o[2]:.3f}] | {t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}] | "
                  f"{o[3]:.3f} / {o[4]:.3f} / {o[5]:.3f} | {t[3]:.3f} / {t[4]:.3f} / {t[5]:.3f} |")  # fmt: skip
    print()
    for name in ours:
        print(f"{name}: ours {ours[name]['seconds']:.1f} s, anonymeter {theirs[name]['seconds']:.1f} s, "
              f"ratio {theirs[name]['seconds'] / ours[name]['seconds']:.1f}x")  # fmt: skip


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--ours", action="store_true")
    g.add_argument("--anonymeter", action="store_true")
    g.add_argument("--table", action="store_true")
    ap.add_argument("--rows", type=int, default=N_ROWS, help="rows per table (--anonymeter only; the speed benchmark)")
    ap.add_argument("--only", help="one synthetic table: bootstrap, independent or 'planted copies' (--anonymeter only)")
    ap.add_argument("--out", type=Path, default=THEIRS, help="where --anonymeter writes its JSON")
    args = ap.parse_args()
    if args.ours:
        run_ours()
    elif args.anonymeter:
        run_anonymeter(args.rows, args.only, args.out)
    else:
        table()
