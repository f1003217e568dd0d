"""The synthetic-table audit as a registered audit (audit_core.contract): inputs, settings, run, verdict, report.

``tabular`` audits membership risk (docs/methods.md §1) and, with ``disclosure``, singling out,
linkability and attribute inference on the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from audit_core.common.errors import InputError
from audit_core.common.limits import (
    BANDWIDTH,
    BANDWIDTH_SCALE,
    DISCLOSURE_ATTACKS,
    GENERATED_ROWS,
    GENERATOR_EPOCHS,
    LINK_K,
    PRIOR,
    Bound,
)
from audit_core.contract import (
    REQUIRED,
    Audit,
    Context,
    Inputs,
    InputSpec,
    Outcome,
    Settings,
    csv_list,
    knob,
)
from audit_core.synthetic.choices import GENERATOR_INFO
from audit_core.synthetic.kde import BANDWIDTH_RULES
from audit_core.synthetic.shadow.spec import shadow_knob
from audit_core.synthetic.split import DEFAULT_FRACTIONS

if TYPE_CHECKING:  # the computation is imported when a stage runs, not when the registry is built
    import pandas as pd

    from audit_core.common.column_types import ColumnTypes
    from audit_core.common.decision import Decision
    from audit_core.common.groups import GroupRisk
    from audit_core.common.report import Report
    from audit_core.synthetic.comparison import GeneratorComparison
    from audit_core.synthetic.disclosure.audit import DisclosureAudit
    from audit_core.synthetic.disclosure.roles import DisclosureRoles
    from audit_core.synthetic.result import SyntheticAudit

__all__ = [
    "COMPARE",
    "GENERATE",
    "GENERATOR_INFO",  # the generators' labels and parameters, for the comparison page
    "TABULAR",
    "CompareSettings",
    "GenerateSettings",
    "TabularResult",
    "TabularSettings",
    "group_risk",
]


def _columns(label: str, help: str, stage: str = "run") -> Any:
    return knob((), label, help, stage=stage)


def _role(label: str, help: str) -> Any:
    return knob(None, label, "--disclosure: " + help, parse=csv_list)


def _bandwidth(help: str) -> Any:
    return knob("silverman", "Bandwidth rule", help, choices=BANDWIDTH_RULES, bound=BANDWIDTH, stage="rescore")


@dataclass(frozen=True)
class TabularSettings(Settings):
    """The tabular audit's knobs: column types (setup), the re-score knobs, the disclosure attacks, the group column."""

    categorical: tuple[str, ...] = _columns("Categorical columns", "columns compared as equal / not equal", "setup")
    numeric: tuple[str, ...] = _columns("Numeric columns", "columns compared as |x - s| / range", "setup")
    ignore: tuple[str, ...] = _columns("Ignored columns", "columns left out of the distance", "setup")
    bandwidth: str | float = _bandwidth("KDE bandwidth: scott, silverman, cv or a number (on the KDE's log-like "
                                        "distance axis).")  # fmt: skip
    bandwidth_scale: float = knob(1.0, "Bandwidth × rule", "Multiplier on the bandwidth rule: smaller gives sharper "
                                  "densities, larger smoother ones.", bound=BANDWIDTH_SCALE, stage="rescore")  # fmt: skip
    prior: float = knob(0.5, "Prior P(member)", "prior membership probability pi", bound=PRIOR, stage="rescore")
    disclosure: bool = knob(False, "Disclosure attacks", "also run singling out, linkability and inference")
    known: tuple[str, ...] | None = _role("Columns the attacker knows", "default: all but the secrets")
    link_a: tuple[str, ...] | None = _role("Linkability: one half", "default: first half of --known")
    link_b: tuple[str, ...] | None = _role("Linkability: the other half", "default: second half of --known")
    secrets: tuple[str, ...] | None = _role("Secret columns to infer", "default: the last column")
    n_attacks: int = knob(2000, "Attacks per table", "--disclosure: attacks per table", bound=DISCLOSURE_ATTACKS)
    link_k: int = knob(1, "Linkability neighbours k", "--disclosure: neighbours per half", bound=LINK_K)
    groups: str | None = knob(None, "Risk by group", "column whose groups each get their copies, near-copies and a TPR "
                              "at 1 % FPR (default: the column whose groups differ most in copies, else in risk)",
                              stage="rescore")  # fmt: skip

    @staticmethod
    def column_kinds(train: Any) -> dict[str, str]:
        """Each column of the training table as inferred: ``numeric``, ``categorical`` or ``ignore`` (the editor's start)."""
        from audit_core.common.column_types import infer_column_types

        types = infer_column_types(train)
        kinds = {c: "numeric" for c in types.numeric} | {c: "categorical" for c in types.categorical}
        return {str(c): kinds.get(str(c), "ignore") for c in train.columns}

    @staticmethod
    def default_roles(columns: list[str]) -> dict[str, tuple[str, ...]]:
        """The disclosure attacker's roles when none are given: ``known``, ``link_a``, ``link_b``, ``secrets``."""
        from audit_core.synthetic.disclosure.roles import default_roles

        return {k: tuple(v) for k, v in default_roles(columns).to_json().items()}

    def validate(self) -> None:
        """Every knob, then the one rule that ties two together: both linkability halves or neither."""
        super().validate()
        if (self.link_a is None) != (self.link_b is None) or (self.link_a is not None and not (self.link_a and self.link_b)):
            raise InputError("The linkability split has an empty side; give columns to both --link-a and --link-b.")


