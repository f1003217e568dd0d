"""The one contract every audit implements, and the registry the front ends are built from.

An audit is an :class:`Audit`: a name (its CLI subcommand), a title, the question it
answers, the inputs it needs (:class:`InputSpec`), a frozen :class:`Settings` class
whose fields are :func:`knob` s (what a widget and a CLI flag need: label, help, bound or
choices, default, and whether changing it only re-scores), and four functions:

- ``run(inputs, settings, *, seed, progress, client) -> value``: the heavy work;
- ``rescore(value, settings, *, seed) -> value``: the cheap re-scoring (only ``rescore`` knobs changed);
- ``verdict(value) -> str`` and ``report(outcome) -> Report``.

:func:`run` wraps the value in an :class:`Outcome` (the ``Result`` every front end
handles alike): ``verdict()``, ``to_json()``, ``report()``, ``rescore(**cheap)``,
``records()``, ``summary()`` and ``command()``, the exact ``python -m audit_core ...``
line that reproduces it. The router, the home page's cards and the CLI's subcommands and
flags are generated from ``audit_core.registry`` (its ``REGISTRY`` of audits and ``TOOLS``,
the ``generate`` and ``fpc-sim`` subcommands, which have no page); ARCHITECTURE.md
explains how to add an audit.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from audit_core.common.decision import Decision
from audit_core.common.errors import InputError
from audit_core.common.limits import SEED, Bound
from audit_core.common.runtime import ProgressFn

REQUIRED: Any = object()
"""Default of a knob the user must give (a ``required`` CLI flag; the page always sets it)."""


@dataclass(frozen=True)
class Knob:
    """What a widget and a CLI flag need to know about one setting.

    Attributes
    ----------
    label, help : str
        The widget's label and help; the flag's help.
    bound : Bound, optional
        Allowed range (audit_core.common.limits), checked for the page and the CLI alike.
    choices : tuple, optional
        Allowed values (a select box; argparse ``choices``).
    rescore : bool
        Changing it only re-scores a finished run (no retraining, no new distances).
    flag : str
        The CLI flag (default ``--`` + the field name with dashes).
    parse : callable, optional
        Text to value on the CLI (default: the type of the default). The reproduce command
        writes a value back as ``str`` (a list comma-joined), which ``parse`` must read.
    """

    label: str
    help: str = ""
    bound: Bound | None = None
    choices: tuple[Any, ...] | None = None
    rescore: bool = False
    flag: str = ""
    parse: Callable[[str], Any] | None = None


def knob(default: Any, label: str, help: str = "", **options: Any) -> Any:
    """A :class:`Settings` field carrying its :class:`Knob` (see there for the options)."""
    meta = {"knob": Knob(label=label, help=help, **options)}
    if default is REQUIRED:
        return field(metadata=meta | {"required": True}, default=None)
    return field(default=default, metadata=meta)


def csv_list(text: str | None) -> tuple[str, ...]:
    """``"a, b,c"`` -> ``("a", "b", "c")`` (column lists on the CLI)."""
    return tuple(c.strip() for c in text.split(",") if c.strip()) if text else ()


def parse_float_list(text: str) -> tuple[float, ...]:
    """``"0.001,0.01"`` -> ``(0.001, 0.01)`` (target FPRs on the CLI)."""
    try:
        values = tuple(float(v) for v in csv_list(text))
    except ValueError:
        raise InputError(f"expected comma-separated numbers like 0.001,0.01,0.1, got {text!r}") from None
    if not values:
        raise InputError("expected at least one number, e.g. 0.01")
    return values


@dataclass(frozen=True)
class Settings:
    """Base of every audit's settings: a frozen dataclass of :func:`knob` fields.

    ``validate()`` checks every bound and choice (the page and the CLI refuse the same
    values with the same sentence, naming the limit).
    """

    @classmethod
    def knobs(cls) -> dict[str, Knob]:
        """Field name -> :class:`Knob`, in declaration order."""
        return {f.name: f.metadata["knob"] for f in dataclasses.fields(cls) if "knob" in f.metadata}

    @classmethod
    def required(cls) -> set[str]:
        return {f.name for f in dataclasses.fields(cls) if f.metadata.get("required")}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return {f.name: f.default for f in dataclasses.fields(cls) if not f.metadata.get("required")}

    @classmethod
    def flag(cls, name: str) -> str:
        return cls.knobs()[name].flag or "--" + name.replace("_", "-")

    def validate(self) -> None:
        """Raise :class:`InputError` for a missing, out-of-range or unknown value."""
        for name, k in self.knobs().items():
            value = getattr(self, name)
            if value is None:
                if name in self.required():
                    raise InputError(f"{self.flag(name)} ({k.label}) is required.")
                continue
            values = value if isinstance(value, tuple) else (value,)  # a list knob: each value checked
            for v in values if k.bound is not None else ():
                k.bound.check(v, name=self.flag(name))
            if k.choices is not None and any(v not in k.choices for v in values):
                raise InputError(f"{self.flag(name)} must be one of {', '.join(map(str, k.choices))}; got {value!r}.")

    def changed(self, other: Settings) -> set[str]:
        """Names of the fields that differ from ``other``."""
        return {n for n in self.knobs() if getattr(self, n) != getattr(other, n)}

    def as_dict(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self.knobs()}

    def cli_args(self) -> list[str]:
        """The flags that give these settings on the CLI (values equal to the CLI's default left out)."""
        defaults, args = self.defaults(), []
        for name in self.knobs():
            value = getattr(self, name)
            if value is None or (name in defaults and value == defaults[name]):
                continue
            if isinstance(value, bool):
                args += [self.flag(name)] if value else []
                continue
            text = ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)
            args += [self.flag(name), text]
        return args


