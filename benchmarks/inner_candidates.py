"""Which inner candidates the rollout needs: accuracy of Lambda_h's choice against its cost.

The rollout's base policy takes an argmax over a finite set of points at every simulated step
(``optuna_costbo._numerics.rollout``). Scoring cost grows with that set's size, so the policy keeps
only the points of a Sobol pool that the current model rates best by EI and by EIpu. This script
checks what that costs in accuracy. For fitted models on random data, with the same first actions
and the same QMC draws, it computes Lambda_h with

- "all 1024": every point of a 1024-point Sobol pool as inner candidate (the reference: the
  closest to a continuous inner argmax we can afford);
- "all 256": the first 256 points of the same pool (the policy's earlier choice);
- "best K": the K best of the 1024 by EI and the K best by EIpu, their union (the policy's
  ``n_inner``; K = 64 is the default),

and reports how often each picks the reference's first action, the loss in the reference's
Lambda_h when it does not (relative to the spread max - median of Lambda_h over the first
actions, mean and worst), and the median time of one ``rollout_values`` call.

    python -m benchmarks.inner_candidates [--seeds 12] [--out benchmarks/results]
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Callable
from pathlib import Path
import statistics
import sys
import time

import numpy as np
from scipy.stats import qmc


if __package__ in (None, ""):  # run as a script: python benchmarks/inner_candidates.py
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.package_probes import PAPER
from benchmarks.harness.package_probes import FittedLogCost
from benchmarks.harness.package_probes import fit_gp
from benchmarks.harness.package_probes import plain_ei
from benchmarks.harness.package_probes import qmc_normals
from benchmarks.harness.package_probes import rollout_values_on
from benchmarks.harness.package_probes import top_indices


DataFn = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray, np.ndarray]]
"""(rng, n) -> points (n, D) in the unit box, values (n,), costs (n,)."""


def synthetic(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's synthetic problem (Figure 4) in [0, 1]^2: points (n, 2), values, costs."""
    x = rng.uniform(-1.0, 1.0, (n, 2))
    r = np.linalg.norm(x, axis=1)
    return (x + 1.0) / 2.0, 10.0 * r * np.sin(2.0 * np.pi * r), 10.0 - 5.0 * r


def styblinski(dim: int) -> DataFn:
    """suggest_speed.py's test function: Styblinski-Tang-like, cost ~20x across the box."""

    def make(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = rng.uniform(-1.0, 1.0, (n, dim))
        z = 2.5 * x
        y = np.sum(z**4 - 16 * z**2 + 5 * z, axis=1) / 2.0
        return (x + 1.0) / 2.0, y, np.exp(1.5 * x.mean(axis=1) + 1.5)

    return make


def one_case(
    make: DataFn, dim: int, n: int, horizon: int, seed: int, ks: list[int]
) -> dict[str, tuple[np.ndarray, float, int]]:
    """Lambda_h of the same first actions under each candidate set: name -> (values, s, |set|)."""
    rng = np.random.default_rng(seed)
    X, y, c = make(rng, n)
    model = fit_gp(X, y, rng=rng, n_restarts=2)
    cost_model = fit_gp(X, np.log(c), rng=rng, n_restarts=2, min_noise_var=1e-4)

    cost = FittedLogCost(cost_model)

    best = float(y.min())
    # Remaining budget: about five median evaluations, so trajectories take several steps.
    tau = 5.0 * float(np.median(c))
    pool = qmc.Sobol(dim, scramble=True, seed=seed).random(1024)  # (1024, D)
    mean_p, var_p = model.predict(pool)
    cost_p = cost.cost(pool)
    ei_p = plain_ei(mean_p, var_p, best)
    affordable = cost_p <= tau
    by_ei = top_indices(ei_p, affordable, 8)
    by_eipu = top_indices(ei_p / cost_p, affordable, 8)
    first = np.unique(np.vstack([pool[by_ei], pool[by_eipu]]), axis=0)
    normals = qmc_normals(64, horizon, np.random.default_rng(seed))
    sets = {"all 1024": np.flatnonzero(affordable), "all 256": np.flatnonzero(affordable[:256])}
    for k in ks:
        sets[f"best {k}"] = np.union1d(
            top_indices(ei_p, affordable, k), top_indices(ei_p / cost_p, affordable, k)
        )
    out = {}
    for name, keep in sets.items():
        start = time.perf_counter()
        values = rollout_values_on(
            model, first, pool[keep], mean_p[keep], best, tau, normals, cost, horizon, PAPER
        )
        out[name] = (values, time.perf_counter() - start, len(keep))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--ks", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    cases: list[tuple[str, DataFn, int, int]] = [
        ("synthetic", synthetic, 2, 8),
        ("synthetic", synthetic, 2, 15),
        ("synthetic", synthetic, 2, 30),
        ("styblinski", styblinski(5), 5, 25),
        ("styblinski", styblinski(5), 5, 100),
        ("styblinski", styblinski(10), 10, 50),
    ]
    names = ["all 256"] + [f"best {k}" for k in args.ks] + ["all 1024"]
    lines = [
        "| problem | D | n | h | candidates | median size | picks the reference's choice | "
        "loss / spread: mean (worst) | median ms per Lambda_h call |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, make, dim, n in cases:
        for horizon in (2, 4):
            runs = [one_case(make, dim, n, horizon, s, args.ks) for s in range(args.seeds)]
            for name in names:
                agree, losses = [], []
                for run in runs:
                    ref = run["all 1024"][0]
                    spread = max(float(ref.max() - np.median(ref)), 1e-300)
                    pick = int(np.argmax(run[name][0]))
                    agree.append(pick == int(np.argmax(ref)))
                    losses.append(float(ref.max() - ref[pick]) / spread)
                size = statistics.median(run[name][2] for run in runs)
                ms = 1000.0 * statistics.median(run[name][1] for run in runs)
                lines.append(
                    f"| {label} | {dim} | {n} | {horizon} | {name} | {size:.0f} | "
                    f"{np.mean(agree):.2f} | {np.mean(losses):.3f} ({np.max(losses):.3f}) | "
                    f"{ms:.1f} |"
                )
            print("\n".join(lines[-len(names) :]), flush=True)
    header = (
        "# Inner candidates of the rollout\n\n"
        f"`python -m benchmarks.inner_candidates --seeds {args.seeds}`: {args.seeds} seeds "
        "per row; the same first actions (the 8 best of the pool by EI and by EIpu) and the "
        "same 64 QMC draws for every candidate set; remaining budget 5 x the median cost. "
        "Reference: all affordable points of a 1024-point Sobol pool. Loss: the reference's "
        "Lambda_h at its own choice minus at the set's choice, over the spread (max - median) "
        "of the reference's Lambda_h across first actions.\n\n"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "inner_candidates.md"
    path.write_text(header + "\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
