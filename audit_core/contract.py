"""The one contract every audit implements; the front ends are generated from its registry.

An audit is an :class:`Audit`: a name (its CLI subcommand), a title, the question it
answers, the inputs it needs (:class:`InputSpec`), a frozen :class:`Settings` class whose
fields are :func:`knob` s, and its functions. A knob carries everything a widget and a CLI
flag need (label, help, bound or choices, default) and its **stage**:

- ``"setup"``: the slow first step, when the audit has one (``Audit.prepare``: trained
  models, the membership audit's distances); kept per inputs, setup knobs and seed;
- ``"run"``: the audit itself (``Audit.run``), given what ``prepare`` returned;
- ``"rescore"``: re-scores a finished run in an instant (``Audit.rescore``: a bandwidth, a lambda).

:func:`run` is the one way to an audit's result for the dashboard and the CLI alike: it
validates the settings (:meth:`Settings.validate`, every bound and choice of every knob)
and the inputs against them (``Audit.check``), runs ``prepare`` (kept in the cache it is
given) and ``run`` with the re-score knobs at their defaults, then re-scores; so the page,
which keeps each stage, and the CLI, which keeps nothing, compute the same numbers the same
way. The result is an :class:`Outcome`: ``verdict()``, ``decision()``, ``to_json()`` (the
``--json`` document), ``report()``, ``records()``, ``summary()`` and ``command()``, the
``python -m audit_core ...`` line that reproduces it. ARCHITECTURE.md explains how to add an audit.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Hashable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, Self, TypeVar

from audit_core.common.decision import Decision
from audit_core.common.errors import InputError
from audit_core.common.hashing import fingerprint
from audit_core.common.limits import SEED, Bound
from audit_core.common.runtime import ProgressFn, as_progress, sub_progress

if TYPE_CHECKING:
    from audit_core.common.report import Report

__all__ = [
    "REQUIRED",
    "STAGES",
    "Audit",
    "Context",
    "InputSpec",
    "Inputs",
    "Knob",
    "Outcome",
    "Result",
    "Settings",
    "Stage",
    "csv_list",
    "knob",
    "read_inputs",
    "rescore",
    "run",
    "stage_key",
]

Stage = Literal["setup", "run", "rescore"]
STAGES: tuple[Stage, ...] = ("setup", "run", "rescore")

REQUIRED: Any = object()
"""Default of a knob the user must give (a ``required`` CLI flag; the page always sets it)."""


@dataclass(frozen=True)
class Knob:
    """What a widget and a CLI flag need to know about one setting, and every rule its value obeys.

    Attributes
    ----------
    label, help : str
        The widget's label and help; the flag's help.
    bound : Bound, optional
        The allowed range (audit_core.common.limits; open or closed at either end).
    choices : tuple, optional
        The allowed values (a select box; argparse ``choices``). With a ``bound`` too, a value is
        one of the choices or a number within the bound (the KDE bandwidth: a rule or a width).
        For a list knob (a tuple default), each item is checked.
    min_items : int
        A list knob needs at least this many items.
    stage : {"setup", "run", "rescore"}
        Which step of the audit reads it (module docstring); changing a ``rescore`` knob never recomputes.
    flag : str
        The CLI flag (default ``--`` + the field name with dashes).
    parse : callable, optional
        Text to value on the CLI (default: from the default's type, the bound and the choices; a list
        knob reads comma-separated items).
    format : callable, optional
        Value to text for the reproduce command (default ``str``; a list comma-joined); ``parse`` reads it back.
    """

    label: str
    help: str = ""
    bound: Bound | None = None
    choices: tuple[Any, ...] | None = None
    min_items: int = 0
    stage: Stage = "run"
    flag: str = ""
    parse: Callable[[str], Any] | None = None
    format: Callable[[Any], str] | None = None

    @property
    def rescore(self) -> bool:
        return self.stage == "rescore"

    def check(self, value: Any, *, name: str) -> None:
        """Raise :class:`InputError` naming the rule unless ``value`` (or each item of a list) obeys it."""
        values = value if isinstance(value, tuple | list) else (value,)
        if len(values) < self.min_items:
            got = f"{len(values)}" if values else "none"
            raise InputError(f"{name} needs at least {self.min_items} value{'s' if self.min_items > 1 else ''}; got {got}.")
        choices = self.choices
        for v in values:
            if choices is not None and v in choices:
                continue
            if self.bound is not None and (choices is None or _is_number(v)):
                self.bound.check(v, name=name)
                continue
            if choices is not None:
                also = f", or {self.bound.rule(name='a number').removeprefix('a number must be ')}" if self.bound else ""
                raise InputError(f"{name} must be one of {', '.join(map(str, choices))}{also}; got {v!r}.")

    def parser(self, default: Any) -> Callable[[str], Any]:
        """Text to value for the CLI (and for the reproduce command's text read back)."""
        if self.parse is not None:
            return self.parse
        if isinstance(default, tuple):
            item = float if self.bound is not None and not self.bound.integer else int if self.bound is not None else str
            return lambda text: tuple(_parse_item(v, item, self.choices) for v in csv_list(text))
        if (choices := self.choices) is not None and self.bound is not None:  # a choice or a number; other text is
            return lambda text: _choice_or_number(text, choices)  # left to check(), whose sentence names both
        if isinstance(default, int | float) and not isinstance(default, bool):
            return type(default)
        if self.bound is not None:
            return int if self.bound.integer else float
        return str


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _parse_item(text: str, kind: type, choices: tuple[Any, ...] | None) -> Any:
    text = str(text).strip()
    if choices is not None and text.lower() in {str(c).lower() for c in choices}:
        return next(c for c in choices if str(c).lower() == text.lower())
    if kind is str:
        return text
    try:
        return kind(text)
    except ValueError:
        named = f"one of {', '.join(map(str, choices))} or " if choices else ""
        raise InputError(f"expected {named}{'a whole number' if kind is int else 'a number'}, got {text!r}") from None


def _choice_or_number(text: str, choices: tuple[Any, ...]) -> Any:
    """A choice, a number, or the text itself (refused by :meth:`Knob.check` with the same sentence as the API's)."""
    try:
        return _parse_item(text, float, choices)
    except InputError:
        return str(text).strip()


def knob(default: Any, label: str, help: str = "", **options: Any) -> Any:
    """A :class:`Settings` field carrying its :class:`Knob` (see there for the options)."""
    meta = {"knob": Knob(label=label, help=help, **options)}
    if default is REQUIRED:
        return field(metadata=meta | {"required": True}, default=None)
    return field(default=default, metadata=meta)


def csv_list(text: str | None) -> tuple[str, ...]:
    """``"a, b,c"`` -> ``("a", "b", "c")`` (column lists on the CLI)."""
    return tuple(c.strip() for c in text.split(",") if c.strip()) if text else ()


@dataclass(frozen=True)
class Settings:
    """Base of every audit's settings: a frozen dataclass of :func:`knob` fields.

    ``validate()`` checks every knob's rule (the page and the CLI refuse the same values
    with the same sentence, naming the limit); a subclass adds a rule that ties knobs
    together by extending it. Nothing inside an audit checks a setting again.
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

    @classmethod
    def stage_of(cls, stage: Stage) -> set[str]:
        """The knobs read by ``stage``."""
        return {n for n, k in cls.knobs().items() if k.stage == stage}

    @classmethod
    def checked(cls, **values: Any) -> Self:
        """These settings (the others at their defaults) once :meth:`validate` passed.

        What a public entry point of an audit's computation calls with its own arguments
        (``rescore(bandwidth=...)``, ``evaluate_pool(fpr=...)``): called directly, it refuses what the
        page and the CLI refuse, with their sentence, and never clamps a value it was given.
        """
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise :class:`InputError` for a missing value or one that breaks its knob's rule."""
        for name, k in self.knobs().items():
            value = getattr(self, name)
            if value is None:
                if name in self.required():
                    raise InputError(f"{self.flag(name)} ({k.label}) is required.")
                continue
            k.check(value, name=self.flag(name))

    def upto(self, stage: Stage) -> Self:
        """These settings with every knob of a later stage at its default (what ``stage`` may read)."""
        later = STAGES[STAGES.index(stage) + 1 :]
        defaults = self.defaults()
        reset = {n: defaults[n] for n, k in self.knobs().items() if k.stage in later and n in defaults}
        return dataclasses.replace(self, **reset)

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
            show = self.knobs()[name].format or str
            text = ",".join(map(show, value)) if isinstance(value, tuple | list) else show(value)
            args += [self.flag(name), text]
        return args


@dataclass(frozen=True)
class InputSpec:
    """One input an audit reads: its CLI flag (``--<name>``), what it is, whether it is needed, how it is read.

    A table (the default) is read by :func:`audit_core.common.table_files.read_table` (CSV or Parquet,
    validated), named in messages by its file name, or by the input's own name where
    ``named_by_role`` (the synthetic audit's train, holdout, ...); any other input by ``load(source,
    file name)``, or handed over as the path or bytes when ``load`` is None (images, models read by the audit).
    """

    name: str
    help: str
    required: bool = True
    flag: str = ""
    table: bool = True
    named_by_role: bool = False
    load: Callable[[Any, str], Any] | None = None

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def message_name(self, filename: str) -> str:
        """How messages about this input name it."""
        return self.name if self.named_by_role else filename

    def read(self, source: Any, filename: str) -> Any:
        """The input from a path (CLI) or an upload's bytes (page)."""
        if self.table:
            from audit_core.common.table_files import read_table

            return read_table(source, name=self.message_name(filename))
        return self.load(source, filename) if self.load else source


@dataclass(frozen=True)
class Inputs:
    """What an audit reads: the loaded objects by input name, and where each came from.

    ``paths`` name the files as the CLI would be given them (a bundled sample's path, or
    an uploaded file's own name), for the reproduce command and the report.
    """

    data: Mapping[str, Any]
    paths: Mapping[str, str | None] = field(default_factory=dict)
    """Input name -> its path as the CLI is given it (None or missing: an input with no file, a DataFrame)."""

    def __getitem__(self, name: str) -> Any:
        return self.data[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.data.get(name, default)

    def name(self, key: str, default: str | None = None) -> str:
        """The file name of input ``key`` (its path's last part; ``default`` or ``key`` when it has none), or a
        database table's name (``query`` for a query: :func:`audit_core.common.database.source_name`)."""
        from audit_core.common.database import source_name

        return source_name(self.paths.get(key) or default or key)


def read_inputs(audit: Audit[Any, Any], sources: Mapping[str, Any]) -> Inputs:
    """An audit's inputs read from paths or database URLs as the CLI reads them (each by its :class:`InputSpec`).

    ``paths`` keep each source as the reproduce command shows it: a database URL without its password
    (:func:`audit_core.common.database.redacted`). An unknown input name is one sentence.
    """
    from audit_core.common.database import is_database_url, redacted, source_name

    specs = {spec.name: spec for spec in audit.inputs}
    unknown = sorted(set(sources) - set(specs))
    if unknown:
        raise InputError(f"{audit.name} has no input '{unknown[0]}'; its inputs are {', '.join(specs)}.")
    data: dict[str, Any] = {}
    paths: dict[str, str] = {}
    for name, source in sources.items():
        text = str(source)
        paths[name] = redacted(text) if is_database_url(text) else text
        data[name] = specs[name].read(text, source_name(text))
    return Inputs(data, paths)


@dataclass(frozen=True)
class Context:
    """What an audit's steps get besides the inputs and settings: the seed and the machinery.

    ``prepared`` is what ``Audit.prepare`` returned (None for an audit without a setup
    stage); ``cache`` a mapping the front end keeps between runs (the dashboard's result
    store; None on the CLI), for an audit that keeps parts of its own work (the comparison's
    fits); ``progress_for(name)`` an extra progress callback per named part (a generator).
    """

    seed: int
    progress: ProgressFn = field(default=as_progress(None))
    client: Any = None
    cache: MutableMapping[Hashable, Any] | None = None
    prepared: Any = None
    progress_for: Callable[[str], ProgressFn | None] | None = None


_S = TypeVar("_S", bound=Settings)
_R = TypeVar("_R", bound="Result")


class Result(Protocol):
    """What an audit's ``run`` returns: anything with a JSON summary."""

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Audit(Generic[_S, _R]):
    """A registry entry: everything a page, the CLI and a report need to know about one audit.

    ``run(inputs, settings, ctx)`` does the work; ``prepare(inputs, settings, ctx)``, when
    given, the slow setup stage before it (``ctx.prepared`` holds its value in ``run``),
    ``setup_share`` of the progress bar. ``check(inputs, settings)`` refuses inputs that do not
    fit the settings (a target column that is not there) before anything is computed.
    ``rescore(value, settings, ctx)`` applies the ``rescore`` knobs to a finished run.
    """

    name: str
    title: str
    icon: str
    question: str
    needs: str
    method: str
    inputs: tuple[InputSpec, ...]
    settings: type[_S]
    run: Callable[[Inputs, _S, Context], _R]
    verdict: Callable[[_R], str]
    decision: Callable[[_R], Decision] | None = None
    """The release decision (level, headline, reasons, next steps): the JSON's ``verdict`` block and ``--fail-on``."""
    prepare: Callable[[Inputs, _S, Context], Any] | None = None
    setup_share: float = 0.5
    check: Callable[[Inputs, _S], None] | None = None
    rescore: Callable[[_R, _S, Context], _R] | None = None
    report: Callable[[Outcome[_S, _R]], Report] | None = None
    summary: Callable[[Outcome[_S, _R]], list[str]] | None = None
    records: Callable[[Outcome[_S, _R]], Any] | None = None
    notes: Callable[[Outcome[_S, _R]], list[str]] | None = None
    after: Callable[[Outcome[_S, _R]], list[str]] | None = None
    page: str | None = None
    section: str = ""
    outputs: tuple[str, ...] = ("json", "html", "pdf")
    save: Callable[[Outcome[_S, _R], str], str | bytes] | None = None
    """For a tool that makes a file (``--out``): the file's content, for the path's suffix."""
    report_records: bool = False
    """Its report prints people's records (``common.report.RecordTable``): redacted unless ``--report-records full``."""


@dataclass(frozen=True)
class Outcome(Generic[_S, _R]):
    """One finished audit: its value, and the inputs, settings and seed that made it (the ``Result``)."""

    audit: Audit[_S, _R]
    value: _R
    inputs: Inputs
    settings: _S
    seed: int

    PROGRAM: ClassVar[str] = "python -m audit_core"

    def verdict(self) -> str:
        return self.audit.verdict(self.value)

    def decision(self) -> Decision | None:
        """The release decision (audit_core.common.decision), None for a tool without one."""
        return self.audit.decision(self.value) if self.audit.decision else None

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document: the value's JSON with the release decision first under ``verdict``."""
        decision = self.decision()
        body = self.value.to_json()
        return body if decision is None else {"verdict": decision.to_json(), **body}

    def summary(self) -> list[str]:
        """The lines the CLI prints (stdout) before the verdict."""
        return self.audit.summary(self) if self.audit.summary else []

    def records(self) -> Any:
        """The per-record table (``--records``; the page's per-record download), None where there is none."""
        return self.audit.records(self) if self.audit.records else None

    def after_verdict(self) -> list[str]:
        """Lines the CLI prints after the verdict (details of secondary analyses)."""
        return self.audit.after(self) if self.audit.after else []

    def notes(self) -> list[str]:
        """Lines for stderr: warnings, timings (nothing that belongs in the JSON)."""
        return self.audit.notes(self) if self.audit.notes else []

    def report(self, *, full_records: bool = False) -> Report:
        """The report: the audit's title and question, the command that reproduces it, the ``--json`` document, and
        every input file with its SHA-256. People's records are redacted unless ``full_records``
        (``--report-records full``)."""
        if self.audit.report is None:  # pragma: no cover - the CLI offers --html only where there is a report
            raise ValueError(f"{self.audit.name} has no report")
        from audit_core.common.regulation import regulation_rows
        from audit_core.common.threats import cards_for

        decision = self.decision()
        return dataclasses.replace(self.audit.report(self), title=self.audit.title, question=self.audit.question,
                                   command=self.command(), decision=decision, metrics=self.to_json(),
                                   regulation=regulation_rows(self.audit.name, decision),
                                   threats=cards_for(self.audit.name), files=self.input_files(),
                                   full_records=full_records)  # fmt: skip

    def input_files(self) -> list[Any]:
        """Every input given as a file: its name and the SHA-256 of its bytes (``common.report.InputFile``).

        A table carries the digest of the file it was read from (``common.table_files.FILE_SHA256``); an
        input kept as bytes (an upload, a model) is hashed as it is; one handed over as a path (the CLI's
        images) is hashed from that file. An input without a file (a bundled data set) is named as such.
        """
        import hashlib
        from pathlib import Path

        from audit_core.common.report import InputFile
        from audit_core.common.table_files import FILE_SHA256, FILE_SIZE

        out = []
        for spec in self.audit.inputs:
            value, path = self.inputs.get(spec.name), self.inputs.paths.get(spec.name)
            if value is None:
                continue
            digest, size = "", None
            attrs = getattr(value, "attrs", None)
            if isinstance(attrs, dict) and attrs.get(FILE_SHA256):
                digest, size = attrs[FILE_SHA256], attrs.get(FILE_SIZE)
            elif isinstance(value, bytes | bytearray):
                digest, size = hashlib.sha256(value).hexdigest(), len(value)
            elif isinstance(value, str) and Path(value).is_file():
                raw = Path(value).read_bytes()
                digest, size = hashlib.sha256(raw).hexdigest(), len(raw)
            out.append(InputFile(spec.name, Path(path).name if path else "(not a file)", digest, size))
        return out

    def command(self, *, json: str | None = "out.json") -> str:
        """The exact ``python -m audit_core ...`` line that gives this result (same JSON)."""
        args = [self.audit.name]
        for spec in self.audit.inputs:
            path = self.inputs.paths.get(spec.name)
            if path:
                args += [spec.cli_flag, path]
        args += [*self.settings.cli_args(), "--seed", str(self.seed)]
        if json:
            args += ["--json", json]
        return self.PROGRAM + " " + shlex.join(args)


def stage_key(audit: Audit[Any, Any], inputs: Inputs, settings: Settings, seed: int, stage: Stage) -> str:
    """The key of what ``stage`` computes from these inputs, settings and seed (knobs of later stages left out)."""
    return fingerprint(audit.name, stage, dict(inputs.data), settings.upto(stage).as_dict(), seed)


def run(
    audit: Audit[_S, _R],
    inputs: Inputs,
    settings: _S,
    *,
    seed: int,
    progress: ProgressFn | None = None,
    client: Any = None,
    cache: MutableMapping[Hashable, Any] | None = None,
    progress_for: Callable[[str], ProgressFn | None] | None = None,
) -> Outcome[_S, _R]:
    """Validate, run every stage, re-score: the one way to an audit's :class:`Outcome` (page and CLI).

    ``cache`` (the dashboard's result store) keeps the setup stage's value between calls, keyed by
    :func:`stage_key`; the run stage always sees the re-score knobs at their defaults, and
    ``Audit.rescore`` applies them after, so a re-score from a kept run equals a fresh run.
    """
    settings.validate()
    SEED.check(seed, name="--seed")
    if audit.check is not None:
        audit.check(inputs, settings)
    progress = as_progress(progress)
    prepared, share = None, audit.setup_share if audit.prepare is not None else 0.0
    if audit.prepare is not None:
        key = stage_key(audit, inputs, settings, seed, "setup")
        prepared = cache.get(key) if cache is not None else None
        if prepared is None:
            ctx = Context(seed, sub_progress(progress, 0.0, share), client, cache, None, progress_for)
            prepared = audit.prepare(inputs, settings.upto("setup"), ctx)
            if cache is not None:
                cache[key] = prepared
    ctx = Context(seed, sub_progress(progress, share, 1.0), client, cache, prepared, progress_for)
    value = audit.run(inputs, settings.upto("run"), ctx)
    return rescore(Outcome(audit, value, inputs, settings.upto("run"), seed), settings)


def rescore(outcome: Outcome[_S, _R], settings: _S) -> Outcome[_S, _R]:
    """``outcome`` (a finished run) at ``settings``, which may differ from its own only in ``rescore`` knobs."""
    costly = sorted(n for n in settings.changed(outcome.settings) if not settings.knobs()[n].rescore)
    if costly:
        raise ValueError(f"{', '.join(costly)} need a new run, not a re-score")
    if not settings.changed(outcome.settings):
        return outcome
    if outcome.audit.rescore is None:  # pragma: no cover - an audit with rescore knobs has a rescore
        raise ValueError(f"{outcome.audit.name} has nothing to re-score")
    settings.validate()
    value = outcome.audit.rescore(outcome.value, settings, Context(outcome.seed))
    return dataclasses.replace(outcome, value=value, settings=settings)
