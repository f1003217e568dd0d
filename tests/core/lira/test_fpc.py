"""The finite-population correction simulation (docs/methods.md §2)."""

import math

import pytest

from audit_core.__main__ import main
from audit_core.common.errors import InputError
from audit_core.lira.fpc import fpc_simulation
from audit_core.lira.spec import FpcSettings


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
def test_fpc_simulation_ratio_is_sqrt_fpc_and_one_after_correction(fraction):
    sim = fpc_simulation(population=1000, train_size=int(fraction * 1000), n_models=64, repeats=300, seed=1)
    assert sim.fpc == pytest.approx(1 - fraction)
    assert sim.ratio_empirical == pytest.approx(math.sqrt(1 - fraction), abs=0.03)
    assert sim.ratio_corrected == pytest.approx(1.0, abs=0.04)


def test_fpc_settings_refuse_a_subset_larger_than_the_pool_before_the_simulation(capsys):
    """Validate once: the knobs and FpcSettings.validate hold every rule; fpc_simulation trusts its inputs."""
    with pytest.raises(InputError, match="training size"):
        FpcSettings(population=100, train_size=100).validate()
    with pytest.raises(InputError, match="--train-size must be a whole number from 2"):
        FpcSettings(population=100, train_size=1).validate()
    with pytest.raises(InputError, match="--population must be a whole number from 4"):
        FpcSettings(population=3, train_size=2).validate()
    with pytest.raises(InputError, match="--models must be a whole number from 3"):  # the spread of 2 means is no spread
        FpcSettings(population=100, train_size=50, models=2).validate()
    with pytest.raises(InputError, match="too large for this simulation"):
        FpcSettings(population=10_000_000, train_size=50, models=1024).validate()
    FpcSettings(population=4, train_size=2, models=3, repeats=1).validate()  # the smallest simulation
    assert main(["--quiet", "fpc-sim", "--population", "100", "--train-size", "100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "training size" in err[0]
