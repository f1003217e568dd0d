"""Fabricated members (METHODS.md §3): image models, the fabrication attacks, gradient-norm detection, the robust MIA."""
