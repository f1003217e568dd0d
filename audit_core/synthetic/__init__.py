"""The synthetic-table audit (docs/methods.md §1): distance (Gower nearest neighbours), density (KDE),
audit (the attacks), disclosure (singling out, linkability, inference), generators and comparison."""