@dataclass(frozen=True)
class TabularResult:
    """The membership audit and, when asked for, the disclosure audit of the same tables."""

    audit: SyntheticAudit
    disclosure: DisclosureAudit | None = None
    groups: GroupRisk | None = None  # risk by group of the true-distribution attack

    def to_json(self) -> dict[str, Any]:
        """The membership audit's JSON, with ``disclosure`` and ``groups`` when they were computed."""
        summary = self.audit.to_json()
        if self.disclosure is not None:
            summary["disclosure"] = self.disclosure.to_json()
        if self.groups is not None:
            summary["groups"] = self.groups.to_json()
        return summary


def group_risk(audit: SyntheticAudit, column: str | None) -> GroupRisk:
    """Risk by group: copies and near-copies over every training row and holdout record that is not an auxiliary
    record, the true-distribution attack's TPR over the audited records (``column`` None: the column whose groups
    differ most in copies, else in risk)."""
    import numpy as np
    import pandas as pd

    from audit_core.common.groups import risk_by_group

    recs = audit.records
    source, rows = recs["source"].to_numpy(), recs["row"].to_numpy()
    n_train = len(audit.frames["train"])
    pool = audit.pool_holdout_rows if audit.pool_holdout_rows is not None else np.unique(rows[source == "holdout"])
    columns = {}
    for col in audit.types.columns:
        values = np.concatenate([np.asarray(audit.frames["train"][col].astype(object)),
                                 np.asarray(audit.frames["holdout"][col].astype(object))[pool]])  # fmt: skip
        columns[col] = pd.Series(values).infer_objects()
    member = np.r_[np.ones(n_train, dtype=bool), np.zeros(pool.size, dtype=bool)]
    scored = np.where(source == "train", rows, n_train + np.searchsorted(pool, rows))
    copied = audit.pool_copied if audit.pool_copied is not None else np.zeros(member.size, dtype=bool)
    return risk_by_group(columns, recs["p_member_true"].to_numpy(), member, column=column, copied=copied,
                         near=audit.linkage.near, scored=scored)  # fmt: skip


_ROLES = ("train", "holdout", "synthetic", "auxiliary")


def _types(inputs: Inputs, s: TabularSettings) -> ColumnTypes:
    from audit_core.common.column_types import infer_column_types

    return infer_column_types(inputs["train"], categorical=s.categorical, numeric=s.numeric, ignore=s.ignore)


def _roles(columns: list[str], s: TabularSettings) -> DisclosureRoles | None:
    """The attacker's roles from the settings (None: the defaults)."""
    from audit_core.synthetic.disclosure.roles import DisclosureRoles, default_roles

    if all(getattr(s, n) is None for n in ("known", "link_a", "link_b", "secrets")):
        return None
    roles = default_roles(columns, secrets=s.secrets, known=s.known)
    if s.link_a is not None and s.link_b is not None:
        roles = DisclosureRoles(known=roles.known, link_a=s.link_a, link_b=s.link_b, secrets=roles.secrets)
    return roles


