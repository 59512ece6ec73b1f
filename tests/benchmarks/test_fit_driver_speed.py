"""``benchmarks/fit_driver_speed.py``: it times both optimizers and leaves the package alone."""

from __future__ import annotations

import numpy as np

from benchmarks import fit_driver_speed
from optuna_costbo._numerics import lbfgsb
from optuna_costbo._numerics.gp import fit as fit_module


def test_a_cell_times_both_and_restores_the_fits_driver() -> None:
    ours, theirs = fit_driver_speed.time_cell(2, 12, 2)
    assert ours > 0.0 and theirs > 0.0
    assert fit_module.lbfgsb_minimize is lbfgsb.lbfgsb_minimize


def test_the_scipy_reference_makes_the_drivers_iterates() -> None:
    bounds = np.array([[-1.0, 2.0], [0.0, 3.0]])

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        return float(np.sum((x - 1.5) ** 2)), 2.0 * (x - 1.5)

    x0 = np.array([0.0, 2.5])
    ref = fit_driver_speed.scipy_minimize(fun, x0, bounds, gtol=1e-3, max_iter=50)
    got = lbfgsb.lbfgsb_minimize(fun, x0, bounds, gtol=1e-3, max_iter=50)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_allclose(got[0], [1.5, 1.5], atol=1e-6)
