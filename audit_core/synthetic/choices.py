"""The synthetic-data generators' names, labels and parameters, defined once (no SDV or torch import here).

The comparison's knob (its choices), the page's widgets and the generators' registry
(:data:`audit_core.synthetic.generators.registry.GENERATORS`, which adds each generator's class) read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit_core.common.errors import InputError
from audit_core.common.limits import GENERATOR_EPOCHS, Bound
from audit_core.contract import Knob

__all__ = ["GENERATOR_INFO", "GeneratorInfo", "ParamSpec"]


@dataclass(frozen=True)
class ParamSpec:
    """One user-settable parameter of a generator: a :class:`~audit_core.contract.Knob` (its one rule) and a default.

    ``--params ctgan.epochs=5`` (the comparison), ``make_generator("ctgan", epochs=5)`` and the page's widget
    are checked by the same knob (:meth:`check`): one parameter system, the knobs'.

    Attributes
    ----------
    name : str
        Keyword accepted by :func:`~audit_core.synthetic.generators.registry.make_generator`.
    default : int, float or str
        Default chosen so that a fit on 5,000 rows takes under two minutes on two CPU cores.
    knob : Knob
        Label, help and rule: a bound (``int`` / ``float``: whole numbers, a multiple) or a choice list.
    """

    name: str
    default: Any
    knob: Knob

    @property
    def label(self) -> str:
        return self.knob.label

    @property
    def help(self) -> str:
        return self.knob.help

    @property
    def kind(self) -> str:
        """``"int"``, ``"float"`` or ``"choice"`` (the page's widget)."""
        if self.knob.choices is not None:
            return "choice"
        return "int" if self.knob.bound is not None and self.knob.bound.integer else "float"

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self.knob.choices or ())

    @property
    def low(self) -> float | None:
        return self.knob.bound.low if self.knob.bound is not None else None

    @property
    def high(self) -> float | None:
        return self.knob.bound.high if self.knob.bound is not None else None

    def check(self, value: Any, *, generator: str) -> Any:
        """``value`` (text from ``--params`` or a Python value) as the parameter's type, or the knob's InputError."""
        flag = f"--params {generator}.{self.name}"
        if isinstance(value, str) and self.knob.bound is not None:
            try:
                value = float(value)
            except ValueError:
                raise InputError(f"{flag} must be a number; got {value!r}.") from None
        self.knob.check(value, name=flag)
        return int(value) if self.kind == "int" else float(value) if self.kind == "float" else value


def _param(name: str, label: str, default: Any, *, help: str, bound: Bound | None = None,
           choices: tuple[str, ...] | None = None) -> ParamSpec:  # fmt: skip
    return ParamSpec(name, default, Knob(label, help, bound=bound, choices=choices))


@dataclass(frozen=True)
class GeneratorInfo:
    """What a generator is and what it exposes (audit_core.synthetic.generators adds how to build it).

    Attributes
    ----------
    name, label, summary : str
        Registry key, display name, one-sentence description.
    params : tuple of ParamSpec
        Settable parameters with defaults.
    has_epochs : bool
        True when fitting runs in epochs (progress is then reported per epoch).
    reference : bool
        True for the two reference points (``bootstrap``, ``population``).
    """

    name: str
    label: str
    summary: str
    params: tuple[ParamSpec, ...] = ()
    has_epochs: bool = False
    reference: bool = False

    def defaults(self) -> dict[str, Any]:
        """The default value of every parameter."""
        return {p.name: p.default for p in self.params}


def _epochs(default: int) -> ParamSpec:
    return _param("epochs", "Epochs", default, help="Passes over the training table.", bound=GENERATOR_EPOCHS)


def _batch(default: int, *, multiple: int) -> ParamSpec:
    """Rows per step: the GANs' pac (10) must divide it, and the autoencoder's must be even."""
    return _param("batch_size", "Batch size", default, help=f"Rows per gradient step (a multiple of {multiple}).",
                  bound=Bound("the batch size", 10, 10000, multiple=multiple))  # fmt: skip


GENERATOR_INFO: dict[str, GeneratorInfo] = {
    "gaussian_copula": GeneratorInfo(
        "gaussian_copula", "Gaussian copula (SDV)",
        "Fits each column's distribution and a Gaussian copula for their dependence.",
        (_param(
            "default_distribution", "Marginal distribution", "beta",
            choices=("norm", "beta", "truncnorm", "gamma", "uniform", "gaussian_kde"),
            help="Family fitted to each numeric column.",
        ),),
    ),
    "ctgan": GeneratorInfo(
        "ctgan", "CTGAN (SDV)", "Conditional GAN for mixed tabular data.", (_epochs(30), _batch(500, multiple=10)),
        has_epochs=True,
    ),
    "tvae": GeneratorInfo(
        "tvae", "TVAE (SDV)", "Variational autoencoder for mixed tabular data.", (_epochs(60), _batch(500, multiple=2)),
        has_epochs=True,
    ),
    "copulagan": GeneratorInfo(
        "copulagan", "CopulaGAN (SDV)", "CTGAN trained on copula-transformed marginals.",
        (_epochs(30), _batch(500, multiple=10)),
        has_epochs=True,
    ),
    "bayesian_network": GeneratorInfo(
        "bayesian_network", "Bayesian network (pgmpy)",
        "Hill-climbing structure (BIC), smoothed CPDs, forward sampling; numeric columns binned.",
        (
            _param("degree", "Max parents per node", 2, help="Bayesian-network degree (in-degree bound).",
                   bound=Bound("the number of parents", 0, 6)),
            _param("bins", "Bins per numeric column", 10, help="Quantile bins for numeric columns.",
                   bound=Bound("the number of bins", 2, 100)),
            _param("pseudo_count", "Prior strength", 1.0,
                   help="BDeu equivalent sample size: larger smooths the probabilities more.",
                   bound=Bound("the prior strength", 0.0, 1000.0, integer=False)),
        ),
    ),
    "bootstrap": GeneratorInfo(
        "bootstrap", "Bootstrap (leaky reference)",
        "Resamples training rows: every synthetic row is a member (maximal leakage).",
        (_param(
            "noise", "Noise", 0.0, help="Numeric noise in column standard deviations / probability of swapping a category.",
            bound=Bound("the noise", 0.0, 1.0, integer=False),
        ),),
        reference=True,
    ),
    "population": GeneratorInfo(
        "population", "Population (chance reference)",
        "Returns real rows nobody trained on: what a perfect generator would leak.", (), reference=True,
    ),
}  # fmt: skip
"""Every generator by name, with its label and parameters; adding one is one entry here and its class in
audit_core.synthetic.generators."""