def _check(inputs: Inputs, s: TabularSettings) -> None:
    """The column types, the group column and the attacker's roles fit the training table (before the long audit)."""
    from audit_core.common.alignment import check_shared_columns
    from audit_core.common.errors import columns_sentence

    types = _types(inputs, s)
    check_shared_columns({role: inputs[role] for role in _ROLES if inputs.get(role) is not None}, types=types)
    if s.groups is not None and s.groups not in types.columns:
        raise InputError(f"--groups: '{s.groups}' is not a compared column of the training table; "
                         + columns_sentence(types.columns, s.groups))
    if s.disclosure:
        from audit_core.synthetic.disclosure.roles import check_roles, default_roles

        columns = [c for c in inputs["train"].columns if c in types.columns]
        check_roles(_roles(columns, s) or default_roles(columns), columns)


def _prepare(inputs: Inputs, s: TabularSettings, ctx: Context) -> SyntheticAudit:
    """The membership audit (distances, copies, linkage, densities at the default bandwidth and prior)."""
    from audit_core.synthetic.audit import audit_synthetic

    t = {role: inputs.get(role) for role in _ROLES}
    return audit_synthetic(t["train"], t["holdout"], t["synthetic"], t["auxiliary"], types=_types(inputs, s),
                           seed=ctx.seed, progress=ctx.progress, client=ctx.client)  # fmt: skip


def _run(inputs: Inputs, s: TabularSettings, ctx: Context) -> TabularResult:
    audit = ctx.prepared
    disclosure = None
    if s.disclosure:
        from audit_core.synthetic.disclosure.audit import DisclosureOptions, audit_disclosure

        columns = [c for c in inputs["train"].columns if c in audit.types.columns]
        options = DisclosureOptions(n_attacks=s.n_attacks, link_k=s.link_k)
        disclosure = audit_disclosure(inputs["train"], inputs["holdout"], inputs["synthetic"], types=audit.types,
                                      roles=_roles(columns, s), options=options, seed=ctx.seed, progress=ctx.progress)
    return TabularResult(audit, disclosure, group_risk(audit, s.groups))


def _rescore(result: TabularResult, s: TabularSettings, ctx: Context) -> TabularResult:
    from audit_core.synthetic.scoring import rescore

    audit = rescore(result.audit, bandwidth=s.bandwidth, bandwidth_scale=s.bandwidth_scale, prior=s.prior)
    return replace(result, audit=audit, groups=group_risk(audit, s.groups))


def _verdict(result: TabularResult) -> str:
    from audit_core.synthetic.verdict import verdict

    return verdict(result.audit, result.disclosure)


def _decision(result: TabularResult) -> Decision:
    from audit_core.synthetic.verdict import decision

    return decision(result.audit, result.disclosure)


def _report(outcome: Outcome[TabularSettings, TabularResult]) -> Report:
    from audit_core.common.report import describe_input
    from audit_core.synthetic.verdict import build_report, with_disclosure

    result = outcome.value
    inputs = [describe_input(n, outcome.inputs[n]) for n in _ROLES if outcome.inputs.get(n) is not None]
    report = build_report(result.audit, inputs=inputs)
    if result.groups is not None:
        caption = (f"Risk by group: {result.groups.column} (copies, near-copies and the TPR at 1 % FPR of the "
                   "true-distribution attack; groups with copies beyond chance first)")  # fmt: skip
        report = replace(report, tables=[*report.tables, (caption, result.groups.table())],
                         metrics={**report.metrics, "groups": result.groups.to_json()})
    return report if result.disclosure is None else with_disclosure(report, result.audit, result.disclosure)


def _records(outcome: Outcome[TabularSettings, TabularResult]) -> pd.DataFrame:
    from audit_core.synthetic.disclosure.audit import add_to_records
    from audit_core.synthetic.result import RECORD_COLUMNS

    result = outcome.value
    extra = [c for c in ("learned_score",) if c in result.audit.records]  # the learned attacker's out-of-fold P(member)
    records = result.audit.records[[*RECORD_COLUMNS, *extra]]
    return records if result.disclosure is None else add_to_records(records, result.disclosure)


def _summary(outcome: Outcome[TabularSettings, TabularResult]) -> list[str]:
    audit = outcome.value.audit
    true, real, copies = audit.attacks["true_distribution"], audit.attacks["realistic"], audit.copy_test
    return [
        f"AUC true-distribution {true.auc:.3f}, realistic {real.auc:.3f}; "
        f"TPR at 1 % FPR {true.tpr_at_fpr['0.01'].tpr:.3f} / {real.tpr_at_fpr['0.01'].tpr:.3f}; "
        f"verbatim copies {copies.train_copies} of {copies.n_train} training rows, {copies.holdout_copies} of "
        f"{copies.n_holdout} holdout rows (one-sided Fisher p = {copies.p_value:.2g})"
    ]


