"""No budget, an exchange rate: stop when the next trial is not worth what it costs.

The objective trains a (simulated) model whose cost in dollars grows with its size. Instead of a
budget, you say what an improvement is worth: ``value_per_cost=0.002`` means a validation loss
lower by 0.002 is worth one more dollar. The sampler stops the study as soon as no configuration's
expected improvement is worth its predicted cost, and says why. The same rule as a callback works
with any sampler (here Optuna's TPE).

    python examples/stopping.py                     # value_per_cost = 0.002, no budget
    python examples/stopping.py --value-per-cost 1e-4 --budget 50 --storage sqlite:///stop.db
"""

from __future__ import annotations

import argparse
import math

import optuna

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo.stopping import CostAwareStopping


def objective(trial: optuna.Trial) -> float:
    width = trial.suggest_int("width", 8, 512, log=True)
    learning_rate = trial.suggest_float("learning_rate", 1e-4, 1e-1, log=True)
    dollars = 0.05 + 0.002 * width  # a bigger model costs more to train
    report_cost(trial, dollars)
    # Simulated validation loss: wider is better, with diminishing returns.
    return 0.1 + 1.0 / math.sqrt(width) + 0.1 * (math.log10(learning_rate) + 2.0) ** 2


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--value-per-cost", type=float, default=0.002, help="objective units a dollar is worth"
    )
    parser.add_argument("--budget", type=float, default=None, help="dollars; None: the rule alone")
    parser.add_argument("--storage", default=None, help="e.g. sqlite:///stop.db; None: in memory")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    sampler = CostRolloutSampler(args.budget, value_per_cost=args.value_per_cost, seed=0)
    study = optuna.create_study(sampler=sampler, storage=args.storage)
    study.optimize(objective)  # no budget, no n_trials: the rule ends it
    print(f"CostRolloutSampler: {len(study.trials)} trials, best loss {study.best_value:.4f}")
    print(
        f"  spent ${sampler.ledger(study).spent:.2f}; stopped because {sampler.stop_reason(study)}"
    )

    callback = CostAwareStopping(args.value_per_cost)
    tpe = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
    tpe.optimize(objective, n_trials=500, callbacks=[callback])
    spent = sum(t.user_attrs["cost"] for t in tpe.trials)
    print(f"TPE with CostAwareStopping: {len(tpe.trials)} trials, best loss {tpe.best_value:.4f}")
    print(f"  spent ${spent:.2f}; stopped because {tpe.user_attrs['cost_stop_reason']}")


if __name__ == "__main__":
    main()
