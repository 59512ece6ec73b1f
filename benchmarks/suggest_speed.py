"""Median suggestion time of CostRolloutSampler against Optuna's GPSampler, side by side.

For each dimension D and number of completed trials n, both samplers get the same n trials
(random points of a cost-varying test function, added with ``add_trial``), then make
``--repeats`` consecutive suggestions, each told its value before the next, as in a real run:
warm starts from earlier fits are used the way each sampler normally uses them. Reported: the
median (and mean) seconds of one ``ask`` plus all ``suggest_*`` calls. Single-threaded: BLAS
and torch are limited to one thread before they load.

    pip install torch==2.13.0     # for GPSampler
    python benchmarks/suggest_speed.py [--dims 2 5 10] [--trials 25 50 100 200] [--repeats 7]
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Callable
import functools
import math
from pathlib import Path
import statistics
import time

import numpy as np
import optuna
from optuna.distributions import FloatDistribution

from optuna_costbo import CostRolloutSampler


optuna.logging.set_verbosity(optuna.logging.ERROR)

HORIZONS = (1, 2, 4)


def test_function(x: np.ndarray) -> tuple[float, float]:
    """Styblinski-Tang-like objective on [-1, 1]^D and a cost growing with sum(x) (~20x)."""
    z = 2.5 * x
    value = float(np.sum(z**4 - 16 * z**2 + 5 * z) / 2.0)
    cost = float(math.exp(1.5 * np.mean(x) + 1.5))
    return value, cost


def make_study(sampler: optuna.samplers.BaseSampler, dim: int, n: int, seed: int) -> optuna.Study:
    rng = np.random.default_rng(seed)
    study = optuna.create_study(sampler=sampler)
    dists = {f"x{i}": FloatDistribution(-1.0, 1.0) for i in range(dim)}
    for _ in range(n):
        x = rng.uniform(-1.0, 1.0, dim)
        value, cost = test_function(x)
        study.add_trial(
            optuna.create_trial(
                params={f"x{i}": float(x[i]) for i in range(dim)},
                distributions=dists,
                value=value,
                user_attrs={"cost": cost},
            )
        )
    return study


def time_suggestions(study: optuna.Study, dim: int, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        trial = study.ask()
        x = np.array([trial.suggest_float(f"x{i}", -1.0, 1.0) for i in range(dim)])
        times.append(time.perf_counter() - start)
        value, cost = test_function(x)
        trial.set_user_attr("cost", cost)
        study.tell(trial, value)
    return times


def samplers() -> dict[str, Callable[[], optuna.samplers.BaseSampler]]:
    out: dict[str, Callable[[], optuna.samplers.BaseSampler]] = {
        "costbo EI": lambda: CostRolloutSampler(
            1e12, acquisition="ei", n_startup_trials=0, seed=0
        ),
        "costbo EIpu": lambda: CostRolloutSampler(
            1e12, acquisition="eipu", n_startup_trials=0, seed=0
        ),
    }
    for h in HORIZONS:
        out[f"costbo rollout h={h}"] = functools.partial(
            CostRolloutSampler, 1e12, acquisition="rollout", horizon=h, n_startup_trials=0, seed=0
        )
    try:
        import torch

        torch.set_num_threads(1)
        out["optuna GPSampler"] = lambda: optuna.samplers.GPSampler(seed=0, n_startup_trials=0)
    except ImportError:
        print("torch is not installed: GPSampler is left out (pip install torch==2.13.0)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--trials", type=int, nargs="+", default=[25, 50, 100, 200])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()

    makers = samplers()
    # Warm-up: the first suggestion in a process pays for imports (torch especially).
    for make in makers.values():
        time_suggestions(make_study(make(), 2, 5, 0), 2, 1)

    rows = []
    for dim in args.dims:
        for n in args.trials:
            medians = {}
            for name, make in makers.items():
                times = time_suggestions(
                    make_study(make(), dim, n, seed=dim * 1000 + n), dim, args.repeats
                )
                medians[name] = (statistics.median(times), statistics.fmean(times))
            rows.append((dim, n, medians))
            cells = "  ".join(f"{k}: {v[0] * 1e3:7.1f} ms" for k, v in medians.items())
            print(f"D={dim:<3} n={n:<4} {cells}", flush=True)

    names = list(makers)
    header = "| D | n | " + " | ".join(f"{k} median (mean) ms" for k in names)
    ref = "optuna GPSampler"
    if ref in names:
        header += " | " + " | ".join(f"{k} / GPSampler" for k in names if k != ref)
    lines = [header + " |", "|" + "---|" * (header.count("|") - 1)]
    for dim, n, med in rows:
        cells = [f"{med[k][0] * 1e3:.1f} ({med[k][1] * 1e3:.1f})" for k in names]
        if ref in names:
            cells += [f"{med[k][0] / med[ref][0]:.2f}" for k in names if k != ref]
        lines.append(f"| {dim} | {n} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print()
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "suggest_speed.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