def _notes(outcome: Outcome[TabularSettings, TabularResult]) -> list[str]:
    return [f"warning: {w}" for w in outcome.value.audit.warnings]


def _after(outcome: Outcome[TabularSettings, TabularResult]) -> list[str]:
    """Lines printed after the verdict: the disclosure attacks' readings."""
    if outcome.value.disclosure is None:
        return []
    return [f"disclosure {key}: risk {r.risk:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}], baseline rate "
            f"{r.baseline_rate:.3f}: {r.reading}" for key, r in outcome.value.disclosure.results()]  # fmt: skip


def _table_input(role: str, help: str, required: bool = True) -> InputSpec:
    """A table named by its role (train, holdout, ...) in messages and the report, whatever its file is called."""
    return InputSpec(role, help, required=required, named_by_role=True)


TABULAR = Audit(
    name="tabular",
    title="Synthetic-data risk",
    icon="🧬",
    question="Can an attacker tell, from the synthetic table, who was in the training data?",
    needs="train (members), holdout (non-members) and synthetic tables; optional auxiliary data. CSV or Parquet.",
    method="KDE membership probabilities over nearest-neighbour Gower distances; true-distribution and realistic "
    "attacks vs the distance-threshold baseline.",
    inputs=(
        _table_input("train", "training table = members (CSV or Parquet)"),
        _table_input("holdout", "holdout table = non-members"),
        _table_input("synthetic", "the synthetic table to audit"),
        _table_input("auxiliary", "population data the attacker holds (optional)", required=False),
    ),
    settings=TabularSettings,
    check=_check,
    prepare=_prepare,
    setup_share=0.9,
    run=_run,
    rescore=_rescore,
    verdict=_verdict,
    decision=_decision,
    report=_report,
    summary=_summary,
    notes=_notes,
    after=_after,
    records=_records,
    page="views/synthetic_risk.py",
    section="Synthetic data",
    outputs=("json", "html", "pdf", "records"),
)


# ----------------------------------------------------------------------------- generator comparison
_DEFAULT_GENERATORS = ("bootstrap", "population", "gaussian_copula", "bayesian_network")
_FRACTION = Bound("a split fraction", 0.0, 0.95, integer=False)


@dataclass(frozen=True)
class CompareSettings(Settings):
    """The comparison's knobs: generators and their settings, the rows and the split, the re-score knobs."""

    generators: tuple[str, ...] = knob(_DEFAULT_GENERATORS, "Generators", "comma-separated generator names",
                                       choices=tuple(GENERATOR_INFO), min_items=1)  # fmt: skip
    params: tuple[str, ...] = knob((), "Generator settings", "generator.parameter=value pairs, e.g. ctgan.epochs=5 "
                                   "(the others keep their defaults)")  # fmt: skip
    use_rows: int = knob(0, "Real rows to use", "a random subset of the real table (0 = all rows; fits scale with it)",
                         bound=Bound("the number of real rows to use", 0, 10_000_000))  # fmt: skip
    synthetic_rows: int = knob(0, "Synthetic rows per generator (0 = as many as train)", flag="--rows",
                               bound=Bound("the number of synthetic rows", 0, GENERATED_ROWS.high))  # fmt: skip
    train: float = knob(DEFAULT_FRACTIONS["train"], "Train", "share of the real rows the generators are fitted on",
                        bound=_FRACTION)  # fmt: skip
    holdout: float = knob(DEFAULT_FRACTIONS["holdout"], "Holdout", "share kept as non-members", bound=_FRACTION)
    auxiliary: float = knob(DEFAULT_FRACTIONS["auxiliary"], "Auxiliary", "share the realistic attacker holds",
                            bound=_FRACTION)  # fmt: skip
    ignore: tuple[str, ...] = _columns("Columns to leave out", "columns left out of every fit and audit")
    shadow: bool = knob(False, "Shadow attack", "also attack every generator by re-running it on shadow training sets "
                        "(the fits and audits are kept)")  # fmt: skip
    shadow_targets: int = shadow_knob("targets", flag="--shadow-targets")
    shadow_models: int = shadow_knob("shadow_models")
    bandwidth: str | float = _bandwidth("Re-scores every audit from the stored distances.")
    prior: float = knob(0.5, "Prior P(member)", "Re-scores every audit from the stored distances.", bound=PRIOR,
                        stage="rescore")  # fmt: skip

    def validate(self) -> None:
        """Every knob, then the rules tying them together: the split's shares add up to at most 1, and each
        ``--params`` value by its generator's parameter spec."""
        super().validate()
        total = self.train + self.holdout + self.auxiliary
        if total > 1.0 + 1e-9:
            raise InputError(f"The split fractions add up to {total:.2f}, more than 1; lower --train, --holdout or "
                             "--auxiliary.")  # fmt: skip
        self.generator_params()  # each --params value checked by its generator before any file is read

    def generator_params(self) -> dict[str, dict[str, Any]]:
        """``{generator: {parameter: value}}``, each value checked by its generator's ParamSpec."""
        out: dict[str, dict[str, Any]] = {}
        for item in self.params:
            key, _, value = item.partition("=")
            name, _, param = key.partition(".")
            if not value or not param:
                raise InputError(f"--params takes generator.parameter=value pairs like ctgan.epochs=5, not {item!r}.")
            specs = {p.name: p for p in GENERATOR_INFO[name].params} if name in GENERATOR_INFO else {}
            if param not in specs:
                raise InputError(f"--params: generator '{name}' has no setting '{param}'.")
            out.setdefault(name, {})[param] = specs[param].check(value, generator=name)
        return out


