"""Cost-aware Bayesian optimization under a budget, loaded from OptunaHub.

The objective reports what each evaluation cost; the study stops by itself once the summed
cost reaches the budget (no ``n_trials``).

    pip install optunahub -r https://hub.optuna.org/samplers/cost_rollout/requirements.txt
    python example.py
"""

from __future__ import annotations

import optuna
import optunahub


module = optunahub.load_module("samplers/cost_rollout")


def objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -5.0, 5.0)
    y = trial.suggest_float("y", -5.0, 5.0)
    # Evaluations far to the right are expensive: 1 to 11 cost units.
    module.report_cost(trial, 1.0 + x + 5.0)
    return (x - 1.0) ** 2 + (y + 2.0) ** 2


sampler = module.CostRolloutSampler(budget=40.0, seed=0)
study = optuna.create_study(sampler=sampler)
study.optimize(objective)  # stops by itself when the budget is spent
print(f"trials: {len(study.trials)}, spent: {sampler.ledger(study).spent:.1f} of 40")
print(f"best value: {study.best_value:.4f}, best params: {study.best_params}")
