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
    audit = audit_synthetic(
        tables["train"],
        tables["holdout"],
        tables["synthetic"],
        tables.get("auxiliary"),
        types=types,
        prior=args.prior,
        bandwidth=bandwidth,
        seed=args.seed,
        progress=_progress_to_stderr(args.quiet),
    )
    for warning in audit.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    write_json(args.json, audit.to_json())
    if args.records:
        write_output(args.records, audit.records[list(RECORD_COLUMNS)].to_csv(index=False), flag="--records")
    if args.html or args.pdf:
        inputs = [describe_input(name, df) for name, df in tables.items()]
        write_report(args, build_report(audit, inputs=inputs))
    true, real = audit.attacks["true_distribution"], audit.attacks["realistic"]
    copies = audit.copy_test
    print(
        f"AUC true-distribution {true.auc:.3f}, realistic {real.auc:.3f}; "
        f"TPR at 1 % FPR {true.tpr_at_fpr['0.01'].tpr:.3f} / {real.tpr_at_fpr['0.01'].tpr:.3f}; "
        f"verbatim copies {copies.train_copies} of {copies.n_train} training rows, {copies.holdout_copies} of "
        f"{copies.n_holdout} holdout rows (one-sided Fisher p = {copies.p_value:.2g})"
    )
    print(verdict(audit))
    return 0


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
    )
    for warning in result.evaluation.warnings:
        print(f"warning: {warning}", file=sys.stderr)
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
    from audit_core.fabrication import DEFAULT_EPSILON, DEFAULT_SIZES, check_epsilon, prepare_audit, run_fabrication
    from audit_core.image_models import load_bundled, load_npz, load_safetensors_model, with_model_classes
    from audit_core.image_models import n_outputs as _n_outputs
    from audit_core.plots.fabrication import build_report, verdict
    from audit_core.report import describe_input

    if args.epsilon is None:
        args.epsilon = DEFAULT_EPSILON.get(args.dataset or "digits", 8 / 255)
    check_epsilon(args.epsilon)
    if args.images and args.dataset:
        raise InputError("Give either --images (your own data) or --dataset (a bundled one), not both.")
    if args.model and not args.images:
        raise InputError("--model needs --images: the images, labels and member mask the model is audited on.")
    progress = _progress_to_stderr(args.quiet)
    if args.images:
        path = Path(args.images)
        if not path.is_file():
            raise InputError(f"The image file {path} does not exist.")
        data = load_npz(path, seed=args.seed, name=path.name)
        inputs = [describe_input(path.name, data.images, detail=f"{data.n_classes} classes")]
        model = None
        if args.model:
            mpath = Path(args.model)
            if not mpath.is_file():
                raise InputError(f"The model file {mpath} does not exist.")
            model = load_safetensors_model(mpath, arch=args.architecture, in_channels=data.shape[0])
            data = with_model_classes(data, _n_outputs(model, data.shape))
            inputs.append(describe_input(mpath.name, mpath.read_bytes(), detail=args.architecture))
        n_refs = 4 if data.reference.size >= 30 else 0
    else:
        name = args.dataset or "digits"
        n_mem, n_non = DEFAULT_SIZES.get(name, (None, None))
        data = load_bundled(name, seed=args.seed, n_members=n_mem, n_non_members=n_non)
        inputs = [describe_input(name, data.images, detail="bundled")]
        model, n_refs = None, 4
    setup = prepare_audit(data, model=model, n_reference_models=n_refs, seed=args.seed,
                          progress=lambda f, m: progress(0.4 * f, m))
    result = run_fabrication(setup, epsilon=args.epsilon, steps=args.steps, attack=args.attack, lam=args.lam,
                             seed=args.seed, progress=lambda f, m: progress(0.4 + 0.6 * f, m))
    write_json(args.json, result.to_json())
    if args.html or args.pdf:
        write_report(args, build_report(result, inputs=inputs))
    print(verdict(result))
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
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the JSON summary here")
    p.add_argument("--records", help="write per-record results (CSV) here")
    p.add_argument("--html", help="write the HTML report here")
    p.add_argument("--pdf", help="write the report as PDF here (needs a local Chromium)")
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
    return parser


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
