"""Ask-and-tell under a cost budget: check the remaining budget before each ``ask``.

With ``study.optimize`` the sampler stops the study by itself once the budget is spent. The
ask-and-tell interface has no optimize loop to stop, so nothing stops it and nothing raises:
the loop asks ``sampler.remaining_budget(study)`` (recomputed from storage, so other workers'
trials count too) before each ``study.ask()`` and ends when it is used up, or when
``sampler.stop_reason(study)`` says the study stopped (the budget is hard: no trial's cost fits
what is left). An ``ask`` after that only logs a warning.

The evaluation here is simulated and reports its cost with ``report_cost`` (say, GPU-hours of
a training run whose length grows with the number of epochs); a real loop might hand the
parameters to a job queue and ``tell`` the result when the job returns.

    python examples/ask_and_tell.py                 # budget of 40 cost units
    python examples/ask_and_tell.py --budget 10 --storage sqlite:///ask_tell.db
"""

from __future__ import annotations

import argparse
import math

import optuna

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


def evaluate(params: dict[str, float]) -> tuple[float, float]:
    """The simulated job: (validation loss, cost in GPU-hours)."""
    epochs, lr = params["epochs"], params["learning_rate"]
    loss = 0.2 + 1.0 / math.sqrt(epochs) + 0.3 * (math.log10(lr) + 2.5) ** 2
    cost = 0.05 * epochs  # from 0.05 to 5 GPU-hours
    return loss, cost


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=40.0, help="cost units (GPU-hours)")
    parser.add_argument(
        "--storage", default=None, help="e.g. sqlite:///ask_tell.db; None: in memory"
    )
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    args = parser.parse_args()

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = CostRolloutSampler(budget=args.budget, seed=args.seed)
    study = optuna.create_study(sampler=sampler, storage=args.storage)
    distributions = {
        "epochs": optuna.distributions.IntDistribution(1, 100, log=True),
        "learning_rate": optuna.distributions.FloatDistribution(1e-5, 1e-1, log=True),
    }

    while sampler.remaining_budget(study) > 0 and sampler.stop_reason(study) is None:
        trial = study.ask(distributions)  # parameters chosen here (define-and-run)
        loss, cost = evaluate(trial.params)
        report_cost(trial, cost)  # in the budget's units; validated
        study.tell(trial, loss)
        print(
            f"trial {trial.number:3d}: epochs={trial.params['epochs']:3d} "
            f"lr={trial.params['learning_rate']:.2e} loss={loss:.4f} cost={cost:.2f} "
            f"remaining={sampler.remaining_budget(study):.2f}"
        )

    ledger = sampler.ledger(study)
    print(f"trials: {ledger.n_finished}")
    print(f"best loss: {study.best_value:.4f} at {study.best_params}")
    print(f"spent/budget: {ledger.spent:.2f} / {ledger.budget:.2f} GPU-hours")


if __name__ == "__main__":
    main()
