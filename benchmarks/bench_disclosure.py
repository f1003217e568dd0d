"""Singling out, linkability and inference (audit_core.synthetic.disclosure) timed against anonymeter, same work.

The issue's target: all three attacks, 2,000 attacks each, on 20,000-row tables, in
under 10 s on 2 cores. Data: Adult rows (``sample_data/adult.csv``) drawn with
replacement into a 20,000-row training table and a 20,000-row control; the synthetic
table is a bootstrap of the training rows (the worst case for the singling-out
predicate search: many rows repeat). The attacker knows every column but
``income_per_year`` (the secret); the linkability halves are the first and second half
of the known columns; k = 1; multivariate predicates of 3 columns, plus the univariate
ones. numba and BLAS are held to 2 threads. The kernels are compiled (or loaded from
numba's cache) on a tiny table first; that one-time cost is printed apart.

anonymeter cannot be installed beside numpy 2 (it pins numpy < 1.27): give the python of
a throwaway venv (``python3 -m venv /tmp/anonvenv && /tmp/anonvenv/bin/pip install
anonymeter``) with ``--anonymeter /tmp/anonvenv/bin/python`` and it runs the same work
through ``benchmarks/compare_anonymeter.py`` (``n_jobs=2``), stopped after
``--anonymeter-timeout`` seconds.

Usage: python benchmarks/bench_disclosure.py [--rows 20000] [--attacks 2000]
       [--anonymeter PYTHON] [--anonymeter-timeout 1800]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from compare_anonymeter import SECRET, roles, scenarios  # noqa: E402

from audit_core.synthetic.disclosure.audit import DisclosureOptions, audit_disclosure  # noqa: E402
from audit_core.synthetic.disclosure.roles import DisclosureRoles  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--attacks", type=int, default=2_000)
    ap.add_argument("--anonymeter", help="python of a venv with anonymeter installed")
    ap.add_argument("--anonymeter-timeout", type=float, default=1800)
    args = ap.parse_args()

    train, control, synth = scenarios(args.rows)
    syn = synth["bootstrap"]
    known, a, b = roles(list(train.columns))
    r = DisclosureRoles(known=tuple(known), link_a=tuple(a), link_b=tuple(b), secrets=(SECRET,))
    t0 = time.perf_counter()
    audit_disclosure(train.head(300), control.head(300), train.head(300), roles=r, options=DisclosureOptions(n_attacks=50))
    warm = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    res = audit_disclosure(train, control, syn, roles=r, options=DisclosureOptions(n_attacks=args.attacks), seed=0)
    ours, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{args.rows:,}-row tables, {args.attacks:,} attacks each, 2 threads")
    print(f"  audit_core.synthetic.disclosure: {ours:.2f} s wall, {cpu:.2f} s CPU over all threads "
          f"(one-time compile / cache load before it: {warm:.1f} s)")  # fmt: skip
    for key, x in res.results():
        print(f"    {key:28s} risk {x.risk:.3f} [{x.ci_low:.3f}, {x.ci_high:.3f}]  n = {x.n_attacks}")
    print(f"  target < 10 s: {'met' if ours < 10 else 'NOT met'}")
    if args.anonymeter:
        out = Path(tempfile.mkdtemp()) / "anonymeter.json"
        cmd = [args.anonymeter, str(HERE / "compare_anonymeter.py"), "--anonymeter", "--rows", str(args.rows),
               "--only", "bootstrap", "--out", str(out)]  # fmt: skip
        t0 = time.perf_counter()
        try:
            subprocess.run(cmd, check=True, timeout=args.anonymeter_timeout, capture_output=True)
            theirs = json.loads(out.read_text())["bootstrap"]["seconds"]
            print(f"  anonymeter (n_jobs=2): {theirs:.1f} s  ->  ratio {theirs / ours:.1f}x")
        except subprocess.TimeoutExpired:
            print(f"  anonymeter (n_jobs=2): not done after {time.perf_counter() - t0:.0f} s  ->  ratio > "
                  f"{(time.perf_counter() - t0) / ours:.0f}x")  # fmt: skip


if __name__ == "__main__":
    main()
