"""Calibrated vs naive LiRA (docs/methods.md §2): models trained as one batch, aggregations, the finite-population correction."""

__all__: list[str] = []
