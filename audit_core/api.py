"""The Python API: every audit from a notebook or a pipeline script, one import, the CLI's numbers.

>>> from audit_core import audit_table, audit_model, check_dp_claim, check_scores, compare_generators

Each function takes DataFrames, file paths or database URLs (``postgresql://...?table=...``, as
:mod:`audit_core.common.database` reads them) and keyword settings named as the CLI's flags
(``--n-attacks 500`` is ``n_attacks=500``; the flag's name or the settings field's name, so
``synthetic_rows=`` or ``rows=``, ``lam=`` for ``--lambda``). It is a thin layer over the
registry and :func:`audit_core.contract.run`, the road the CLI and the dashboard take: the settings
are checked by their knobs (:meth:`audit_core.contract.Settings.validate`, once), so a bad value
raises the CLI's :class:`~audit_core.common.errors.InputError` sentence, and the same inputs,
settings and seed give the ``--json`` document byte for byte. An audit added to the registry is
reachable at once through :func:`run_audit` (``run_audit("lira", data=..., target="credit")``),
with every new knob.

The result (:class:`AuditResult`) has ``.verdict`` (the release decision: ``.level``,
``.headline``, ``.reasons``, ``.next_steps``), ``.to_json()`` (the ``--json`` text), ``.to_dict()``,
``.records`` (a DataFrame), ``.to_html(path)``, ``.to_pdf(path)``, ``.command`` (the CLI line that
reproduces it, database passwords left out), ``.value`` (the audit's own result object) and a
short ``repr``. docs/api.md walks through a session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit_core.common.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from audit_core.common.decision import Decision
    from audit_core.contract import Audit, Inputs, Outcome, Settings

__all__ = [
    "AuditResult",
    "Progress",
    "audit_model",
    "audit_table",
    "check_dp_claim",
    "check_scores",
    "compare_generators",
    "run_audit",
    "settings_for",
]

Progress = Callable[[float, str], None]
"""``progress(fraction, message)``: called as the work goes on (the CLI prints it, the page draws a bar)."""


@dataclass(frozen=True)
class AuditResult:
    """One finished audit, as the CLI would write it (:class:`audit_core.contract.Outcome` underneath)."""

    outcome: Outcome[Any, Any]

    @property
    def name(self) -> str:
        """The audit (the CLI subcommand): ``tabular``, ``model``, ``dp-audit``, ``scores``, ``compare``, ..."""
        return self.outcome.audit.name

    @property
    def verdict(self) -> Decision | None:
        """The release decision (``level``: low / elevated / high, ``headline``, ``reasons``, ``next_steps``);
        None for a tool without one (``fpc-sim``, ``generate``)."""
        return self.outcome.decision()

    @property
    def value(self) -> Any:
        """The audit's own result object (``TabularResult``, ``ModelAudit``, ``ScoreCheck``, ...)."""
        return self.outcome.value

    @property
    def settings(self) -> Settings:
        """The settings the audit ran with (every knob, defaults included)."""
        return self.outcome.settings

    @property
    def records(self) -> pd.DataFrame | None:
        """The per-record table (the CLI's ``--records`` CSV, unescaped), None where the audit has none."""
        return self.outcome.records()

    @property
    def command(self) -> str:
        """The ``python -m audit_core ...`` line that gives the same JSON (inputs given as DataFrames left out)."""
        return self.outcome.command()

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document as a dict (the release decision first, under ``verdict``)."""
        return self.outcome.to_json()

    def to_json(self, path: str | Path | None = None) -> str:
        """The ``--json`` document, the same text byte for byte; written to ``path`` too when given."""
        from audit_core.common.report import to_json_text

        text = to_json_text(self.outcome.to_json())
        if path is not None:
            Path(path).write_text(text)
        return text

    def to_html(self, path: str | Path) -> Path:
        """Write the self-contained HTML report (the ``--html`` file) to ``path``; return the path."""
        out = Path(path)
        out.write_text(self.outcome.report().to_html())
        return out

    def to_pdf(self, path: str | Path) -> Path:
        """Write the report as PDF (the ``--pdf`` file; needs a local Chromium) to ``path``; return the path."""
        return self.outcome.report().to_pdf(path)

    def summary(self) -> list[str]:
        """The lines the CLI prints before the verdict (key figures)."""
        return self.outcome.summary()

    def __repr__(self) -> str:
        decision = self.verdict
        head = f"{decision.level}: {decision.headline}" if decision is not None else self.outcome.verdict()
        lines = [f"<AuditResult {self.name}: {_cut(head, 160)}"]
        lines += [f"  {_cut(line, 160)}" for line in self.summary()[:4]]
        return "\n".join(lines) + ">"


def _cut(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _audit(name: str) -> Audit[Any, Any]:
    from audit_core.registry import REGISTRY, TOOLS

    audits = {**REGISTRY, **TOOLS}
    if name not in audits:
        raise InputError(f"There is no audit '{name}'; the audits are {', '.join(audits)}.")
    return audits[name]


def _field_names(settings: type[Settings]) -> dict[str, str]:
    """Keyword -> settings field: each field's name and its CLI flag's name (``rows`` for ``--rows``)."""
    names = {}
    for field in settings.knobs():
        names[field] = field
        names.setdefault(settings.flag(field).removeprefix("--").replace("-", "_"), field)
    return names


def _value(settings: type[Settings], field: str, value: Any) -> Any:
    """A keyword's value as the knob takes it: text read as the CLI reads it, a list as a tuple, one item as a list."""
    knob, default = settings.knobs()[field], settings.defaults().get(field)
    list_knob = isinstance(default, tuple) or (field in settings.required() and knob.min_items > 0)
    if isinstance(value, str) and not isinstance(default, str | bool):
        try:
            value = knob.parser(default)(value)
        except InputError as exc:
            raise InputError(f"{settings.flag(field)}: {exc}.") from None
        except (ValueError, TypeError):
            kind = "a whole number" if knob.bound is not None and knob.bound.integer else "a number"
            raise InputError(f"{settings.flag(field)}: expected {kind}, got {value!r}.") from None
    if isinstance(value, list):
        value = tuple(value)
    if list_knob and not isinstance(value, tuple) and value is not None:
        value = (value,)
    return value


