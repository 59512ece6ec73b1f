"""3. Seconds of one suggestion against ``n`` finished and ``r`` running trials
(InMemoryStorage; the running trials are pending points the sampler conditions on)."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import optuna

from benchmarks.harness import package_probes
from benchmarks.storage.studies import DIM
from benchmarks.storage.studies import fill_study
from benchmarks.storage.studies import objective_cost
from benchmarks.storage.studies import objective_value
from benchmarks.storage.studies import table
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


def measure_suggest(n_finished: int, n_running: int, acquisition: str, repeats: int) -> float:
    storage = optuna.storages.InMemoryStorage()
    fill_study(storage, "suggest", n_finished, n_running)
    sampler = package_probes.without_chart(
        CostRolloutSampler, budget=1e12, seed=0, acquisition=acquisition, n_startup_trials=4
    )
    study = optuna.load_study(study_name="suggest", storage=storage, sampler=sampler)
    times = []
    for _ in range(repeats):
        trial = study.ask()
        start = time.perf_counter()
        x = np.array([trial.suggest_float(f"x{i}", -1.0, 1.0) for i in range(DIM)])
        times.append(time.perf_counter() - start)
        report_cost(trial, objective_cost(x))
        study.tell(trial, objective_value(x))
    return statistics.median(times)


def section(args: argparse.Namespace) -> list[str]:
    """The table of section 3."""
    rows = []
    for n in args.suggest_finished:
        for r in args.suggest_running:
            cells = [str(n), str(r)]
            for acquisition in ("ei", "rollout"):
                s = measure_suggest(n, r, acquisition, args.suggest_repeats)
                print(f"  suggest n={n} r={r} {acquisition}: {s:.3f} s", flush=True)
                cells.append(f"{s:.3f}")
            rows.append(cells)
    return [
        "## 3. Seconds of one suggestion (median of "
        f"{args.suggest_repeats}, {DIM} parameters, InMemoryStorage)",
        "",
        *table(["n finished", "r running", "ei", "rollout"], rows),
        "",
    ]
