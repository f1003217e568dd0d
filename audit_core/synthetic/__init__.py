"""The synthetic-table audit (docs/methods.md §1), one concept per module.

The membership audit: ``audit`` (the steps, ``audit_synthetic``), ``attack_set``, ``encoding`` and
``distance`` (Gower nearest neighbours; the scans in ``nearest_scan``, on a cluster in
``distributed_distance``), ``density`` (KDE, P(member | d)), ``scoring`` (the attacks, ``rescore``),
``copies`` and ``linkage`` (copy tests), ``result`` (``SyntheticAudit``), ``explanations``;
``disclosure/`` (singling out, linkability, inference); ``generators/``, ``split``, ``utility`` and
``comparison`` (generators side by side); ``figures``, ``verdict``, ``choices`` and ``spec`` (the registry entries).
"""

__all__: list[str] = []
