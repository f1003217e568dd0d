"""The command line: ``python -m audit_core <audit> ...`` (contract in DESIGN.md).

Exit status 0 on success, 2 on bad input with one line on stderr saying what is
wrong. Each subcommand is a thin handler ``_cmd_<name>`` over the same audit_core
calls the dashboard makes, so anything the dashboard shows can be reproduced here.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

from audit_core.errors import InputError
from audit_core.limits import CLI_BOUNDS
from audit_core.outputs import check_outputs, write_output
from audit_core.report import Report, to_json_text

OUTPUT_DESTS = {"json", "html", "pdf", "records", "out"}
"""Flags (argparse ``dest``) that name files the command writes. Every subcommand's outputs are
checked by :func:`check_arguments` before the audit starts; a new output flag is added here."""


def _csv_list(text: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split(",") if c.strip()) if text else ()


def _epsilon(text: str) -> float:
    """Parse an L-inf radius given as ``8/255`` or ``0.03``."""
    try:
        return float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError) as exc:
        raise argparse.ArgumentTypeError(f"epsilon must be a number like 8/255 or 0.03, got {text!r}") from exc


def write_json(path: str | None, payload: dict[str, Any]) -> None:
    """Write the JSON summary (to a temporary name first: nothing half-written)."""
    if path:
        write_output(path, to_json_text(payload), flag="--json")


def write_report(args: argparse.Namespace, report: Report) -> None:
    """Write the report as self-contained HTML (``--html``) and/or PDF (``--pdf``)."""
    if args.html:
        write_output(args.html, report.to_html(), flag="--html")
    if args.pdf:
        with tempfile.TemporaryDirectory() as tmp:
            pdf = report.to_pdf(Path(tmp) / "report.pdf").read_bytes()
        write_output(args.pdf, pdf, flag="--pdf")


def _progress_to_stderr(quiet: bool):
    """A progress callback printing a line per 10 % step to stderr (unless --quiet)."""
    last = [-1]

    def progress(fraction: float, message: str) -> None:
        step = int(fraction * 10)
        if not quiet and step != last[0]:
            last[0] = step
            try:
                print(f"[{100 * fraction:5.1f} %] {message}", file=sys.stderr, flush=True)
            except OSError:  # stderr closed (piped into head): progress is optional, the audit goes on
                last[0] = 99

    return progress


# --------------------------------------------------------------------------- handlers
def _cmd_tabular(args: argparse.Namespace) -> int:
    """``tabular``: membership risk of a synthetic table (METHODS.md §1)."""
    from audit_core.plots.synthetic import build_report, verdict
    from audit_core.report import describe_input
    from audit_core.synthetic import RECORD_COLUMNS, audit_synthetic
    from audit_core.tables import infer_column_types, read_table

    bandwidth: str | float = args.bandwidth.strip().lower()
    if bandwidth not in ("scott", "silverman", "cv"):
        try:
            bandwidth = float(bandwidth)
        except ValueError:
            raise InputError(
                f"--bandwidth must be scott, silverman, cv or a positive number, not {args.bandwidth!r}."
            ) from None
    paths = {"train": args.train, "holdout": args.holdout, "synthetic": args.synthetic}
    if args.auxiliary:
        paths["auxiliary"] = args.auxiliary
    tables = {name: read_table(path, name=name) for name, path in paths.items()}
    types = infer_column_types(
        tables["train"],
        categorical=_csv_list(args.categorical),
        numeric=_csv_list(args.numeric),
        ignore=_csv_list(args.ignore),
    )
    disclosure = _disclosure(args, tables, types) if args.disclosure else None  # bad roles fail before the long audit
    audit = audit_synthetic(
        tables["train"],
        tables["holdout"],
        tables["synthetic"],
        tables.get("auxiliary"),
        types=types,
        prior=args.prior,
        bandwidth=bandwidth,
        bandwidth_scale=args.bandwidth_scale,
        seed=args.seed,
        progress=_progress_to_stderr(args.quiet),
        client=args.client,
    )
    for warning in audit.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    summary = audit.to_json()
    records = audit.records[list(RECORD_COLUMNS)]
    if disclosure is not None:
        from audit_core.disclosure import add_to_records

        summary["disclosure"] = disclosure.to_json()
        records = add_to_records(records, disclosure)
    write_json(args.json, summary)
    if args.records:
        write_output(args.records, records.to_csv(index=False), flag="--records")
    if args.html or args.pdf:
        inputs = [describe_input(name, df) for name, df in tables.items()]
        report = build_report(audit, inputs=inputs)
        if disclosure is not None:
            from audit_core.plots.disclosure import with_disclosure

            report = with_disclosure(report, audit, disclosure)
        write_report(args, report)
    true, real = audit.attacks["true_distribution"], audit.attacks["realistic"]
    copies = audit.copy_test
    print(
        f"AUC true-distribution {true.auc:.3f}, realistic {real.auc:.3f}; "
        f"TPR at 1 % FPR {true.tpr_at_fpr['0.01'].tpr:.3f} / {real.tpr_at_fpr['0.01'].tpr:.3f}; "
        f"verbatim copies {copies.train_copies} of {copies.n_train} training rows, {copies.holdout_copies} of "
        f"{copies.n_holdout} holdout rows (one-sided Fisher p = {copies.p_value:.2g})"
    )
    print(verdict(audit))
    if disclosure is not None:
        for key, result in disclosure.results():
            print(f"disclosure {key}: risk {result.risk:.3f} [{result.ci_low:.3f}, {result.ci_high:.3f}], "
                  f"baseline rate {result.baseline_rate:.3f}: {result.reading}")  # fmt: skip
    return 0


def _disclosure(args: argparse.Namespace, tables: dict[str, Any], types: Any) -> Any:
    """``tabular --disclosure``: singling out, linkability, inference (audit_core.disclosure), roles from the flags."""
    from audit_core.disclosure import DisclosureRoles, audit_disclosure, default_roles

    given = {name: getattr(args, name) for name in ("known", "link_a", "link_b", "secrets")}
    roles = None
    if any(v is not None for v in given.values()):
        order = [c for c in tables["train"].columns if c in types.columns]
        roles = default_roles(
            order,
            secrets=_csv_list(given["secrets"]) if given["secrets"] is not None else None,
            known=_csv_list(given["known"]) if given["known"] is not None else None,
        )
        if given["link_a"] is not None or given["link_b"] is not None:
            link_a, link_b = _csv_list(given["link_a"]), _csv_list(given["link_b"])
            if not link_a or not link_b:
                raise InputError("The linkability split has an empty side; give columns to both --link-a and --link-b.")
            roles = DisclosureRoles(known=roles.known, link_a=link_a, link_b=link_b, secrets=roles.secrets)
    return audit_disclosure(
        tables["train"], tables["holdout"], tables["synthetic"], types=types, roles=roles,
        n_attacks=args.n_attacks, link_k=args.link_k, seed=args.seed, progress=_progress_to_stderr(args.quiet),
    )  # fmt: skip


def _cmd_generate(args: argparse.Namespace) -> int:
    """Fit one generator on --train and write --rows synthetic rows to --out (.csv or .parquet)."""
    from audit_core.generators import GENERATORS, make_generator
    from audit_core.tables import infer_column_types, read_table

    out = Path(args.out)
    suffix = out.suffix.lower()
    if suffix not in {".csv", ".parquet"}:
        raise InputError(f"The output file {out.name} must end in .csv or .parquet.")
    if args.generator not in GENERATORS:
        raise InputError(f"Unknown generator '{args.generator}'; choose one of {', '.join(GENERATORS)}.")
    if args.generator == "population":
        raise InputError(
            "The 'population' reference returns real rows held out from training; it only exists inside a "
            "comparison (the dashboard's Generate & compare page); choose another generator."
        )
    params = {}
    if args.epochs is not None:
        if not GENERATORS[args.generator].has_epochs:
            raise InputError(f"Generator '{args.generator}' has no epochs; leave out --epochs.")
        params["epochs"] = args.epochs
    train = read_table(args.train, name="train")
    types = infer_column_types(train, categorical=_csv_list(args.categorical), ignore=_csv_list(args.ignore))
    generator = make_generator(args.generator, **params)
    generator.fit(train, types=types, seed=args.seed, progress=_progress_to_stderr(args.quiet))
    synthetic = generator.sample(args.rows, seed=args.seed)
    write_output(out, synthetic.to_csv(index=False) if suffix == ".csv" else synthetic.to_parquet(index=False), flag="--out")
    if not args.quiet:
        print(f"wrote {len(synthetic):,} synthetic rows to {out}", file=sys.stderr)
    return 0


def _cmd_lira(args: argparse.Namespace) -> int:
    """``lira``: naive vs calibrated LiRA over a batch of models (METHODS.md §2)."""
    from audit_core.fpc import fpc_sweep
    from audit_core.lira import check_lira_settings, run_lira
    from audit_core.plots.lira import build_report, verdict
    from audit_core.tables import read_table

    data = read_table(args.data, name=Path(args.data).name)
    check_lira_settings(len(data), n_models=args.models, fpr=args.fpr)  # bad M / alpha: one line, before training
    result = run_lira(
        data,
        target=args.target,
        model=args.model,
        n_models=args.models,
        fpr=args.fpr,
        seed=args.seed,
        progress=_progress_to_stderr(args.quiet),
        client=args.client,
    )
    for warning in result.evaluation.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not args.quiet:  # wall-clock time is not reproducible, so it stays out of the JSON
        print(f"trained {args.models} {args.model} models in {result.timing()['train_seconds']:.1f} s", file=sys.stderr)
    write_json(args.json, result.to_json())
    if args.html or args.pdf:
        sims = fpc_sweep(n_models=args.models, repeats=100, seed=args.seed)
        write_report(args, build_report(result, data=data, data_name=Path(args.data).name, fpc_sims=sims, seed=args.seed))
    t = result.evaluation.tpr
    print(
        f"TPR at FPR {args.fpr:g} over {args.models} {args.model} models: naive {t['naive']:.3f}, "
        f"post-processed {t['post_processed']:.3f}, post-processed (t) {t['post_processed_t']:.3f}, "
        f"per-sample average {t['per_sample_mean']:.3f}"
    )
    print(verdict(result))
    return 0


def _cmd_fpc_sim(args: argparse.Namespace) -> int:
    """``fpc-sim``: Gaussian simulation of the finite-population correction (METHODS.md §2)."""
    from audit_core.fpc import fpc_simulation

    sim = fpc_simulation(
        population=args.population,
        train_size=args.train_size,
        n_models=args.models,
        repeats=args.repeats,
        seed=args.seed,
    )
    write_json(args.json, sim.to_json())
    print(
        f"FPC = 1 - N/N+ = {sim.fpc:.3f}; sigma_emp/sigma_ana = {sim.ratio_empirical:.3f} "
        f"(sqrt(FPC) = {sim.expected_ratio:.3f}), after correction {sim.ratio_corrected:.3f}"
    )
    return 0


def _cmd_fabrication(args: argparse.Namespace) -> int:
    """``fabrication``: fabricated members, MFD and AR-MIA (METHODS.md §3)."""
    from audit_core.fabrication import audit_epsilon, run_fabrication, setup_fabrication
    from audit_core.plots.fabrication import build_report, verdict

    epsilon = audit_epsilon(args.epsilon, args.dataset)
    if args.images and args.dataset:
        raise InputError("Give either --images (your own data) or --dataset (a bundled one), not both.")
    if args.model and not args.images:
        raise InputError("--model needs --images: the images, labels and member mask the model is audited on.")
    progress = _progress_to_stderr(args.quiet)
    setup = setup_fabrication(
        dataset=None if args.images else (args.dataset or "digits"), images=args.images, model=args.model,
        architecture=args.architecture, seed=args.seed, progress=lambda f, m: progress(0.4 * f, m),
    )
    result = run_fabrication(setup, epsilon=epsilon, steps=args.steps, attack=args.attack, lam=args.lam,
                             seed=args.seed, progress=lambda f, m: progress(0.4 + 0.6 * f, m))
    write_json(args.json, result.to_json())
    if args.html or args.pdf:
        write_report(args, build_report(result, inputs=list(setup.inputs)))
    print(verdict(result))
    return 0


def _fpr_list(text: str) -> tuple[float, ...]:
    """Parse ``0.001,0.01,0.1`` into target FPRs (their range is checked against limits.TARGET_FPR)."""
    try:
        values = tuple(float(v) for v in _csv_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--fpr must be comma-separated numbers like 0.001,0.01,0.1, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("--fpr needs at least one number, e.g. 0.01")
    return values


def _cmd_scores(args: argparse.Namespace) -> int:
    """``scores``: TPR at low FPR and the epsilon lower bound of membership scores from any tool."""
    from audit_core.limits import TARGET_FPR
    from audit_core.plots.score_check import build_report, verdict
    from audit_core.report import describe_input
    from audit_core.score_check import score_check
    from audit_core.tables import read_table

    for f in args.fpr:
        TARGET_FPR.check(f, name="--fpr")
    name = Path(args.scores).name
    table = read_table(args.scores, name=name)
    check = score_check(table, fprs=args.fpr, delta=args.delta, seed=args.seed, name=name)
    write_json(args.json, check.to_json())
    if args.html or args.pdf:
        write_report(args, build_report(check, inputs=[describe_input(name, table)]))
    for attack in check.attacks.values():
        tprs = ", ".join(f"TPR at FPR {t.target_fpr:g} {t.tpr:.3f}" + ("" if t.supported else " (unsupported)")
                         for t in attack.tpr_at_fpr.values())
        print(f"{attack.name}: AUC {attack.auc:.3f}; {tprs}; epsilon >= {attack.epsilon.epsilon:.3f} "
              f"(delta {attack.epsilon.delta:g}, {100 * attack.epsilon.confidence:g} %)")
    print(verdict(check))
    return 0


# --------------------------------------------------------------------------- parser
class _Parser(argparse.ArgumentParser):
    """argparse with the contract's error format (one line on stderr, exit 2) and ``--quiet`` everywhere.

    Every subcommand is made by this class, so ``--quiet`` works before or after the
    subcommand's name without each subcommand declaring it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress lines on stderr")

    def error(self, message: str) -> None:  # type: ignore[override]
        flag = message.split(":")[0].removeprefix("argument ") if "invalid" in message else ""
        dest = next((a.dest for a in self._actions if flag in a.option_strings), None)
        if dest in CLI_BOUNDS:  # "--steps 1e20": say the bound, not only argparse's "invalid int value"
            message = f"{message}; {CLI_BOUNDS[dest].rule(name=flag)}"
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m audit_core", description="Membership-risk audits, headless.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("tabular", help="membership risk of a synthetic table (METHODS.md §1)")
    p.add_argument("--train", required=True, help="training table = members (CSV or Parquet)")
    p.add_argument("--holdout", required=True, help="holdout table = non-members")
    p.add_argument("--synthetic", required=True, help="the synthetic table to audit")
    p.add_argument("--auxiliary", help="population data the attacker holds (optional)")
    p.add_argument("--categorical", help="comma-separated columns to treat as categorical")
    p.add_argument("--numeric", help="comma-separated columns to treat as numeric")
    p.add_argument("--ignore", help="comma-separated columns to leave out")
    p.add_argument("--bandwidth", default="silverman", help="KDE bandwidth: scott, silverman, cv or a number")
    p.add_argument("--prior", type=float, default=0.5, help="prior membership probability pi")
    p.add_argument(
        "--bandwidth-scale", type=float, default=1.0, help="multiplier on the KDE bandwidth (the page's slider)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the JSON summary here")
    p.add_argument("--records", help="write per-record results (CSV) here")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--pdf", help="write the report as PDF here (needs a local Chromium)")
    p.add_argument("--disclosure", action="store_true", help="also run singling out, linkability and inference")
    p.add_argument("--known", help="--disclosure: comma-separated columns the attacker knows (default: all but the secrets)")
    p.add_argument("--link-a", help="--disclosure: one half of the linkability split (default: first half of --known)")
    p.add_argument("--link-b", help="--disclosure: the other half (default: second half of --known)")
    p.add_argument("--secrets", help="--disclosure: comma-separated columns to infer (default: the last column)")
    p.add_argument("--n-attacks", type=int, default=2000, help="--disclosure: attacks per table (default 2000)")
    p.add_argument("--link-k", type=int, default=1, help="--disclosure: linkability neighbours per half (default 1)")
    p.set_defaults(handler=_cmd_tabular)

    p = sub.add_parser("generate", help="fit a generator on a table and write synthetic rows")
    p.add_argument("--train", required=True)
    p.add_argument("--generator", required=True, help="generator name, e.g. gaussian_copula, ctgan, bayesian_network")
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--categorical", help="comma-separated columns to treat as categorical")
    p.add_argument("--ignore", help="comma-separated columns to leave out")
    p.add_argument("--epochs", type=int, help="training epochs (generators that have them)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output table (.csv or .parquet)")
    p.set_defaults(handler=_cmd_generate)

    p = sub.add_parser("lira", help="naive vs calibrated LiRA (METHODS.md §2)")
    p.add_argument("--data", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--models", type=int, default=64)
    p.add_argument("--model", choices=["logistic", "mlp"], default="logistic")
    p.add_argument("--fpr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--pdf", help="write the report as PDF here (needs a local Chromium)")
    p.set_defaults(handler=_cmd_lira)

    p = sub.add_parser("fpc-sim", help="simulation of the finite-population correction (METHODS.md §2)")
    p.add_argument("--population", type=int, required=True, help="N_+: size of the finite pool")
    p.add_argument("--train-size", type=int, required=True, help="N: size of each training subset")
    p.add_argument("--models", type=int, default=64)
    p.add_argument("--repeats", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    p.set_defaults(handler=_cmd_fpc_sim)

    p = sub.add_parser("fabrication", help="fabricated members, detection and robust MIA (METHODS.md §3)")
    p.add_argument("--images", help=".npz with images, labels and member mask")
    p.add_argument("--model", help="model weights (.safetensors) for --architecture")
    p.add_argument("--architecture", default="small_cnn", help="built-in architecture the weights belong to")
    p.add_argument("--dataset", default=None, help="bundled data set instead of --images: digits or mnist")
    p.add_argument(
        "--epsilon",
        type=_epsilon,
        default=None,
        help="L-inf radius, e.g. 8/255 (default: the data set's, 32/255 for the bundled ones, where the effects show)",
    )
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--lambda", dest="lam", type=float, default=1.0, help="AR-MIA lambda (normalised, METHODS.md §3)")
    p.add_argument("--attack", choices=["mfa", "ipgd", "icw"], default="mfa")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--pdf", help="write the report as PDF here (needs a local Chromium)")
    p.set_defaults(handler=_cmd_fabrication)

    p = sub.add_parser("scores", help="TPR at low FPR and an epsilon lower bound for membership scores from any tool")
    p.add_argument(
        "--scores", required=True, help="CSV or Parquet: score (higher = member), is_member (0/1), [attack], [record_id]"
    )
    p.add_argument("--fpr", type=_fpr_list, default=(0.001, 0.01, 0.1), help="comma-separated target FPRs")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of the (epsilon, delta) lower bound")
    p.add_argument("--seed", type=int, default=0, help="seed of the split behind the epsilon bound")
    p.add_argument("--json", help="write the JSON summary here")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--pdf", help="write the report as PDF here (needs a local Chromium)")
    p.set_defaults(handler=_cmd_scores)
    for command in sub.choices.values():
        _add_cluster_flags(command)
    return parser


def _add_cluster_flags(p: argparse.ArgumentParser) -> None:
    """``--scheduler`` / ``--workers`` on every subcommand: where the heavy steps run (audit_core.cluster)."""
    p.add_argument("--scheduler", help="run the heavy steps on this Dask scheduler, e.g. tcp://host:8786 "
                   "(default: $AUDIT_DASK_SCHEDULER, else in this process)")
    p.add_argument("--workers", type=int, help="run the heavy steps on a local Dask cluster of this many worker processes")


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise KeyError(command)  # pragma: no cover - every parser here has subcommands


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Checks every subcommand goes through before its handler runs (nothing is read or computed yet).

    Each setting named in :data:`audit_core.limits.CLI_BOUNDS` is within its bound, and
    the output paths (:data:`OUTPUT_DESTS`) can be written and are none of the input
    files (:func:`audit_core.outputs.check_outputs`).
    """
    outputs: dict[str, str | None] = {}
    inputs: list[str] = []
    for action in _subparser(parser, args.command)._actions:
        if not action.option_strings or action.dest not in vars(args):
            continue
        flag, value = action.option_strings[-1], getattr(args, action.dest)
        if value is None:
            continue
        if action.dest in CLI_BOUNDS:
            CLI_BOUNDS[action.dest].check(value, name=flag)
        if action.dest in OUTPUT_DESTS:
            outputs[flag] = value
        elif isinstance(value, str):
            inputs.append(value)
    check_outputs(outputs, inputs)


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; return the exit status (0 done, 2 bad input with one line on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.quiet = getattr(args, "quiet", False)
    try:
        check_arguments(parser, args)
        from audit_core.cluster import cluster_client

        with cluster_client(args.scheduler, args.workers) as args.client:
            status = int(args.handler(args) or 0)
        sys.stdout.flush()
        return status
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout went away (``| head``): results are written, stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
