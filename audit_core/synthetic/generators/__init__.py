"""Synthetic-data generators behind one interface, one module per family, and a registry by name.

A data steward rarely has one synthetic table: they choose a generator and its
settings. Each generator fits a real training table and samples a synthetic one;
:mod:`audit_core.synthetic.comparison` fits several side by side and audits each.

- :mod:`~audit_core.synthetic.generators.base`: the interface (:class:`~audit_core.synthetic.generators.base.TabularGenerator`:
  ``fit(train, *, types, seed, progress, reserve)`` and ``sample(n, *, seed)``) and the
  preparation of a training table; outputs keep the training table's compared columns (in
  its order) with numeric columns numeric (integers stay integers) and categorical ones as text.
- :mod:`~audit_core.synthetic.generators.sdv`: ``gaussian_copula``, ``ctgan``, ``tvae``,
  ``copulagan``, SDV 2.0 single-table synthesizers (table-dict API: ``fit({name: df})``,
  ``sample(n)[name]``), with per-epoch progress.
- :mod:`~audit_core.synthetic.generators.bayesian_network`: ``bayesian_network``, pgmpy
  hill-climb structure learning (BIC, bounded in-degree), BDeu-smoothed CPDs and forward
  sampling; numeric columns are discretised into quantile bins and mapped back by drawing
  uniformly inside the sampled bin (columns with few distinct values are kept exact).
- :mod:`~audit_core.synthetic.generators.references`: ``bootstrap`` (resamples training rows:
  every synthetic row is a member, maximal leakage) and ``population`` (real rows the audit
  never sees, the split's ``reserve``: what a perfect generator would leak, chance).
- :mod:`~audit_core.synthetic.generators.registry`: ``GENERATORS`` by name and
  :func:`~audit_core.synthetic.generators.registry.make_generator` (the names, labels and
  parameters themselves are in :mod:`audit_core.synthetic.choices`, importable without SDV or torch).
"""

__all__: list[str] = []