def settings_for(name: str, **options: Any) -> Settings:
    """The settings of audit ``name`` from keyword options (CLI flag names), checked by their knobs.

    >>> settings_for("scores", fpr=0.01, delta=1e-6)
    ScoreSettings(fpr=(0.01,), delta=1e-06)
    >>> settings_for("scores", fpr=2)
    Traceback (most recent call last):
    ...
    audit_core.common.errors.InputError: --fpr must be a number from 1e-06 to 0.5; got 2.
    """
    audit = _audit(name)
    names = _field_names(audit.settings)
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise InputError(f"{name} has no setting '{unknown[0]}'; its settings are {', '.join(audit.settings.knobs())}.")
    values = {names[k]: _value(audit.settings, names[k], v) for k, v in options.items()}
    try:
        settings = audit.settings(**values)
    except TypeError as exc:  # pragma: no cover - every keyword is a field (checked above)
        raise InputError(str(exc)) from None
    settings.validate()
    return settings


def _inputs(audit: Audit[Any, Any], sources: Mapping[str, Any]) -> Inputs:
    """Inputs from DataFrames (checked as a file is), paths or database URLs (read as the CLI reads them)."""
    import pandas as pd

    from audit_core.common.table_files import check_frame
    from audit_core.contract import Inputs, read_inputs

    given = {k: v for k, v in sources.items() if v is not None}
    specs = {spec.name: spec for spec in audit.inputs}
    missing = [spec.cli_flag for spec in audit.inputs if spec.required and spec.name not in given]
    if missing:
        raise InputError(f"{audit.name} needs {', '.join(m.removeprefix('--') for m in missing)}.")
    frames = {k: v for k, v in given.items() if isinstance(v, pd.DataFrame)}
    others = {k: v for k, v in given.items() if k not in frames}
    for key, value in others.items():
        if not isinstance(value, str | Path):
            raise InputError(f"{key} must be a DataFrame, a file path or a database URL; got {type(value).__name__}.")
    read = read_inputs(audit, others)
    data = dict(read.data)
    for key, frame in frames.items():
        if key not in specs:
            raise InputError(f"{audit.name} has no input '{key}'; its inputs are {', '.join(specs)}.")
        data[key] = check_frame(frame, name=specs[key].message_name(key))
    return Inputs(data, dict(read.paths))


def run_audit(
    name: str,
    *,
    seed: int = 0,
    progress: Progress | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    **inputs_and_settings: Any,
) -> AuditResult:
    """Run any registered audit or tool by its CLI name: inputs and settings as keywords (the CLI's flag names).

    Parameters
    ----------
    name : str
        ``tabular``, ``compare``, ``lira``, ``model``, ``dp-audit``, ``fabrication``, ``scores``, or a tool
        (``generate``, ``fpc-sim``, ``selfcheck``, ``dp-audit-model``): ``audit_core.registry``.
    seed : int
        Every random choice (the CLI's ``--seed``).
    progress : callable, optional
        ``progress(fraction, message)`` as the work goes on.
    scheduler, workers : optional
        Run the heavy steps on a Dask cluster (the CLI's ``--scheduler`` / ``--workers``).
    **inputs_and_settings
        Each input (a DataFrame, a path or a database URL) by its name, each setting by its flag's name.

    Returns
    -------
    AuditResult

    Raises
    ------
    InputError
        A missing input, an unknown or bad setting, an unreadable table: the CLI's sentence.
    """
    from audit_core.common.cluster import cluster_client
    from audit_core.contract import run

    audit = _audit(name)
    input_names = {spec.name for spec in audit.inputs}
    sources = {k: v for k, v in inputs_and_settings.items() if k in input_names}
    settings = settings_for(name, **{k: v for k, v in inputs_and_settings.items() if k not in input_names})
    from audit_core.common.limits import SEED

    SEED.check(seed, name="seed")
    inputs = _inputs(audit, sources)
    with cluster_client(scheduler, workers) as client:
        return AuditResult(run(audit, inputs, settings, seed=seed, progress=progress, client=client))


