"""The synthetic-data generators' names, labels and parameters, defined once (no SDV or torch import here).

The comparison's knob (its choices), the page's widgets and the generators' registry
(:data:`audit_core.synthetic.generators.registry.GENERATORS`, which adds each generator's class) read them.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Any

from audit_core.common.errors import InputError

__all__ = ["GENERATOR_INFO", "GeneratorInfo", "ParamSpec"]


@dataclass(frozen=True)
class ParamSpec:
    """One user-settable parameter of a generator.

    Attributes
    ----------
    name : str
        Keyword accepted by :func:`~audit_core.synthetic.generators.registry.make_generator`.
    label : str
        Short human label (pages use it for the widget).
    kind : str
        ``"int"``, ``"float"`` or ``"choice"``.
    default : int, float or str
        Default chosen so that a fit on 5,000 rows takes under two minutes on two CPU cores.
    low, high : float, optional
        Inclusive bounds for ``int`` / ``float``.
    choices : tuple of str
        Allowed values for ``choice``.
    help : str
        One sentence on what the parameter does.
    """

    name: str
    label: str
    kind: str
    default: Any
    low: float | None = None
    high: float | None = None
    _: KW_ONLY  # choices and help by name: a help text passed positionally once became the choices
    choices: tuple[str, ...] = ()
    help: str = ""

    def check(self, value: Any, *, generator: str) -> Any:
        """Return ``value`` converted to the parameter's type, or raise InputError."""
        if self.kind == "choice":
            if value not in self.choices:
                raise InputError(
                    f"Parameter '{self.name}' of generator '{generator}' must be one of "
                    f"{', '.join(self.choices)}; got {value!r}."
                )
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(
                f"Parameter '{self.name}' of generator '{generator}' must be a number; got {value!r}."
            ) from None
        if not math.isfinite(number):  # nan passes every comparison with the bounds
            raise InputError(
                f"Parameter '{self.name}' of generator '{generator}' must be a finite number; got {value!r}."
            )
        if self.kind == "int":
            if not float(number).is_integer():
                raise InputError(
                    f"Parameter '{self.name}' of generator '{generator}' must be a whole number; got {value!r}."
                )
            number = int(number)
        if (self.low is not None and number < self.low) or (self.high is not None and number > self.high):
            raise InputError(
                f"Parameter '{self.name}' of generator '{generator}' must lie between {self.low:g} and "
                f"{self.high:g}; got {value!r}."
            )
        return number


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
    return ParamSpec("epochs", "Epochs", "int", default, 1, 2000, help="Passes over the training table.")


def _batch(default: int) -> ParamSpec:
    return ParamSpec(
        "batch_size", "Batch size", "int", default, 10, 10000,
        help="Rows per gradient step (an even multiple of 10 for the GANs).",
    )


GENERATOR_INFO: dict[str, GeneratorInfo] = {
    "gaussian_copula": GeneratorInfo(
        "gaussian_copula", "Gaussian copula (SDV)",
        "Fits each column's distribution and a Gaussian copula for their dependence.",
        (ParamSpec(
            "default_distribution", "Marginal distribution", "choice", "beta",
            choices=("norm", "beta", "truncnorm", "gamma", "uniform", "gaussian_kde"),
            help="Family fitted to each numeric column.",
        ),),
    ),
    "ctgan": GeneratorInfo(
        "ctgan", "CTGAN (SDV)", "Conditional GAN for mixed tabular data.", (_epochs(30), _batch(500)), has_epochs=True,
    ),
    "tvae": GeneratorInfo(
        "tvae", "TVAE (SDV)", "Variational autoencoder for mixed tabular data.", (_epochs(60), _batch(500)),
        has_epochs=True,
    ),
    "copulagan": GeneratorInfo(
        "copulagan", "CopulaGAN (SDV)", "CTGAN trained on copula-transformed marginals.", (_epochs(30), _batch(500)),
        has_epochs=True,
    ),
    "bayesian_network": GeneratorInfo(
        "bayesian_network", "Bayesian network (pgmpy)",
        "Hill-climbing structure (BIC), smoothed CPDs, forward sampling; numeric columns binned.",
        (
            ParamSpec("degree", "Max parents per node", "int", 2, 0, 6, help="Bayesian-network degree (in-degree bound)."),
            ParamSpec("bins", "Bins per numeric column", "int", 10, 2, 100, help="Quantile bins for numeric columns."),
            ParamSpec(
                "pseudo_count", "Prior strength", "float", 1.0, 0.0, 1000.0,
                help="BDeu equivalent sample size: larger smooths the probabilities more.",
            ),
        ),
    ),
    "bootstrap": GeneratorInfo(
        "bootstrap", "Bootstrap (leaky reference)",
        "Resamples training rows: every synthetic row is a member (maximal leakage).",
        (ParamSpec(
            "noise", "Noise", "float", 0.0, 0.0, 1.0,
            help="Numeric noise in column standard deviations / probability of swapping a category.",
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
