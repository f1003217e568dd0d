"""The command line: ``python -m audit_core <audit> ...`` (contract in docs/contract.md).

Exit status 0 on success, 2 on bad input with one line on stderr saying what is
wrong. Every subcommand is generated from ``audit_core.registry``: its inputs, one flag
per knob of its settings, ``--seed``, its outputs; one handler (:func:`_cmd_audit`) runs
any of them through ``audit_core.contract.run``, the call the dashboard's pages make, so
anything a page shows is reproduced by the line it prints.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from audit_core.common.decision import FAIL_ON_EXIT, LEVELS
from audit_core.common.errors import InputError, one_line
from audit_core.common.limits import SEED, Bound
from audit_core.common.outputs import check_inputs, check_outputs, csv_text, write_output, write_outputs
from audit_core.common.report import REPORT_RECORDS, Report, to_json_text
from audit_core.contract import Audit, Knob

__all__ = ["build_parser", "check_arguments", "main"]

_OUTPUT_DESTS = {"json", "html", "pdf", "records", "out", "scores_out"}
"""Flags (argparse ``dest``) that name files the command writes. Every subcommand's outputs are
checked by :func:`check_arguments` before the audit starts; a new output flag is added here."""


def _rendered_outputs(args: argparse.Namespace, outcome: Any) -> list[tuple[str, str, str | bytes]]:
    """Every output asked for, rendered in memory (``--json``, ``--records``, ``--html``, ``--pdf``) before any is
    written, so a render that fails (no Chromium for the PDF) leaves no file behind."""
    files: list[tuple[str, str, str | bytes]] = []
    if getattr(args, "json", None):
        files.append(("--json", args.json, to_json_text(outcome.to_json())))
    if getattr(args, "records", None):
        files.append(("--records", args.records, csv_text(outcome.records())))
    if getattr(args, "scores_out", None):  # lira: every model's score on every record and the keep-matrix
        files.append(("--scores-out", args.scores_out, outcome.value.scores_parquet()))
    full = getattr(args, "report_records", "redacted") == "full"
    report: Report | None = (outcome.report(full_records=full) if getattr(args, "html", None) or getattr(args, "pdf", None)
                             else None)  # fmt: skip
    if report is not None and args.html:
        files.append(("--html", args.html, report.to_html()))
    if report is not None and args.pdf:
        with tempfile.TemporaryDirectory() as tmp:
            files.append(("--pdf", args.pdf, report.to_pdf(Path(tmp) / "report.pdf").read_bytes()))
    return files


class _Progress:
    """The CLI's progress on stderr, so that a refusal (bad input found mid-run, an output that cannot be written) is
    still the only line there.

    On a terminal: one line redrawn in place and erased (:meth:`clear`) before anything else is printed. With
    ``--progress``: a line per 10 % step, for a log that wants them (a refusal then follows them). Otherwise (stderr a
    pipe or a file, or ``--quiet``): nothing.
    """

    def __init__(self, *, quiet: bool, lines: bool) -> None:
        self.mode = "off" if quiet else "lines" if lines else "tty" if _is_terminal(sys.stderr) else "off"
        self.step, self.drawn, self.shown_at = -1, False, 0.0

    def __call__(self, fraction: float, message: str) -> None:
        import shutil
        import time

        text = one_line(f"[{100 * fraction:5.1f} %] {message}")
        try:
            if self.mode == "lines" and int(fraction * 10) != self.step:
                self.step = int(fraction * 10)
                print(text, file=sys.stderr, flush=True)
            elif self.mode == "tty" and time.monotonic() - self.shown_at >= 0.1:
                width = max(20, shutil.get_terminal_size().columns - 1)
                sys.stderr.write("\r\x1b[K" + text[:width])  # one line, never wrapped: \r can erase it
                sys.stderr.flush()
                self.drawn, self.shown_at = True, time.monotonic()
        except OSError:  # stderr closed (piped into head): progress is optional, the audit goes on
            self.mode = "off"

    def clear(self) -> None:
        """Erase the line drawn on the terminal (before an error, a warning or the summary is printed)."""
        if self.drawn:
            self.drawn = False
            try:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
            except OSError:
                self.mode = "off"


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _print_notes(outcome: Any, quiet: bool) -> None:
    """The run's warnings (always) and notes (unless --quiet) on stderr, once every output is written: a refusal to
    write an output is then the one line on stderr."""
    for line in outcome.notes():
        if line.startswith("warning:") or not quiet:
            print(line, file=sys.stderr)


def _print_stdout(lines: list[str]) -> None:
    """The summary on stdout, flushed (called before the output files take their names): stdout that cannot be written
    (``> /dev/full``) is one sentence and no file, and nothing is left in its buffer for the interpreter to fail on at
    exit; a reader that went away (``| head``) is no failure."""
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (``| head``): it has what it wanted; the files are still written
        _discard_stdout()
    except OSError as exc:
        _discard_stdout()
        raise InputError(f"The summary could not be written to standard output ({exc.strerror or exc}), so no "
                         "output file was written either.") from None  # fmt: skip


def _discard_stdout() -> None:
    """Point stdout at /dev/null (what is still buffered goes nowhere instead of failing at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


# --------------------------------------------------------------------------- handlers
def _cmd_audit(audit: Audit, args: argparse.Namespace) -> int:
    """Any registered audit: settings from the flags, inputs read, run, outputs written, summary and verdict printed."""
    from audit_core.contract import read_inputs, run

    settings = args.settings  # validated by check_arguments
    out = getattr(args, "out", None)
    if out and Path(out).suffix.lower() not in (".csv", ".parquet"):
        raise InputError(f"The output file {Path(out).name} must end in .csv or .parquet.")
    sources = {spec.name: getattr(args, spec.name) for spec in audit.inputs if getattr(args, spec.name) is not None}
    outcome = run(audit, read_inputs(audit, sources), settings, seed=args.seed, progress=args.progress_display,
                  client=args.client)  # fmt: skip
    args.progress_display.clear()
    if out and audit.save is not None:  # a tool that makes a file (generate)
        write_output(out, audit.save(outcome, out), flag="--out")
        _print_notes(outcome, args.quiet)
        if not args.quiet:
            print(f"{outcome.verdict()} to {out}", file=sys.stderr)
        return 0
    decision = outcome.decision()
    last = [f"release decision: {decision.level}"] if decision else []  # the line a pipeline greps
    summary = [*outcome.summary(), outcome.verdict(), *outcome.after_verdict(), *last]
    # All or none, stdout included: the summary is printed once every file is staged, before they take their names;
    # a failed write (a file, a pipe, stdout) is then the only line on stderr and leaves no file behind.
    write_outputs(_rendered_outputs(args, outcome), before_commit=partial(_print_stdout, summary))
    _print_notes(outcome, args.quiet)
    fail_on = getattr(args, "fail_on", None)
    if decision is not None and fail_on and decision.reaches(fail_on):
        print(f"error: the verdict is {decision.level}, at or above --fail-on {fail_on} (exit {FAIL_ON_EXIT})",
              file=sys.stderr)  # fmt: skip
        return FAIL_ON_EXIT
    return 0


# --------------------------------------------------------------------------- parser
class _Parser(argparse.ArgumentParser):
    """argparse with the contract's error format (one line on stderr, exit 2) and ``--quiet`` everywhere.

    Every subcommand is made by this class, so ``--quiet`` works before or after the
    subcommand's name without each subcommand declaring it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress on stderr")
        self.add_argument("--progress", action="store_true", default=argparse.SUPPRESS,
                          help="progress as a line per 10 %% step on stderr even when it is not a terminal (a CI log); "
                          "on a terminal it is one line redrawn in place")  # fmt: skip
        self.bounds: dict[str, Bound] = {}  # dest -> bound of the subcommand's numeric flags (its knobs, --seed)

    def error(self, message: str) -> None:  # type: ignore[override]
        flag = message.split(":")[0].removeprefix("argument ") if "invalid" in message else ""
        dest = next((a.dest for a in self._actions if flag in a.option_strings), None)
        if dest in self.bounds:  # "--steps 1e20": say the bound, not only argparse's "invalid int value"
            message = f"{message}; {self.bounds[dest].rule(name=flag)}"
        print(f"error: {one_line(message)} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


_OUTPUT_HELP = {
    "json": "write the JSON summary here",
    "html": "write the HTML report here",
    "pdf": "write the report as PDF here (needs a local Chromium)",
    "records": "write per-record results (CSV) here",
    "out": "output table (.csv or .parquet)",
    "scores-out": "write every model's score on every record and the keep-matrix here (Parquet)",
}


def _cli_type(knob: Knob, default: Any) -> Callable[[str], Any]:
    """Text to value for one setting's flag; a bad value is argparse's one-line error with the knob's sentence."""
    parse = knob.parser(default)

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def _help(text: str) -> str:
    return text.replace("%", "%%")  # argparse formats help strings with %


def _add_audit(sub: Any, audit: Audit) -> None:
    """One subcommand from a registry entry: its inputs, its settings' knobs, --seed and its outputs."""
    p = sub.add_parser(audit.name, help=_help(f"{audit.title}: {audit.question}" if audit.page else audit.method))
    for spec in audit.inputs:
        also = "; or a database URL with ?table=NAME or ?query=SELECT ..." if spec.table else ""
        p.add_argument(spec.cli_flag, dest=spec.name, required=spec.required, help=_help(spec.help + also))
    defaults, required = audit.settings.defaults(), audit.settings.required()
    for name, knob in audit.settings.knobs().items():
        flag, default = audit.settings.flag(name), defaults.get(name)
        if isinstance(default, bool):
            p.add_argument(flag, dest=name, action="store_true", help=_help(knob.help or knob.label))
            continue
        listed = knob.choices is not None and knob.bound is None and not isinstance(default, tuple)
        p.add_argument(flag, dest=name, default=default, required=name in required, type=_cli_type(knob, default),
                       choices=knob.choices if listed else None, help=_help(knob.help or knob.label))  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    if audit.decision is not None:
        p.add_argument("--fail-on", dest="fail_on", choices=LEVELS[1:], help=f"exit {FAIL_ON_EXIT} (after writing every "
                       "output) when the decision is at this level or worse (low < inconclusive < elevated < high; "
                       "inconclusive: the data could not measure the risk): for release pipelines")  # fmt: skip
    p.bounds = {name: k.bound for name, k in audit.settings.knobs().items() if k.bound is not None} | {"seed": SEED}
    for output in audit.outputs:
        p.add_argument(f"--{output}", required=output == "out", help=_OUTPUT_HELP[output])
    if audit.report is not None and audit.report_records:
        p.add_argument("--report-records", dest="report_records", choices=REPORT_RECORDS, default=REPORT_RECORDS[0],
                       help="the most exposed people's records in the --html / --pdf report: redacted (row ids and the "
                       "columns that make them exposed; the default) or full (the report is then personal data, and "
                       "says so)")  # fmt: skip
    p.set_defaults(handler=partial(_cmd_audit, audit), audit=audit)


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand comes from :mod:`audit_core.registry`: the audits, then the tools (generate, fpc-sim)."""
    from audit_core.registry import REGISTRY, TOOLS

    parser = _Parser(prog="python -m audit_core", description="Membership-risk audits, headless.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for audit in (*REGISTRY.values(), *TOOLS.values()):
        _add_audit(sub, audit)

    for command in sub.choices.values():
        _add_cluster_flags(command)
    return parser


def _add_cluster_flags(p: argparse.ArgumentParser) -> None:
    """``--scheduler`` / ``--workers`` on every subcommand: where the heavy steps run (audit_core.common.cluster)."""
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

    The settings are valid (``Settings.validate``: every knob's bound and choices), the seed
    is within its bound, and the output paths (:data:`_OUTPUT_DESTS`) can be written and are none of the input
    files (:func:`audit_core.common.outputs.check_outputs`).
    """
    audit = args.audit
    args.settings = audit.settings(**{name: getattr(args, name) for name in audit.settings.knobs()})
    args.settings.validate()  # a bad setting is one sentence before any file is read or cluster started
    outputs: dict[str, str | None] = {}
    inputs: list[str] = []
    for action in _subparser(parser, args.command)._actions:
        if not action.option_strings or action.dest not in vars(args):
            continue
        flag, value = action.option_strings[-1], getattr(args, action.dest)
        if value is None:
            continue
        if action.dest == "seed":
            SEED.check(value, name=flag)
        if action.dest in _OUTPUT_DESTS:
            outputs[flag] = value
        elif isinstance(value, str):
            inputs.append(value)
    check_inputs({spec.cli_flag: getattr(args, spec.name, None) for spec in audit.inputs})
    check_outputs(outputs, inputs)
    if getattr(args, "pdf", None):
        from audit_core.common.report import require_pdf

        require_pdf()  # no Chromium: refused before the run, not after it
    scores_out = getattr(args, "scores_out", None)
    if scores_out and Path(scores_out).suffix.lower() != ".parquet":
        raise InputError(f"--scores-out {Path(scores_out).name} must end in .parquet.")


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; return the exit status (0 done, 2 bad input with one line on stderr, 3 ``--fail-on`` reached)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.quiet = getattr(args, "quiet", False)
    args.progress_display = _Progress(quiet=args.quiet, lines=getattr(args, "progress", False))
    try:
        check_arguments(parser, args)
        from audit_core.common.cluster import cluster_client

        with cluster_client(args.scheduler, args.workers) as args.client:
            status = int(args.handler(args) or 0)
        sys.stdout.flush()
        return status
    except InputError as exc:
        args.progress_display.clear()
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout went away (``| head``): results are written, stop quietly
        _discard_stdout()
        return 0


if __name__ == "__main__":
    sys.exit(main())
