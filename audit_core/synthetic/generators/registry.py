"""Every generator by name (:data:`GENERATORS`) and :func:`make_generator`.

The names, labels and parameters are :data:`audit_core.synthetic.choices.GENERATOR_INFO`
(importable without SDV or torch); this registry adds each generator's class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from audit_core.common.errors import InputError
from audit_core.synthetic.choices import GENERATOR_INFO, GeneratorInfo
from audit_core.synthetic.generators.base import TabularGenerator
from audit_core.synthetic.generators.bayesian_network import BayesianNetworkGenerator
from audit_core.synthetic.generators.references import BootstrapGenerator, PopulationGenerator
from audit_core.synthetic.generators.sdv import CopulaGANGenerator, CTGANGenerator, GaussianCopulaGenerator, TVAEGenerator

__all__ = ["GENERATORS", "GeneratorSpec", "make_generator"]


@dataclass(frozen=True)
class GeneratorSpec(GeneratorInfo):
    """A registry entry: the generator's :class:`~audit_core.synthetic.choices.GeneratorInfo` and its class."""

    factory: Callable[..., TabularGenerator] | None = field(default=None, repr=False)


_FACTORIES: dict[str, type[TabularGenerator]] = {
    "gaussian_copula": GaussianCopulaGenerator,
    "ctgan": CTGANGenerator,
    "tvae": TVAEGenerator,
    "copulagan": CopulaGANGenerator,
    "bayesian_network": BayesianNetworkGenerator,
    "bootstrap": BootstrapGenerator,
    "population": PopulationGenerator,
}
GENERATORS: dict[str, GeneratorSpec] = {
    name: GeneratorSpec(**{f.name: getattr(info, f.name) for f in fields(info)}, factory=_FACTORIES[name])
    for name, info in GENERATOR_INFO.items()
}
"""Registry of generators by name (the names, labels and parameters: audit_core.synthetic.choices)."""


def make_generator(name: str, **params: Any) -> TabularGenerator:
    """Build an unfitted generator by registry name.

    Parameters
    ----------
    name : str
        A key of :data:`GENERATORS`.
    **params
        Parameters of that generator (see ``GENERATORS[name].params``).

    Returns
    -------
    TabularGenerator

    Raises
    ------
    InputError
        Unknown name or parameter, or a value out of range.

    Examples
    --------
    >>> gen = make_generator("bootstrap", noise=0.0)
    >>> gen.params
    {'noise': 0.0}
    """
    if name not in GENERATORS:
        raise InputError(f"Unknown generator '{name}'; choose one of {', '.join(GENERATORS)}.")
    factory = GENERATORS[name].factory
    assert factory is not None  # every entry has its class
    return factory(**params)
