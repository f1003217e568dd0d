"""The shadow-generator attack as a tool on the contract (``python -m audit_core shadow``; registry.TOOLS).

For an upload whose steward knows how the table was made: a registry generator and its settings.
The comparison page runs the same attack on the generators it fits (``compare --shadow``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from audit_core.common.errors import InputError
from audit_core.common.limits import GENERATED_ROWS, SHADOW_MODELS, SHADOW_TARGETS, Bound
from audit_core.contract import REQUIRED, Audit, Context, Inputs, InputSpec, Outcome, Settings, knob
from audit_core.synthetic.choices import GENERATOR_INFO

if TYPE_CHECKING:
    import pandas as pd

    from audit_core.common.decision import Decision
    from audit_core.common.report import Report
    from audit_core.synthetic.shadow.result import ShadowAttack

__all__ = ["SHADOW", "ShadowSettings", "parse_generator_settings", "shadow_knob"]

_ROW = Bound("a row of the training table", 0, 10**9)


def shadow_knob(name: str, flag: str = "") -> Any:
    """One of the shadow attack's two size knobs (``targets``, ``shadow_models``), shared with the comparison."""
    if name == "targets":
        return knob(20, "Targets", "the most unusual training records attacked (Meeus et al.: largest mean distance to "
                    "their 5 nearest real records)", bound=SHADOW_TARGETS, flag=flag)  # fmt: skip
    return knob(32, "Shadow models", "shadow training sets, each fitted with the same generator; every target is in "
                "exactly half of them (even)", bound=SHADOW_MODELS, flag=flag)  # fmt: skip


def parse_generator_settings(generator: str, text: str) -> dict[str, Any]:
    """``--generator-settings`` (a JSON object) as the generator's checked parameters."""
    if not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        raw = None
    if not isinstance(raw, dict):
        raise InputError(f'--generator-settings takes a JSON object such as {{"epochs": 30}}, not {text!r}.')
    specs = {p.name: p for p in GENERATOR_INFO[generator].params}
    for key in raw:
        if key not in specs:
            raise InputError(f"--generator-settings: generator '{generator}' has no setting '{key}'; its settings are "
                             f"{', '.join(specs) or 'none'}.")  # fmt: skip
    return {key: specs[key].check(value, generator=generator) for key, value in raw.items()}


@dataclass(frozen=True)
class ShadowSettings(Settings):
    """The shadow tool's knobs: the generator and its settings, T or named targets, K, rows per output, column types."""

    generator: str = knob(REQUIRED, "Generator", "the registry generator that made the release",
                          choices=tuple(n for n in GENERATOR_INFO if n != "population"))  # fmt: skip
    generator_settings: str = knob("", "Generator settings", 'its settings as a JSON object, e.g. {"epochs": 30} '
                                   "(the others keep their defaults)")  # fmt: skip
    targets: int = shadow_knob("targets")
    target_rows: tuple[int, ...] = knob((), "Named targets", "rows of the training table (0-based) to attack instead of "
                                        "the most unusual ones", bound=_ROW)  # fmt: skip
    shadow_models: int = shadow_knob("shadow_models")
    rows: int = knob(0, "Rows per output", "synthetic rows each shadow generator draws (0: as many as the release, or "
                     "as the training table when no release is given)",
                     bound=Bound("the number of synthetic rows", 0, GENERATED_ROWS.high))  # fmt: skip
    categorical: tuple[str, ...] = knob((), "Categorical columns", "columns compared as equal / not equal")
    ignore: tuple[str, ...] = knob((), "Ignored columns", "columns left out of every fit and feature")

    def validate(self) -> None:
        """Every knob, then the generator's settings (checked by its own parameter specs)."""
        super().validate()
        self.params()

    def params(self) -> dict[str, Any]:
        """The generator's settings from ``--generator-settings``, checked."""
        return parse_generator_settings(self.generator, self.generator_settings)


def _run(inputs: Inputs, s: ShadowSettings, ctx: Context) -> ShadowAttack:
    from audit_core.common.column_types import infer_column_types
    from audit_core.synthetic.shadow.audit import ShadowOptions, shadow_attack

    train = inputs["train"]
    types = infer_column_types(train, categorical=s.categorical, ignore=s.ignore)
    options = ShadowOptions(n_targets=s.targets, n_shadows=s.shadow_models, target_rows=s.target_rows or None,
                            rows=s.rows or None)  # fmt: skip
    return shadow_attack(train, inputs["population"], generator=s.generator, params=s.params(),
                         synthetic=inputs.get("synthetic"), types=types, options=options, seed=ctx.seed,
                         progress=ctx.progress, client=ctx.client)  # fmt: skip


def _decision(attack: ShadowAttack) -> Decision:
    from audit_core.synthetic.shadow.verdict import decision

    return decision(attack)


def _verdict(attack: ShadowAttack) -> str:
    from audit_core.synthetic.shadow.verdict import verdict

    return verdict(attack)


def _report(outcome: Outcome[ShadowSettings, ShadowAttack]) -> Report:
    from audit_core.common.report import describe_input
    from audit_core.synthetic.shadow.verdict import build_report

    names = [n for n in ("train", "population", "synthetic") if outcome.inputs.get(n) is not None]
    return build_report(outcome.value, inputs=[describe_input(n, outcome.inputs[n]) for n in names])


def _summary(outcome: Outcome[ShadowSettings, ShadowAttack]) -> list[str]:
    a = outcome.value
    return [f"{a.generator}: {int(a.told_apart.sum())} of {a.n_targets} targets told apart over {a.n_shadows} shadow "
            f"models; highest AUC {a.scores.auc.max():.2f}; pooled AUC {a.pooled().auc:.3f}"]  # fmt: skip


def _notes(outcome: Outcome[ShadowSettings, ShadowAttack]) -> list[str]:
    timing = outcome.value.to_json()["timing"]
    return [*(f"warning: {w}" for w in outcome.value.warnings),
            f"time: {timing['seconds_per_fit']:.2f} s per shadow fit, {timing['seconds']:.1f} s in all"]  # fmt: skip


def _records(outcome: Outcome[ShadowSettings, ShadowAttack]) -> pd.DataFrame:
    return outcome.value.table()


def _table(role: str, help: str, required: bool = True) -> InputSpec:
    return InputSpec(role, help, required=required, named_by_role=True)


SHADOW = Audit(
    name="shadow",
    title="Shadow-generator attack",
    icon="👥",
    question="If an attacker re-runs the generator on data like yours, can it tell whether the most unusual people "
    "were in the training data?",
    needs="the training table (members), population records that are not members (holdout and auxiliary), the "
    "generator's name and settings; optionally the released synthetic table.",
    method="Meeus et al.'s most isolated records as targets; K shadow training sets from the population, each target "
    "in half of them, fitted with the same generator; per target a cross-fitted LiRA-style Gaussian test on "
    "Groundhog / TAPAS features, with an exact permutation p-value, Holm over the targets.",
    inputs=(
        _table("train", "training table = members (CSV or Parquet)"),
        _table("population", "records of the same population that are not members: the shadow sets are drawn from it"),
        _table("synthetic", "the released synthetic table (optional: without it the generator is fitted on --train)",
               required=False),
    ),
    settings=ShadowSettings,
    run=_run,
    verdict=_verdict,
    decision=_decision,
    report=_report,
    summary=_summary,
    notes=_notes,
    records=_records,
    outputs=("json", "html", "pdf", "records"),
    section="Synthetic data",
)
