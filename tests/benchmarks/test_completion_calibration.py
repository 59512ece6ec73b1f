"""benchmarks/completion_calibration.py: the calibration and stop-chance tables on constructed
data, and the recording of the completion model's probability and the objective model's chance
of a stop in a small pruned study."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest

from benchmarks import completion_calibration as cc
from optuna_costbo import CostRolloutSampler


def test_the_bins_count_proposals_completions_and_their_expectation() -> None:
    pf = np.array([0.01, 0.02, 0.5, 1.0, 0.7, np.nan])  # (6,)
    done = np.array([False, True, True, True, False, True])
    rows = {(r["lo"], r["hi"]): r for r in cc.calibration_rows(pf, done)}
    low = rows[(0.0, 0.05)]
    assert (low["n"], low["observed"]) == (2, 1)
    assert low["expected"] == pytest.approx(0.03) and low["completed_share"] == 0.5
    assert rows[(0.4, 0.7)]["n"] == 1  # 0.5; 0.7 belongs to the next bin
    top = rows[(0.7, 1.0)]  # the last bin includes 1.0
    assert (top["n"], top["observed"], top["mean_pf"]) == (2, 1, pytest.approx(0.85))
    assert sum(r["n"] for r in rows.values()) == 5  # the NaN (no model yet) is left out
    assert math.isnan(rows[(0.05, 0.1)]["mean_pf"]) and rows[(0.05, 0.1)]["n"] == 0
    with pytest.raises(ValueError, match="differ in shape"):
        cc.calibration_rows(pf, done[:3])


def test_the_stop_chance_bins_count_proposals_and_first_step_stops() -> None:
    p_stop = np.array([0.01, 0.03, 0.5, 0.95, 1.0, np.nan])  # (6,)
    pf = np.array([0.9, np.nan, 0.4, 0.1, 0.3, 0.5])
    done = np.array([True, True, False, False, True, True])
    first = np.array([False, False, True, True, False, False])
    rows = {(r["lo"], r["hi"]): r for r in cc.stop_chance_rows(p_stop, pf, done, first)}
    low = rows[(0.0, 0.05)]
    assert (low["n"], low["first_stops"], low["completed_share"]) == (2, 0, 1.0)
    assert low["mean_p_stop"] == pytest.approx(0.02)
    assert low["mean_pf"] == pytest.approx(0.9)  # the NaN (no completion model) left out
    top = rows[(0.7, 1.0)]  # the last bin includes 1.0
    assert (top["n"], top["first_stops"], top["completed_share"]) == (2, 1, 0.5)
    assert top["mean_pf"] == pytest.approx(0.2)
    assert rows[(0.4, 0.7)]["first_stops"] == 1
    assert sum(r["n"] for r in rows.values()) == 5  # no chance of a stop yet: left out
    with pytest.raises(ValueError, match="differ in shape"):
        cc.stop_chance_rows(p_stop, pf, done, first[:3])


def test_recording_reads_the_completion_probability_of_each_proposal() -> None:
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        for step in range(1, 4):
            # below 0.5 the first report is bad and MedianPruner stops the trial there
            value = (x - 0.7) ** 2 + (1.0 if x < 0.5 else 0.0) / step
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value

    sampler = CostRolloutSampler(
        budget=1e9, n_startup_trials=4, seed=0, acquisition="eipu", cost_fn=lambda p: 1.0
    )
    pruner = optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0)
    study = optuna.create_study(sampler=sampler, pruner=pruner)
    p_stop: list[float] = []
    with cc.recording(p_stop) as records:
        study.optimize(objective, n_trials=14)
    states = [t.state for t in study.trials]
    assert optuna.trial.TrialState.PRUNED in states
    assert len(records) == 10  # one per trial after the start-up design
    pf = np.array(records)
    known = np.isfinite(pf)
    assert known.any() and np.all((pf[known] > 0.0) & (pf[known] <= 1.0))
    # the last proposals are where every trial completed (x near 0.7): likely to complete
    assert np.all(pf[-5:] > 0.9)
    # NaN exactly while no trial before the proposal had been pruned
    first_pruned = states.index(optuna.trial.TrialState.PRUNED)
    assert np.all(~known[: max(first_pruned + 1 - 4, 0)])
    # the objective model's chance of a stop, one per proposal; NaN exactly where the
    # completion probability is (both need a pruned trial), else in [0, 1]
    assert len(p_stop) == len(records)
    chance = np.array(p_stop)
    np.testing.assert_array_equal(np.isfinite(chance), known)
    assert np.all((chance[known] >= 0.0) & (chance[known] <= 1.0))
    # the last proposals, near the optimum x = 0.7, are not expected to be stopped
    assert np.all(chance[-5:] < 0.5)
    # the wrappers are removed when the block ends
    from optuna_costbo._numerics import policy
    from optuna_costbo._sampler import suggest

    assert suggest.propose is policy.propose
