"""The recommendation (the trial with the best posterior mean): closer to the optimum than
``study.best_trial`` under known noise, stored on the study, never a pruned or an infeasible
trial, and the same trial whether read from the study attr or fitted afresh."""

from __future__ import annotations

import math

import numpy as np
import optuna
from optuna.trial import TrialState

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import RECOMMENDED_ATTR


optuna.logging.set_verbosity(optuna.logging.ERROR)


def _truth(x: float, y: float) -> float:
    """A smooth bowl with its minimum 0 at (0.3, 0.6)."""
    return (x - 0.3) ** 2 + (y - 0.6) ** 2


def test_under_noise_the_recommendation_is_closer_to_the_optimum_than_the_best_trial() -> None:
    rec, best = [], []
    for seed in range(8):
        noise = np.random.default_rng(100 + seed)

        def objective(trial: optuna.Trial, noise: np.random.Generator = noise) -> float:
            x, y = trial.suggest_float("x", 0.0, 1.0), trial.suggest_float("y", 0.0, 1.0)
            report_cost(trial, 1.0)
            return _truth(x, y) + 0.05 * float(noise.standard_normal())  # sd 0.05

        sampler = CostRolloutSampler(budget=30.0, seed=seed, acquisition="ei")
        study = optuna.create_study(sampler=sampler)
        study.optimize(objective)
        recommended = sampler.recommended_trial(study)
        assert recommended is not None and recommended.state == TrialState.COMPLETE
        assert study.user_attrs[RECOMMENDED_ATTR] == recommended.number  # stored at the end
        rec.append(_truth(recommended.params["x"], recommended.params["y"]))
        best.append(_truth(study.best_trial.params["x"], study.best_trial.params["y"]))
    # The best observed value favours lucky draws; the posterior mean averages them out.
    assert np.mean(rec) < np.mean(best), (rec, best)


def test_without_noise_the_recommendation_is_the_best_trial() -> None:
    def objective(trial: optuna.Trial) -> float:
        x, y = trial.suggest_float("x", 0.0, 1.0), trial.suggest_float("y", 0.0, 1.0)
        report_cost(trial, 1.0)
        return _truth(x, y)

    sampler = CostRolloutSampler(budget=15.0, seed=0, deterministic_objective=True)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective)
    assert sampler.recommended_trial(study).number == study.best_trial.number  # type: ignore[union-attr]


def test_a_pruned_or_infeasible_trial_is_never_recommended() -> None:
    study = optuna.create_study(sampler=CostRolloutSampler(budget=100.0, seed=0))
    dist = {"x": optuna.distributions.FloatDistribution(0.0, 1.0)}
    for x in np.linspace(0.05, 0.95, 10):
        # The pruned trials report the best-looking values; only complete ones may be named.
        pruned = x < 0.4
        study.add_trial(
            optuna.trial.create_trial(
                params={"x": float(x)},
                distributions=dist,
                state=TrialState.PRUNED if pruned else TrialState.COMPLETE,
                value=None if pruned else float((x - 0.3) ** 2),
                intermediate_values={0: float((x - 0.3) ** 2) - 1.0},
                user_attrs={"cost": 1.0},
                system_attrs={"constraints": (1.0 if math.isclose(x, 0.45) else -1.0,)},
            )
        )
    recommended = CostRolloutSampler(budget=100.0).recommended_trial(study)
    assert recommended is not None
    assert recommended.state == TrialState.COMPLETE
    assert recommended.params["x"] == min(
        (t.params["x"] for t in study.trials if t.state == TrialState.COMPLETE),
        key=lambda v: abs(v - 0.3) if not math.isclose(v, 0.45) else math.inf,
    )


def test_before_any_trial_completes_there_is_none() -> None:
    study = optuna.create_study()
    assert CostRolloutSampler(budget=1.0).recommended_trial(study) is None
