"""benchmarks/trial_placement.py on constructed runs: the stretches of the budget, the trials'
costs and the share near f*."""

from __future__ import annotations

import math

import pytest

from benchmarks import trial_placement as tp
from benchmarks.harness.runner import Run


def _run(costs: list[float], values: list[float]) -> Run:
    run = Run("p", "m", 0)
    run.costs, run.values = list(costs), list(values)
    return run


def test_trials_are_placed_by_the_spend_when_they_started() -> None:
    # budget 10: the trials start at spends 0, 4, 5, 8 and 9.5 (0, 40, 50, 80 and 95 %)
    run = _run([4.0, 1.0, 3.0, 1.5, 2.0], [3.0, 1.0, 0.005, 0.5, 0.001])
    rows = tp.placement([run, run], budget=10.0, f_star=0.0, near=0.01)
    by = {(r["lo"], r["hi"]): r for r in rows}
    assert by[(0.0, 0.25)]["trials_per_run"] == 1.0 and by[(0.0, 0.25)]["mean_cost"] == 4.0
    assert by[(0.25, 0.5)]["trials_per_run"] == 1.0  # 40 %
    assert by[(0.5, 0.75)]["near_share"] == 1.0  # the trial at 50 %, value 0.005
    assert by[(0.75, 0.9)]["near_share"] == 0.0 and by[(0.75, 0.9)]["mean_cost"] == 1.5
    assert by[(0.9, math.inf)]["mean_cost"] == pytest.approx(2.0)  # the last may overshoot
    assert sum(r["trials_per_run"] for r in rows) == 5.0


def test_an_empty_stretch_has_no_cost_or_share() -> None:
    rows = tp.placement([_run([20.0], [1.0])], budget=10.0, f_star=0.0, near=0.01)
    assert rows[0]["trials_per_run"] == 1.0
    assert math.isnan(rows[1]["mean_cost"]) and math.isnan(rows[1]["near_share"])