def _run_compare(inputs: Inputs, s: CompareSettings, ctx: Context) -> GeneratorComparison:
    """Fit and audit every generator on (a seeded subset of) the real table; fits are kept in ``ctx.cache``."""
    from audit_core.common.column_types import infer_column_types
    from audit_core.synthetic.comparison import ComparisonPlan, compare_generators

    real, use = inputs["data"], int(s.use_rows)
    subset = real.sample(use, random_state=ctx.seed).reset_index(drop=True) if 0 < use < len(real) else real
    plan = ComparisonPlan(names=s.generators, params=s.generator_params(), rows=s.synthetic_rows or None,
                          fractions={"train": s.train, "holdout": s.holdout, "auxiliary": s.auxiliary},
                          shadow=_shadow_options(s))  # fmt: skip
    return compare_generators(subset, plan, types=infer_column_types(subset, ignore=s.ignore), seed=ctx.seed,
                              progress=ctx.progress, cache=ctx.cache, per_generator_progress=ctx.progress_for,
                              client=ctx.client)  # fmt: skip


def _shadow_options(s: CompareSettings) -> Any:
    """The shadow attack's options when ``--shadow`` is on (None otherwise)."""
    if not s.shadow:
        return None
    from audit_core.synthetic.shadow.audit import ShadowOptions

    return ShadowOptions(n_targets=s.shadow_targets, n_shadows=s.shadow_models)


def _check_compare(inputs: Inputs, s: CompareSettings) -> None:
    """With ``--shadow``, each generator's shadow fits estimated and refused up front where a CPU would run too long."""
    if not s.shadow:
        return
    from audit_core.common.runtime import pick_device
    from audit_core.synthetic.shadow.cost import check_shadow_time

    real = inputs["data"]
    rows = round((int(s.use_rows) or len(real)) * s.train)
    columns = len([c for c in real.columns if c not in s.ignore])
    device, params = pick_device().type, s.generator_params()
    for name in s.generators:
        defaults = {p.name: p.default for p in GENERATOR_INFO[name].params}
        check_shadow_time(name, defaults | params.get(name, {}), rows=max(rows, s.synthetic_rows), columns=columns,
                          fits=s.shadow_models, device_type=device, workers=1)  # fmt: skip


def _rescore_compare(comparison: GeneratorComparison, s: CompareSettings, ctx: Context) -> GeneratorComparison:
    from audit_core.synthetic.comparison import rescore_comparison

    return rescore_comparison(comparison, bandwidth=s.bandwidth, prior=s.prior)


def _compare_report(outcome: Outcome[CompareSettings, GeneratorComparison]) -> Report:
    from audit_core.common.report import describe_input
    from audit_core.synthetic.verdict import build_comparison_report

    return build_comparison_report(outcome.value, inputs=[describe_input("real table", outcome.value.real)])


def _compare_summary(outcome: Outcome[CompareSettings, GeneratorComparison]) -> list[str]:
    lines = []
    for run in outcome.value.runs:
        if not run.ok or run.audit is None:
            lines.append(f"{run.name}: failed: {run.error}")
            continue
        true = run.audit.attacks["true_distribution"]
        utility = f"{run.utility.overall:.3f}" if run.utility is not None else "n/a"
        lines.append(f"{run.name}: AUC {true.auc:.3f}, TPR at 1 % FPR {true.tpr_at_fpr['0.01'].tpr:.3f}, "
                     f"utility {utility}")  # fmt: skip
    return lines


