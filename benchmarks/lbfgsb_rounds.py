"""Evaluation rounds of the maximizers' L-BFGS-B: separate runs (the package) against the one
problem over their separable sum (what it replaced), on the same calls.

The default sampler makes suggestions on the study of ``suggest_speed.py`` (random points of
its cost-varying test function, D dimensions, n trials, then ``--repeats`` suggestions, each
told its value). Every call of ``_numerics/lbfgsb.lbfgsb_runs`` (the maximizers, and the
rollout's polish) is recorded and made again with the joint problem: one
``scipy.optimize.minimize`` over all runs' variables whose objective is the sum of their
values. Reported per (D, n): the batched evaluation rounds per call (the separate runs need
as many rounds as their longest run), each way, and the largest amount by which one run's
separate optimum beats its joint one and the other way round (log acquisition values).

    python benchmarks/lbfgsb_rounds.py [--dims 2 5 10] [--trials 25 50 100] [--repeats 20]
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Callable
import math
from pathlib import Path
import sys

import numpy as np
import optuna
from scipy.optimize import minimize


if __package__ in (None, ""):  # run as a script: python benchmarks/lbfgsb_rounds.py
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.suggest_speed import make_study
from benchmarks.suggest_speed import time_suggestions
from optuna_costbo import CostRolloutSampler
from optuna_costbo._numerics import lbfgsb
from optuna_costbo._numerics import optimize


optuna.logging.set_verbosity(optuna.logging.ERROR)

RowFunAndGrad = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def joint_runs(
    fun_and_grad: RowFunAndGrad,
    Z0: np.ndarray,  # (R, D)
    V0: np.ndarray,  # (R,)
    cols: np.ndarray,  # (k,)
    bounds: np.ndarray | None,  # (R, k, 2)
    max_evals: int | None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """The replaced way: one L-BFGS-B problem in R * k variables, the sum of the R values; the
    best point of each run tracked as the package does. Returns points, values and the
    number of (batched) evaluations."""
    R, k = len(Z0), len(cols)
    Z = Z0.copy()  # (R, D)
    best_x, best_v = Z0[:, cols].copy(), V0.copy()  # (R, k), (R,)
    runs = np.arange(R)
    count = [0]

    def neg(x: np.ndarray) -> tuple[float, np.ndarray]:
        count[0] += 1
        Xc = x.reshape(R, k)
        Z[:, cols] = Xc
        v, g = fun_and_grad(Z, runs)
        v = lbfgsb.clean(v)
        better = v > best_v
        best_v[better], best_x[better] = v[better], Xc[better]
        if not np.all(np.isfinite(v)):
            return math.inf, np.zeros(R * k)
        gc = np.nan_to_num(np.asarray(g, dtype=float)[:, cols], nan=0.0, posinf=0.0, neginf=0.0)
        return -float(v.sum()), -gc.ravel()

    minimize(
        neg,
        Z0[:, cols].ravel(),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * (R * k) if bounds is None else bounds.reshape(R * k, 2),
        options={"maxiter": 200, "maxfun": max_evals or 15_000},
    )
    out = Z0.copy()
    out[:, cols] = best_x
    return out, best_v, count[0]


def cell(dim: int, n: int, repeats: int) -> dict[str, float]:
    """Rounds per call each way and the largest gains of one over the other, on one cell."""
    package_runs = lbfgsb.lbfgsb_runs
    rounds_sep: list[int] = []
    rounds_joint: list[int] = []
    sep_better, joint_better = 0.0, 0.0
    wins = [0, 0, 0]  # runs ending higher separately, jointly (by > 1e-6), the same

    def recorded(
        fun_and_grad: RowFunAndGrad,
        Z0: np.ndarray,
        V0: np.ndarray,
        cols: np.ndarray,
        bounds: np.ndarray | None = None,
        max_evals: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        nonlocal sep_better, joint_better
        calls = [0]

        def counted(Z: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            calls[0] += 1
            return fun_and_grad(Z, runs)

        out = package_runs(counted, Z0, V0, cols, bounds, max_evals)
        _, joint_v, joint_calls = joint_runs(fun_and_grad, Z0, V0, cols, bounds, max_evals)
        rounds_sep.append(calls[0])
        rounds_joint.append(joint_calls)
        finite = np.isfinite(out[1]) & np.isfinite(joint_v)
        if finite.any():
            diff = out[1][finite] - joint_v[finite]
            sep_better = max(sep_better, float(diff.max()))
            joint_better = max(joint_better, float(-diff.min()))
            wins[0] += int(np.sum(diff > 1e-6))
            wins[1] += int(np.sum(diff < -1e-6))
            wins[2] += int(np.sum(np.abs(diff) <= 1e-6))
        return out

    optimize.lbfgsb_runs = recorded  # type: ignore[assignment]
    lbfgsb.lbfgsb_runs = recorded  # type: ignore[assignment]
    try:
        sampler = CostRolloutSampler(1e12, acquisition="rollout", n_startup_trials=0, seed=0)
        study = make_study(sampler, dim, n, seed=dim * 1000 + n)
        time_suggestions(study, dim, repeats)
    finally:
        optimize.lbfgsb_runs = package_runs
        lbfgsb.lbfgsb_runs = package_runs
    return {
        "calls": len(rounds_sep) / repeats,
        "sep_mean": float(np.mean(rounds_sep)),
        "sep_max": float(np.max(rounds_sep)),
        "joint_mean": float(np.mean(rounds_joint)),
        "joint_max": float(np.max(rounds_joint)),
        "sep_better": sep_better,
        "joint_better": joint_better,
        "wins": wins[0],
        "losses": wins[1],
        "ties": wins[2],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--trials", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    lines = [
        "| D | n | calls per suggestion | rounds per call, separate runs: mean (max) | "
        "joint problem: mean (max) | runs ending higher separately / jointly / the same | "
        "largest gain of a separate run | of a joint one |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for dim in args.dims:
        for n in args.trials:
            r = cell(dim, n, args.repeats)
            lines.append(
                f"| {dim} | {n} | {r['calls']:.1f} | {r['sep_mean']:.1f} ({r['sep_max']:.0f}) | "
                f"{r['joint_mean']:.1f} ({r['joint_max']:.0f}) | "
                f"{r['wins']:.0f} / {r['losses']:.0f} / {r['ties']:.0f} | {r['sep_better']:.2g} | "
                f"{r['joint_better']:.2g} |"
            )
            print(lines[-1], flush=True)
    command = "python benchmarks/lbfgsb_rounds.py " + " ".join(sys.argv[1:])
    text = (
        f"`{command.strip()}`: calls of `lbfgsb_runs` during {args.repeats} suggestions of "
        "the default per cell (the maximizers and the rollout's polish), each made as the "
        "package makes it and again as one joint problem; runs compared by their final log "
        "acquisition values (a run from a start far from any peak, where log EI is very "
        "negative, can gain or lose a lot on either side).\n\n" + "\n".join(lines) + "\n"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lbfgsb_rounds.md").write_text(text)


if __name__ == "__main__":
    main()
