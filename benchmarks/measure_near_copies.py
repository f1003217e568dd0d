"""The near-copy catalogue's power on the bundled samples, and false alarms on independent synthetic data (issue 28).

Figures, not timings. For each kind of :data:`audit_core.synthetic.planted.NEAR_COPY_KINDS`, each
share of the synthetic rows (0.5 %, 1 %, 2 %) and each bundled table (``sample_data/adult``,
``sample_data/german_credit``: the honest GaussianCopula table with training rows planted into it),
``--runs`` seeded runs of the whole tabular audit; the power is the share of runs whose release
decision is at least ``elevated`` (``inconclusive``, German Credit's reading when nothing is found
with its 300 non-members, does not count). ``--null`` runs audit independent populations (each a fresh
training / holdout / auxiliary split of the bundled full table, ``sample_data/<table>.csv``, and a
synthetic table of its other rows; German Credit has none left, so each synthetic column is drawn on
its own from the auxiliary rows) and print how often the decision is at least ``elevated`` and how
often the linkage scan alone rejects (its level: 5 %); ``--null-start`` splits the runs over processes.
``--kinds none`` is the control, nothing planted (its one count fills its row).
``--root DIR`` audits with another checkout's ``audit_core``
(``git archive REV | tar -x -C DIR``) for a before / after; the planting always comes from this
checkout.

``--save FILE`` merges the counts into a JSON file (a later run replaces the cells it measured), and
``--write`` renders that file into README.md and docs/methods.md between their
``<!-- near-copy power -->`` markers: the figures there come from this script, never typed by hand.

Usage: python benchmarks/measure_near_copies.py [--tables adult german_credit] [--kinds changed_3 ...]
       [--shares 0.005 0.01 0.02] [--runs 20] [--null 0] [--null-start 0] [--root DIR] [--save FILE] [--write]
       python benchmarks/measure_near_copies.py --runs 0 --write   (render benchmarks/results/near_copies.json)
On the shared 2-core machine one audit took 3-6 s on Adult and 1-3 s on German Credit under load;
several processes given the same ``--save`` file fill it together (each cell written atomically).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "near_copies.json"
MARKER = re.compile(r"(<!-- near-copy power -->\n).*?(<!-- /near-copy power -->)", re.S)
TITLES = {"adult": "Adult", "german_credit": "German Credit"}
ELEVATED = ("elevated", "high")
NONE = "none"
"""The control kind: the honest GaussianCopula sample with nothing planted (measure it at one share)."""


def _load_planting():
    spec = importlib.util.spec_from_file_location("_planted", ROOT / "audit_core" / "synthetic" / "planted.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["_planted"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _tables(name: str) -> dict[str, pd.DataFrame]:
    folder = ROOT / "sample_data" / name
    return {n: pd.read_csv(folder / f"{n}.csv") for n in ("train", "holdout", "auxiliary", "synthetic_gaussian_copula")}


def _independent(name: str, t: dict[str, pd.DataFrame], rng: np.random.Generator) -> tuple[dict[str, pd.DataFrame], str]:
    """A fresh population split and a synthetic table independent of it, and how the synthetic rows were drawn.

    Each run draws new training, holdout and auxiliary rows (the bundled sizes) from the full
    bundled table, ``sample_data/<table>.csv``: the scan conditions on the split, so runs on one
    fixed split are not independent tests of its level (on the bundled Adult split, 200 synthetic
    draws read 18 % at the 5 % level, the same split with training and holdout swapped 0 of 30).
    The synthetic rows are other rows of the full table, none equal to a row of the split (Adult
    without ``fnlwgt`` has natural duplicates: an equal row is a verbatim copy to the audit), when
    there are enough (Adult); otherwise
    (German Credit: 1,000 rows, all in the split) each column drawn on its own from the auxiliary rows.
    """
    full = pd.read_csv(ROOT / "sample_data" / f"{name}.csv")
    sizes = [len(t[k]) for k in ("train", "holdout", "auxiliary")]
    order = rng.permutation(len(full))
    cuts = np.cumsum([0, *sizes])
    split = {k: full.iloc[order[cuts[i] : cuts[i + 1]]].reset_index(drop=True)
             for i, k in enumerate(("train", "holdout", "auxiliary"))}  # fmt: skip
    rest = full.iloc[order[cuts[-1] :]].reset_index(drop=True)
    key = lambda f: pd.util.hash_pandas_object(f.astype(str), index=False)  # noqa: E731
    used = set(key(pd.concat(list(split.values()), ignore_index=True)))
    rest = rest[~key(rest).isin(used).to_numpy()].reset_index(drop=True)  # no row equal to a real record of the split
    n = len(t["synthetic_gaussian_copula"])
    if len(rest) >= n:
        split["synthetic"] = rest.iloc[rng.choice(len(rest), size=n, replace=False)].reset_index(drop=True)
        return split, "a fresh split of the full table, synthetic rows its other rows (none equal to a row of the split)"
    aux = split["auxiliary"]
    split["synthetic"] = pd.DataFrame({c: aux[c].to_numpy()[rng.integers(0, len(aux), n)] for c in aux.columns})
    return split, "a fresh split of the full table, each synthetic column drawn on its own from the auxiliary rows"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=["adult", "german_credit"])
    parser.add_argument("--kinds", nargs="+", default=None)
    parser.add_argument("--shares", nargs="+", type=float, default=[0.005, 0.01, 0.02])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--null", type=int, default=0, help="independent populations audited per bundled table")
    parser.add_argument("--null-start", type=int, default=0, help="the first null run's seed (split the runs over processes)")
    parser.add_argument("--root", type=Path, default=None, help="audit with this checkout's audit_core")
    parser.add_argument("--save", type=Path, default=None, help=f"merge the counts into this JSON file (e.g. {RESULTS})")
    parser.add_argument("--write", action="store_true", help="render --save's file (default: the bundled one) into the docs")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root or ROOT))
    if args.write and not args.runs and not args.null:
        write(args.save or RESULTS)
        return
    planted = _load_planting()
    from audit_core.synthetic.audit import audit_synthetic
    from audit_core.synthetic.verdict import decision

    kinds = args.kinds or list(planted.NEAR_COPY_KINDS)
    print(f"audit_core from {args.root or ROOT}; {args.runs} runs per cell; power = share of runs at least 'elevated'")
    for name in args.tables:
        t = _tables(name)
        header = " | ".join(f"{100 * s:g} %" for s in args.shares)
        sizes = ", ".join(f"{len(t[k])} {k.split('_')[0]}" for k in t)
        print(f"\n{name}: {sizes} rows\n\n| kind | {header} |\n|---|" + "---|" * len(args.shares))
        for kind in kinds if args.runs else []:
            cells = []
            for share in args.shares:
                hits, start = 0, time.time()
                for run in range(args.runs):
                    syn = (t["synthetic_gaussian_copula"] if kind == NONE else  # the control: nothing planted
                           planted.plant_near_copies(t["synthetic_gaussian_copula"], t["train"], kind=kind, share=share,
                                                     seed=run).synthetic)  # fmt: skip
                    audit = audit_synthetic(t["train"], t["holdout"], syn, t["auxiliary"], seed=run)
                    hits += decision(audit).level in ELEVATED
                cells.append(f"{hits}/{args.runs}")
                _save(args.save, ("power", name, kind, f"{share:g}"), [hits, args.runs])
                print(f"  ({kind}, {100 * share:g} %: {hits}/{args.runs}, {time.time() - start:.0f} s)", file=sys.stderr)
            print(f"| {kind} | " + " | ".join(cells) + " |", flush=True)
        if args.null:
            elevated = linkage = inconclusive = 0
            how = ""
            for run in range(args.null_start, args.null_start + args.null):
                s, how = _independent(name, t, np.random.default_rng([12345, run]))
                audit = audit_synthetic(s["train"], s["holdout"], s["synthetic"], s["auxiliary"], seed=run)
                level = decision(audit).level
                elevated += level in ELEVATED
                inconclusive += level == "inconclusive"
                linkage += bool(audit.linkage.excess)
            counts = {"runs": args.null, "elevated": elevated, "inconclusive": inconclusive, "linkage": linkage, "how": how}
            _save(args.save, ("null", name, str(args.null_start)), counts)
            print(f"\n{name}, independent synthetic tables ({how}, {args.null} runs): decision at least elevated "
                  f"{elevated} ({100 * elevated / args.null:.1f} %), inconclusive {inconclusive}, linkage scan alone "
                  f"{linkage} ({100 * linkage / args.null:.1f} %)")  # fmt: skip
    if args.write and args.save:
        write(args.save)


def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"power": {}, "null": {}}


def _save(path: Path | None, keys: tuple[str, ...], value: object) -> None:
    """Set one cell of the file, read afresh (another process may be filling other cells)."""
    if path is None:
        return
    saved = _read(path)
    node = saved
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(f".{os.getpid()}.part")
    part.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n")
    os.replace(part, path)  # atomic: another process never reads a half-written file


def render(saved: dict) -> str:
    """The power table (kinds x shares x tables) and the false alarms, as markdown."""
    tables = [t for t in TITLES if t in saved["power"]]
    shares = sorted({s for t in tables for k in saved["power"][t].values() for s in k}, key=float)
    seen = {k for t in tables for k in saved["power"][t]}
    known = [NONE, *_load_planting().NEAR_COPY_KINDS]
    kinds = [k for k in known if k in seen] + sorted(seen - set(known))
    head = " | ".join(f"{TITLES[t]} {100 * float(s):g} %" for t in tables for s in shares)
    lines = [f"| near-copy kind | {head} |", "|---|" + "---:|" * (len(tables) * len(shares))]
    for kind in kinds:
        cells = []
        for t in tables:
            for s in shares:
                cell = saved["power"][t].get(kind, {})
                hit = next(iter(cell.values()), None) if kind == NONE else cell.get(s)
                cells.append(f"{100 * hit[0] / hit[1]:.0f} % ({hit[0]}/{hit[1]})" if hit else "–")
        lines.append(f"| {'nothing planted (control)' if kind == NONE else kind} | " + " | ".join(cells) + " |")
    out = "\n".join(lines) + "\n"
    nulls = []
    for t in TITLES:
        parts = [p for p in saved.get("null", {}).get(t, {}).values() if isinstance(p, dict) and "runs" in p]
        if parts:
            total = {k: sum(p[k] for p in parts) for k in ("runs", "elevated", "inconclusive", "linkage")}
            nulls.append((t, total | {"how": parts[0]["how"]}))
    if nulls:
        runs = sum(n["runs"] for _, n in nulls)
        link = sum(n["linkage"] for _, n in nulls)
        out += ("\nFalse alarms on independent populations (" + "; ".join(
            f"{TITLES[t]}: {n['runs']} populations, {n['how']}: at least elevated {n['elevated']} "
            f"({100 * n['elevated'] / n['runs']:.1f} %), inconclusive {n['inconclusive']}, linkage scan alone "
            f"{n['linkage']} ({100 * n['linkage'] / n['runs']:.1f} %)" for t, n in nulls)
            + f"); the linkage scan over all {runs}: {link} ({100 * link / runs:.1f} %) at its 5 % level.\n")  # fmt: skip
    return out


def write(path: Path) -> None:
    """Render the saved counts into README.md and docs/methods.md between their markers."""
    text = render(_read(path))
    for doc in (ROOT / "README.md", ROOT / "docs" / "methods.md"):
        old = doc.read_text()
        new, n = MARKER.subn(lambda m: m.group(1) + "\n" + text + "\n" + m.group(2), old)
        if n != 1:
            raise SystemExit(f"{doc}: expected one <!-- near-copy power --> block, found {n}")
        doc.write_text(new)
        print(f"wrote the near-copy power table into {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