def _compare_decision(comparison: GeneratorComparison) -> Decision:
    from audit_core.synthetic.verdict import comparison_decision

    return comparison_decision(comparison)


def _compare_verdict(comparison: GeneratorComparison) -> str:
    from audit_core.synthetic.verdict import comparison_verdict

    return comparison_verdict(comparison)


COMPARE = Audit(
    name="compare",
    title="Generate & compare",
    icon="⚙️",
    question="Which generator leaks least for the utility it keeps?",
    needs="one real table (it is split into train / holdout / auxiliary for you).",
    method="SDV GaussianCopula, CTGAN, TVAE, CopulaGAN, a Bayesian network, plus leaky and perfect reference "
    "points, each audited with the same attacks.",
    inputs=(InputSpec("data", "the real table (CSV or Parquet); it is split into train / holdout / auxiliary / reserve"),),
    settings=CompareSettings,
    check=_check_compare,
    run=_run_compare,
    rescore=_rescore_compare,
    verdict=_compare_verdict,
    decision=_compare_decision,
    report=_compare_report,
    summary=_compare_summary,
    page="views/generators.py",
    section="Synthetic data",
)


# ----------------------------------------------------------------------------- one generator (a tool)
@dataclass(frozen=True)
class GenerateSettings(Settings):
    """The ``generate`` tool's knobs: which generator, how many rows, column types, epochs."""

    generator: str = knob(REQUIRED, "Generator", "generator name, e.g. gaussian_copula, ctgan, bayesian_network",
                          choices=tuple(GENERATOR_INFO))  # fmt: skip
    rows: int = knob(REQUIRED, "Synthetic rows", bound=GENERATED_ROWS)
    categorical: tuple[str, ...] = _columns("Categorical columns", "comma-separated columns to treat as categorical")
    ignore: tuple[str, ...] = _columns("Ignored columns", "comma-separated columns to leave out")
    epochs: int | None = knob(None, "Epochs", "training epochs (generators that have them)", bound=GENERATOR_EPOCHS)

    def validate(self) -> None:
        """Every knob, then the rules tying the generator to the others (no ``population``, epochs where it has them)."""
        super().validate()
        if self.generator == "population":
            raise InputError(
                "The 'population' reference returns real rows held out from training; it only exists inside a "
                "comparison (the dashboard's Generate & compare page, or the compare command); choose another generator."
            )
        if self.epochs is not None and not GENERATOR_INFO[self.generator].has_epochs:
            raise InputError(f"Generator '{self.generator}' has no epochs; leave out --epochs.")


def _run_generate(inputs: Inputs, s: GenerateSettings, ctx: Context) -> _Table:
    from audit_core.common.column_types import infer_column_types
    from audit_core.synthetic.generators.registry import make_generator

    train = inputs["train"]
    types = infer_column_types(train, categorical=s.categorical, ignore=s.ignore)
    generator = make_generator(s.generator, **({} if s.epochs is None else {"epochs": s.epochs}))
    generator.fit(train, types=types, seed=ctx.seed, progress=ctx.progress)
    return _Table(generator.sample(s.rows, seed=ctx.seed))


@dataclass(frozen=True)
class _Table:
    """A generated table (the tool's value; its JSON is its size)."""

    frame: Any

    def to_json(self) -> dict[str, Any]:
        return {"rows": len(self.frame), "columns": list(map(str, self.frame.columns))}


def _save_table(outcome: Outcome[GenerateSettings, _Table], path: str) -> str | bytes:
    table = outcome.value.frame
    from audit_core.common.outputs import csv_text

    return csv_text(table) if path.lower().endswith(".csv") else table.to_parquet(index=False)


GENERATE = Audit(
    name="generate",
    title="Generate a synthetic table",
    icon="🧪",
    question="What does one generator make of this table?",
    needs="a training table (CSV or Parquet)",
    method="Fit one generator on --train and write --rows synthetic rows to --out (.csv or .parquet).",
    inputs=(_table_input("train", "the table the generator is fitted on"),),
    settings=GenerateSettings,
    run=_run_generate,
    verdict=lambda table: f"wrote {len(table.frame):,} synthetic rows",
    outputs=("out",),
    save=_save_table,
)
