"""Fabricated members (docs/methods.md §3): image models, the fabrication attacks, gradient-norm detection, the robust MIA."""
