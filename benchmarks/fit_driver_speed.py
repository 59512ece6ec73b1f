"""A warm GP fit with the package's L-BFGS-B driver against ``scipy.optimize.minimize``.

``_numerics/lbfgsb.lbfgsb_minimize`` runs scipy's L-BFGS-B core without ``minimize``'s
per-call set-up and per-evaluation bookkeeping; the iterates are the same
(``tests/numerics/test_lbfgsb.py``), so only the time differs. For each dimension D and number
of observations n, a GP is fitted to n random points of a smooth function, then refitted warm
(from those hyperparameters, as the sampler does after each new trial) on one more point,
``--repeats`` times with each optimizer, alternating. Median CPU milliseconds, one BLAS thread.

    python benchmarks/fit_driver_speed.py [--dims 2 5 10] [--trials 25 50 100]
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Callable
import functools
from pathlib import Path
import statistics
import sys
import time

import numpy as np

from optuna_costbo._numerics.gp import fit as fit_module
from optuna_costbo._numerics.lbfgsb import lbfgsb_minimize


Minimizer = Callable[..., tuple[np.ndarray, float]]


#: What the fits called before: ``scipy.optimize.minimize`` with the same settings (the
#: package's own fallback).
scipy_minimize: Minimizer = functools.partial(lbfgsb_minimize, sequential=True)


def time_cell(dim: int, n: int, repeats: int) -> tuple[float, float]:
    """Median CPU ms of a warm fit with the driver and with ``minimize``."""
    rng = np.random.default_rng(dim * 100 + n)
    X = rng.random((n + 1, dim))  # (n + 1, D)
    y = np.sin(3.0 * X).sum(axis=1) + 0.1 * rng.standard_normal(n + 1)  # (n + 1,)
    before = fit_module.fit_gp(X[:-1], y[:-1], rng=np.random.default_rng(0))
    times: dict[str, list[float]] = {"driver": [], "minimize": []}
    minimizers: dict[str, Minimizer] = {"driver": lbfgsb_minimize, "minimize": scipy_minimize}
    try:
        for _ in range(repeats):
            for name, minimizer in minimizers.items():
                fit_module.lbfgsb_minimize = minimizer  # type: ignore[assignment]
                start = time.process_time()
                fit_module.fit_gp(
                    X, y, rng=np.random.default_rng(1), n_restarts=0, warm_start=before.hyper
                )
                times[name].append(time.process_time() - start)
    finally:
        fit_module.lbfgsb_minimize = lbfgsb_minimize
    return statistics.median(times["driver"]) * 1e3, statistics.median(times["minimize"]) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--trials", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    lines = [
        "| D | n | warm fit, driver (ms) | warm fit, minimize (ms) | saved (ms) | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for dim in args.dims:
        for n in args.trials:
            ours, theirs = time_cell(dim, n, args.repeats)
            lines.append(
                f"| {dim} | {n} | {ours:.2f} | {theirs:.2f} | {theirs - ours:.2f} | "
                f"{ours / theirs:.2f} |"
            )
            print(lines[-1], flush=True)
    command = "python benchmarks/fit_driver_speed.py " + " ".join(sys.argv[1:])
    text = (
        f"`{command.strip()}`: median CPU ms of one warm GP fit (one more observation), "
        f"{args.repeats} of each alternating, one BLAS thread.\n\n" + "\n".join(lines) + "\n"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fit_driver_speed.md").write_text(text)


if __name__ == "__main__":
    main()
