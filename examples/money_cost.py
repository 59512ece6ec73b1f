"""A budget in dollars: each trial reports what its (simulated) cloud instance cost.

The objective trains a model on a rented instance. Its hyperparameters (epochs, learning rate)
decide the loss; the instance type and size decide only how fast and how expensive the run is:
price per hour x hours, where bigger instances run faster but less than proportionally so, and
every run pays a start-up overhead. The objective reports the bill with
``report_cost(trial, dollars)``, so the budget is in dollars; wall-clock time plays no part.
Nothing is rented: the training run is simulated.

The budget is hard (``overrun_risk=0.05``): a configuration is proposed only if its bill is
predicted to fit what is left, and the study stops when nothing fits. The price list is known
in advance, so the example also gives the sampler the bill as ``cost_fn``: then "fits" is exact
and, from the second trial on, the budget is never exceeded. (The first trial, asked before any
trial has completed, cannot be checked: its parameters come one by one.) ``--learn-cost``
leaves the bill to the sampler's cost model instead, which fits it within the risk.

    python examples/money_cost.py                  # a $20 budget
    python examples/money_cost.py --budget 1       # a hard $1 budget: spends at most $1.00
    python examples/money_cost.py --budget 5 --learn-cost --storage sqlite:///money.db
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import optuna

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


# Price per hour of one size unit, and the training speed of one size unit (work units / hour).
INSTANCES = {
    "cpu-standard": {"price": 0.10, "speed": 1.0},
    "cpu-compute": {"price": 0.17, "speed": 1.9},
    "gpu-small": {"price": 0.90, "speed": 12.0},
    "gpu-large": {"price": 3.00, "speed": 30.0},
}
OVERHEAD_HOURS = 0.05  # billed start-up time of every run


def bill(instance: str, size: int, epochs: int) -> tuple[float, float]:
    """Hours and dollars of a training run of ``epochs`` on ``size`` units of ``instance``."""
    spec = INSTANCES[instance]
    work = 0.25 * epochs  # work units
    hours = OVERHEAD_HOURS + work / (spec["speed"] * size**0.7)  # sub-linear scaling
    return hours, spec["price"] * size * hours


def simulated_loss(epochs: int, learning_rate: float) -> float:
    """Validation loss of the simulated run: more epochs help; the learning rate has an optimum."""
    return 0.15 + 0.8 / math.sqrt(epochs) + 0.2 * (math.log10(learning_rate) + 2.5) ** 2


def known_bill(params: dict[str, Any]) -> float:
    """The bill of ``params`` before the run, from the price list (the sampler's ``cost_fn``)."""
    return bill(params["instance"], params["size"], params["epochs"])[1]


def objective(trial: optuna.Trial) -> float:
    instance = trial.suggest_categorical("instance", list(INSTANCES))
    size = trial.suggest_int("size", 1, 16, log=True)
    epochs = trial.suggest_int("epochs", 1, 64, log=True)
    learning_rate = trial.suggest_float("learning_rate", 1e-5, 1e-1, log=True)
    hours, dollars = bill(instance, size, epochs)
    report_cost(trial, dollars)  # the budget's unit: dollars
    trial.set_user_attr("hours", hours)
    return simulated_loss(epochs, learning_rate)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=20.0, help="dollars")
    parser.add_argument("--storage", default=None, help="e.g. sqlite:///money.db; None: in memory")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    parser.add_argument(
        "--learn-cost", action="store_true", help="no cost_fn: the sampler learns the bill"
    )
    args = parser.parse_args()

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = CostRolloutSampler(
        budget=args.budget,
        seed=args.seed,
        overrun_risk=0.05,  # a hard budget: propose only what is predicted to fit
        cost_fn=None if args.learn_cost else known_bill,
    )
    study = optuna.create_study(sampler=sampler, storage=args.storage)
    study.optimize(objective)  # stops once the bills add up to the budget

    for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
        p = t.params
        print(
            f"trial {t.number:3d}: {p['instance']:>12} x{p['size']:<2d} epochs={p['epochs']:3d} "
            f"${t.user_attrs['cost']:.2f} loss={t.value:.4f}"
        )
    ledger = sampler.ledger(study)
    best = study.best_trial
    run_cost = best.user_attrs["cost"]
    print(f"best loss: {best.value:.4f} at {best.params} (that run cost ${run_cost:.2f})")
    print(f"spent/budget: ${ledger.spent:.2f} / ${ledger.budget:.2f}")
    if sampler.stop_reason(study):
        print(f"stopped: {sampler.stop_reason(study)}")


if __name__ == "__main__":
    main()
