"""Singling out, linkability and attribute inference for a synthetic table.

Beyond membership, the European guidance on anonymisation (Article 29 Working Party,
Opinion 05/2014) asks three questions of a released table: can a person be **singled
out**, can records about the same person be **linked**, can an attribute be
**inferred**. This package answers them with the attacks of Giomi et al., "A Unified
Framework for Quantifying Privacy Risk in Synthetic Data", PoPETs 2023 (the method of
the ``anonymeter`` package, whose layout it follows: one evaluator per module, the
intervals apart), run on this project's exact Gower nearest neighbours
(:mod:`audit_core.synthetic.distance`).

Every attack is run twice, identically: against the **training** records (targets,
the people the generator saw) and against the **control** records (the holdout, the
same population, never seen). What the synthetic table lets anyone do to people it
never saw is inference from the population, not leakage; what it lets one do *more
often* to its own training people is the risk::

    risk = (rate_train - rate_control) / (1 - rate_control)

the share of the attacks that failed on the control which succeed on the targets
(0: no better than on strangers; 1: every attack that can fail, succeeds). Beside it a
**baseline** attacker who guesses at random; an attack no better than its baseline
proves nothing (the risk is then not evidence of safety either, only of a weak attack).

Modules (``audit_core.synthetic.disclosure.<module>``):

- ``audit``: ``audit_disclosure`` (the three attacks on the same tables, one seed) and its
  result ``DisclosureAudit``;
- ``roles``: what the attacker knows (``DisclosureRoles``), its defaults and its rules;
- ``singling_out``, ``linkability``, ``inference``: the three attacks, one per module;
- ``predicates``: the singling-out predicates and their compiled counts;
- ``neighbours``: the k nearest synthetic rows over a set of columns;
- ``attack_risk``: one attack's counts and risk (``AttackRisk``);
- ``intervals``: the Wilson and MOVER-R intervals.
"""

__all__: list[str] = []
