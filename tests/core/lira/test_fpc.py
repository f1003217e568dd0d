"""The finite-population correction simulation (docs/methods.md §2)."""

import math

import pytest

from audit_core.common.errors import InputError
from audit_core.lira.fpc import fpc_simulation


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
def test_fpc_simulation_ratio_is_sqrt_fpc_and_one_after_correction(fraction):
    sim = fpc_simulation(population=1000, train_size=int(fraction * 1000), n_models=64, repeats=300, seed=1)
    assert sim.fpc == pytest.approx(1 - fraction)
    assert sim.ratio_empirical == pytest.approx(math.sqrt(1 - fraction), abs=0.03)
    assert sim.ratio_corrected == pytest.approx(1.0, abs=0.04)


def test_fpc_simulation_refuses_a_subset_larger_than_the_pool():
    with pytest.raises(InputError, match="training size"):
        fpc_simulation(population=100, train_size=100)