def audit_table(
    train: Any, holdout: Any, synthetic: Any, auxiliary: Any = None, *, seed: int = 0, progress: Progress | None = None,
    **settings: Any,
) -> AuditResult:  # fmt: skip
    """Membership risk of a synthetic table (``python -m audit_core tabular``; docs/methods.md §1).

    ``train`` (the members), ``holdout`` (non-members), ``synthetic`` and optionally ``auxiliary``
    (what the attacker holds): DataFrames, CSV / Parquet paths or database URLs. Settings: the CLI's
    flags (``categorical``, ``ignore``, ``bandwidth``, ``prior``, ``disclosure=True``, ``known``,
    ``secrets``, ``n_attacks``, ``groups``, ...; ``python -m audit_core tabular --help``).
    """
    return run_audit("tabular", train=train, holdout=holdout, synthetic=synthetic, auxiliary=auxiliary, seed=seed,
                     progress=progress, **settings)  # fmt: skip


def compare_generators(data: Any, *, seed: int = 0, progress: Progress | None = None, **settings: Any) -> AuditResult:
    """Fit and audit several generators on one real table (``python -m audit_core compare``).

    Settings: ``generators`` (a list of names), ``params`` (``["ctgan.epochs=5"]``), ``use_rows``, ``rows``,
    ``train`` / ``holdout`` / ``auxiliary`` (the split's shares), ``ignore``, ``bandwidth``, ``prior``.
    """
    return run_audit("compare", data=data, seed=seed, progress=progress, **settings)


def audit_model(
    model: Any, train: Any, population: Any, *, seed: int = 0, progress: Progress | None = None, **settings: Any
) -> AuditResult:
    """Does a trained model reveal its training records? (``python -m audit_core model``).

    ``model``: an .onnx, .skops or .safetensors file (never a pickle); ``train`` (its members) and
    ``population`` (records it was not trained on): DataFrames, paths or database URLs (or .npz images).
    Settings: ``target``, ``attacks``, ``reference_models``, ``reference_family``, ``lira_variance``, ...
    """
    return run_audit("model", model=model, train=train, population=population, seed=seed, progress=progress,
                     **settings)  # fmt: skip


def check_dp_claim(
    data: Any = None, *, model: Any = None, canaries_file: Any = None, seed: int = 0, progress: Progress | None = None,
    **settings: Any,
) -> AuditResult:  # fmt: skip
    """Audit a differential-privacy claim (``python -m audit_core dp-audit``, or ``dp-audit-model``).

    With ``data``: train the model here at the claimed ``epsilon`` / ``delta`` with ``canaries`` canaries
    (``target``, ``canary_kind``, ``model``, ``epochs``). With ``model`` (an .onnx or .skops file) and
    ``canaries_file`` (a DataFrame, path or database URL: one row per canary with its inclusion): a team's
    own model (``target``, ``included_column``, ``epsilon``, ``delta``).
    """
    if (data is None) == (model is None):
        raise InputError("check_dp_claim takes data (a model is trained here) or model with canaries_file, not both.")
    if model is not None:
        return run_audit("dp-audit-model", model=model, canaries_file=canaries_file, seed=seed, progress=progress,
                         **settings)  # fmt: skip
    if canaries_file is not None:
        raise InputError("check_dp_claim: canaries_file goes with model (a team's own model), not with data.")
    return run_audit("dp-audit", data=data, seed=seed, progress=progress, **settings)


def check_scores(scores: Any, *, seed: int = 0, progress: Progress | None = None, **settings: Any) -> AuditResult:
    """What membership scores from any tool show (``python -m audit_core scores``).

    ``scores``: one row per (attack, record) with ``score`` (higher = member) and ``is_member`` (0/1),
    optional ``attack`` and ``record_id``. Settings: ``fpr`` (one or several target FPRs), ``delta``.
    """
    return run_audit("scores", scores=scores, seed=seed, progress=progress, **settings)
