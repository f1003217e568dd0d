"""audit_core: the UI-free backend of the membership-risk audit dashboard.

Three audits, one module each (see METHODS.md in the project docs):

- :mod:`audit_core.synthetic` -- membership risk of a synthetic table (KDE over
  nearest-neighbour Gower distances), with :mod:`audit_core.generators` to make
  synthetic tables to compare;
- :mod:`audit_core.lira` -- naive vs calibrated LiRA and the finite-population
  correction;
- :mod:`audit_core.fabrication` -- fabricated members, their detection and the
  robust MIA.

Shared pieces: :mod:`audit_core.tables` (loading and validation),
:mod:`audit_core.roc` (ROC and TPR at low FPR with intervals),
:mod:`audit_core.report` (HTML/JSON reports), :mod:`audit_core.plots` (figures),
:mod:`audit_core.runtime` (device, threads, seeds, progress) and
:mod:`audit_core.errors`. The command line is ``python -m audit_core``.
"""

__version__ = "0.1.0"
