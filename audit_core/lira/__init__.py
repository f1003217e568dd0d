"""Calibrated vs naive LiRA (METHODS.md §2): models trained as one batch, the aggregations, the finite-population correction."""
