"""The shadow-generator attack: when the generator is known, attack the generator itself (issue 29.2).

Stadler, Oprisanu and Troncoso (USENIX Security 2022) and Meeus et al. (ESORICS 2023): the
attacker draws shadow training sets from the population, puts each target record into half of
them, runs the same generator with the same settings on each and learns, per target, what its
presence changes in the output. One concept a module:

- ``targets``: the most vulnerable training records (Meeus et al.: the largest mean distance to
  their 5 nearest real records) or the ones the steward names;
- ``design``: which target goes into which shadow training set (each in exactly half);
- ``features``: what an output says about one target (distances to it, counts around it, the
  marginal and pairwise query answers that match it: Groundhog / TAPAS style);
- ``scoring``: one test per target, cross-fitted over the shadow sets (a LiRA-style Gaussian
  test on one feature, or a classifier), and the release scored by the same fold models;
- ``cost``: the time it will take, refused up front on a CPU where it would run too long;
- ``audit`` (``shadow_attack``), ``result`` (``ShadowAttack``), ``figures``, ``verdict``, ``spec``.
"""

__all__: list[str] = []
