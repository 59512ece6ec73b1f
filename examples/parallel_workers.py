"""Several worker processes sharing one cost budget through a SQLite study.

Each worker is a separate process (multiprocessing, spawn) that does what a worker on another
machine would do: ``optuna.load_study(...)`` with its own ``CostRolloutSampler(budget=...)``,
then ``study.optimize(objective)`` with neither ``n_trials`` nor ``timeout``. The samplers keep
no budget of their own: each recomputes the ledger from the shared storage, so together they
stop once the trials of all workers have spent the one budget. Trials still running at that
moment finish and are charged (the overrun is bounded by them); a trial a worker starts after
the budget is spent is pruned at its first suggestion and costs nothing. While a trial runs,
the others treat its point as pending and reserve its predicted cost.

The objective is a 2-D toy whose wall-clock cost (a sleep) grows with ``x``.

    python examples/parallel_workers.py                     # 4 workers, 20 s budget
    python examples/parallel_workers.py --workers 2 --budget 3 --storage sqlite:///par.db

With PostgreSQL or MySQL, pass its URL as ``--storage``; SQLite suits a few workers on one
machine (see the "Running in parallel" page of the documentation).
"""

from __future__ import annotations

import argparse
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
import datetime
import math
import multiprocessing
import os
import time

import optuna

from optuna_costbo import CostRolloutSampler


def objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -1.0, 1.0)
    y = trial.suggest_float("y", -1.0, 1.0)
    time.sleep(0.05 + 0.25 * (x + 1.0) / 2.0)  # 0.05 s at x = -1 up to 0.3 s at x = 1
    return (x - 0.6) ** 2 + (y + 0.2) ** 2 + 0.1 * math.sin(8.0 * x)


def worker(storage: str, study_name: str, budget: float, seed: int) -> tuple[int, int]:
    """One worker: load the shared study with its own sampler and optimize until the budget is
    spent. Returns (process id, number of trials this worker ran)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = CostRolloutSampler(budget=budget, seed=seed)
    study = optuna.load_study(study_name=study_name, storage=storage, sampler=sampler)
    ran = []
    study.optimize(objective, callbacks=[lambda study, trial: ran.append(trial.number)])
    return os.getpid(), len(ran)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=20.0, help="seconds of trial time")
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument(
        "--storage", default="sqlite:///parallel_workers.db", help="the storage the workers share"
    )
    parser.add_argument("--study-name", default=None, help="None: a new, time-stamped name")
    args = parser.parse_args()

    name = args.study_name or f"parallel-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    optuna.create_study(study_name=name, storage=args.storage, load_if_exists=True)
    print(f"study {name!r} in {args.storage}: {args.workers} workers, budget {args.budget} s")

    start = time.perf_counter()
    # NOTE: spawn, not fork: a forked child would inherit the parent's database connections.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=context) as pool:
        futures = [
            pool.submit(worker, args.storage, name, args.budget, seed)
            for seed in range(args.workers)
        ]
        for future in futures:
            pid, n = future.result()
            print(f"worker {pid}: {n} trials")
    elapsed = time.perf_counter() - start

    sampler = CostRolloutSampler(budget=args.budget)
    study = optuna.load_study(study_name=name, storage=args.storage, sampler=sampler)
    ledger = sampler.ledger(study)  # recomputed from storage, as every worker does
    states = Counter(t.state.name for t in study.trials)
    print(f"trials: {len(study.trials)} {dict(states)} in {elapsed:.1f} s of wall time")
    print(f"best value: {study.best_value:.4f} at {study.best_params}")
    print(
        f"spent/budget: {ledger.spent:.2f} s / {ledger.budget:.2f} s "
        f"(overrun {ledger.overrun:.2f} s, from trials still running at the end)"
    )


if __name__ == "__main__":
    main()