def read_table_input(source: Any, name: str) -> Any:
    from audit_core.common.tables import read_table

    return read_table(source, name=name)


@dataclass(frozen=True)
class InputSpec:
    """One input an audit reads: its CLI flag (``--<name>``), what it is, whether it is needed, how it is loaded.

    ``load(source, name)`` turns a path (CLI) or an upload's bytes (page) into what ``run``
    takes; the default reads a table (CSV or Parquet, validated). ``None`` hands the path
    or bytes over as they are (images and models are read by the audit itself).
    """

    name: str
    help: str
    required: bool = True
    flag: str = ""
    load: Callable[[Any, str], Any] | None = read_table_input

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Inputs:
    """What an audit reads: the loaded objects by input name, and where each came from.

    ``paths`` name the files as the CLI would be given them (a bundled sample's path, or
    an uploaded file's own name), for the reproduce command and the report.
    """

    data: Mapping[str, Any]
    paths: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.data[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.data.get(name, default)


@dataclass(frozen=True)
class Audit:
    """A registry entry: everything a page, the CLI and a report need to know about one audit."""

    name: str
    title: str
    icon: str
    question: str
    needs: str
    method: str
    inputs: tuple[InputSpec, ...]
    settings: type[Settings]
    run: Callable[..., Any]
    verdict: Callable[[Any], str]
    decision: Callable[[Any], Decision] | None = None
    """The release decision (level, headline, reasons, next steps): the JSON's ``verdict`` block and ``--fail-on``."""
    report: Callable[[Outcome], Any] | None = None
    summary: Callable[[Outcome], list[str]] | None = None
    rescore: Callable[..., Any] | None = None
    records: Callable[[Outcome], Any] | None = None
    notes: Callable[[Outcome], list[str]] | None = None
    after: Callable[[Outcome], list[str]] | None = None
    page: str | None = None
    section: str = ""
    outputs: tuple[str, ...] = ("json", "html", "pdf")
    save: Callable[[Outcome, str], str | bytes] | None = None
    """For a tool that makes a file (``--out``): the file's content, for the path's suffix."""


class Ran(NamedTuple):
    """What ``Audit.run`` may return instead of a bare value: the value and extras kept beside it."""

    value: Any
    extras: dict[str, Any]


@dataclass
class Outcome:
    """One finished audit: its value, and the inputs, settings and seed that made it (the ``Result``)."""

    audit: Audit
    value: Any
    inputs: Inputs
    settings: Settings
    seed: int
    extras: dict[str, Any] = field(default_factory=dict)

    PROGRAM: ClassVar[str] = "python -m audit_core"

    def verdict(self) -> str:
        return self.audit.verdict(self.value)

    def decision(self) -> Decision | None:
        """The release decision (audit_core.common.decision), None for a tool without one."""
        return self.audit.decision(self.value) if self.audit.decision else None

    def to_json(self) -> dict[str, Any]:
        """The value's JSON with the release decision first under ``verdict`` (when the audit makes one)."""
        decision = self.decision()
        body = self.value.to_json()
        return body if decision is None else {"verdict": decision.to_json(), **body}

    def summary(self) -> list[str]:
        """The lines the CLI prints (stdout) before the verdict."""
        return self.audit.summary(self) if self.audit.summary else []

    def records(self) -> Any:
        return self.audit.records(self) if self.audit.records else None

    def after_verdict(self) -> list[str]:
        """Lines the CLI prints after the verdict (details of secondary analyses)."""
        return self.audit.after(self) if self.audit.after else []

    def notes(self) -> list[str]:
        """Lines for stderr: warnings, timings (nothing that belongs in the JSON)."""
        return self.audit.notes(self) if self.audit.notes else []

    def report(self) -> Any:
        """The report, with the command that reproduces it."""
        if self.audit.report is None:  # pragma: no cover - the CLI offers --html only where there is a report
            raise ValueError(f"{self.audit.name} has no report")
        report = self.audit.report(self)
        decision = self.decision()
        metrics = self.to_json()  # the report's JSON is the --json document, byte for byte
        from audit_core.common.regulation import regulation_rows
        from audit_core.common.threats import cards_for

        return dataclasses.replace(report, command=self.command(), decision=decision, metrics=metrics,
                                   regulation=regulation_rows(self.audit.name, decision),
                                   threats=cards_for(self.audit.name))  # fmt: skip

    def rescore(self, **cheap: Any) -> Outcome:
        """The same run re-scored with new values of ``rescore`` knobs (instant; nothing retrained)."""
        settings = dataclasses.replace(self.settings, **cheap)
        settings.validate()
        knobs = self.settings.knobs()
        costly = sorted(n for n in settings.changed(self.settings) if not knobs[n].rescore)
        if costly:
            raise ValueError(f"{', '.join(costly)} need a new run, not a re-score")
        if not settings.changed(self.settings):
            return self
        if self.audit.rescore is None:  # pragma: no cover - an audit with rescore knobs has a rescore
            raise ValueError(f"{self.audit.name} has nothing to re-score")
        value = self.audit.rescore(self.value, settings, seed=self.seed)
        return dataclasses.replace(self, value=value, settings=settings)

    def command(self, *, json: str | None = "out.json") -> str:
        """The exact ``python -m audit_core ...`` line that gives this result (same JSON)."""
        args = [self.audit.name]
        for spec in self.audit.inputs:
            if spec.name in self.inputs.paths:
                args += [spec.cli_flag, self.inputs.paths[spec.name]]
        args += [*self.settings.cli_args(), "--seed", str(self.seed)]
        if json:
            args += ["--json", json]
        return self.PROGRAM + " " + shlex.join(args)


def run(
    audit: Audit,
    inputs: Inputs,
    settings: Settings,
    *,
    seed: int,
    progress: ProgressFn | None = None,
    client: Any = None,
) -> Outcome:
    """Validate the settings and the seed, run the audit, wrap the value in an :class:`Outcome`."""
    settings.validate()
    SEED.check(seed, name="--seed")
    value = audit.run(inputs, settings, seed=seed, progress=progress, client=client)
    extras: dict[str, Any] = {}
    if isinstance(value, Ran):
        value, extras = value
    return Outcome(audit=audit, value=value, inputs=inputs, settings=settings, seed=seed, extras=extras)
