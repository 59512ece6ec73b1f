"""``benchmarks/lbfgsb_rounds.py``: the replaced joint problem it compares with, and a cell."""

from __future__ import annotations

import numpy as np

from benchmarks import lbfgsb_rounds
from optuna_costbo._numerics import lbfgsb
from optuna_costbo._numerics import optimize


def test_the_joint_problem_solves_separate_bowls_and_counts_its_rounds() -> None:
    centres = np.array([[0.2, 0.7], [0.9, 0.1], [0.5, 0.5]])  # (3, 2)

    def fun(Z: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = Z - centres[runs]
        return -np.sum(d**2, axis=1), -2.0 * d

    Z0 = np.full((3, 2), 0.4)
    V0 = fun(Z0, np.arange(3))[0]
    Z, V, rounds = lbfgsb_rounds.joint_runs(fun, Z0, V0, np.arange(2), None, None)
    np.testing.assert_allclose(Z, centres, atol=1e-5)
    assert rounds >= 2 and np.all(V >= V0)


def test_a_cell_counts_both_ways_and_restores_the_package() -> None:
    result = lbfgsb_rounds.cell(2, 8, 2)
    assert result["calls"] >= 1.0
    assert result["sep_mean"] >= 1.0 and result["joint_mean"] >= 1.0
    assert result["wins"] + result["losses"] + result["ties"] > 0
    assert optimize.lbfgsb_runs is lbfgsb.lbfgsb_runs
    assert lbfgsb.lbfgsb_runs.__module__ == "optuna_costbo._numerics.lbfgsb"
