"""audit_core: membership-risk audits, UI-free (the dashboard and ``python -m audit_core`` share it).

One package per audit (see docs/methods.md and ARCHITECTURE.md):

- :mod:`audit_core.synthetic` -- membership risk of a synthetic table (KDE over
  nearest-neighbour Gower distances), disclosure attacks, generators and their comparison;
- :mod:`audit_core.lira` -- naive vs calibrated LiRA and the finite-population correction;
- :mod:`audit_core.fabrication` -- fabricated members, their detection and the robust MIA;
- :mod:`audit_core.scores` -- membership scores from any tool, with the epsilon lower bound.

Shared pieces live in :mod:`audit_core.common`; the registry of audits (the contract every
audit implements) in :mod:`audit_core.contract`. The command line is ``python -m audit_core``.
"""

__version__ = "0.1.0"
