"""How well each pruned-trial route reads a stopped trial's final value from learning curves.

Synthetic studies: 24 trials whose curves over 20 steps fall to a final value
``(x - 0.3)^2`` as ``a exp(-step / r)`` plus noise (sd 0.01); the first 12 complete, the other
12 stop after 2-11 steps. Two families: ``one shape`` (every curve a = 0.5, r = 3: what the
median move of the completed curves captures exactly) and ``varied`` (a ~ U(0.1, 1),
r ~ U(1.5, 8) per curve). For each route the mean absolute error of the stopped trials'
final values (their last step's value, noise included) over ``--seeds`` studies:

- ``impute``: the last report plus the completed curves' median move (``curves.impute_finals``);
- ``curves``: the freeze-thaw measurement (``freeze_thaw.measured_values``);
- ``decay alone``: freeze-thaw's kernel on the raw curves, without the shift by the median
  move (``fit_curve_kernel`` and ``final_measurements`` on the curves as reported);
- ``last report``: the value at the step the trial stopped, for scale.

The censored route is not in the table: its value depends on the objective GP over the
search space, not on the curves alone.

    python benchmarks/curve_measurements.py [--seeds 20] \
        [--out benchmarks/results/curve_measurements.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path
import sys

import numpy as np

from optuna_costbo._numerics.curves import Curve
from optuna_costbo._numerics.curves import StoppedCurves
from optuna_costbo._numerics.curves import impute_finals
from optuna_costbo._numerics.freeze_thaw import final_measurements
from optuna_costbo._numerics.freeze_thaw import fit_curve_kernel
from optuna_costbo._numerics.freeze_thaw import measured_values


FAMILIES = ("one shape", "varied")
ROUTES = ("impute", "curves", "decay alone", "last report")


def study(family: str, seed: int) -> tuple[list[Curve], list[Curve], np.ndarray]:
    """One synthetic study: the completed curves, the stopped ones, their true finals (12,)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1.0, 21.0)  # (20,)
    complete: list[Curve] = []
    stopped: list[Curve] = []
    truth = []
    for i, x in enumerate(rng.uniform(size=24)):
        if family == "one shape":
            a, r = 0.5, 3.0
        else:
            a, r = rng.uniform(0.1, 1.0), rng.uniform(1.5, 8.0)
        curve = (x - 0.3) ** 2 + a * np.exp(-steps / r) + 0.01 * rng.normal(size=20)  # (20,)
        if i < 12:
            complete.append((steps, curve))
        else:
            n = int(rng.integers(2, 12))
            stopped.append((steps[:n], curve[:n]))
            truth.append(curve[-1])
    return complete, stopped, np.array(truth)


def errors(family: str, seed: int) -> dict[str, float]:
    """Mean absolute error of each route's final values in one study."""
    complete, stopped, truth = study(family, seed)
    measured = measured_values(np.zeros(24), StoppedCurves(complete, stopped, np.arange(12, 24)))
    assert measured is not None
    kernel = fit_curve_kernel([*complete, *stopped])
    assert kernel is not None
    guesses = {
        "impute": impute_finals(complete, stopped),
        "curves": measured[0][12:],
        "decay alone": final_measurements(stopped, kernel, 20.0)[0],
        "last report": np.array([c[1][-1] for c in stopped]),
    }
    return {name: float(np.mean(np.abs(g - truth))) for name, g in guesses.items()}


def table(seeds: int) -> str:
    """The markdown table: mean (and standard error) of each route's error per family."""
    lines = [
        "| curves | " + " | ".join(ROUTES) + " | curves / impute |",
        "|---" * (len(ROUTES) + 2) + "|",
    ]
    for family in FAMILIES:
        runs = [errors(family, seed) for seed in range(seeds)]
        cells = []
        for route in ROUTES:
            values = np.array([r[route] for r in runs])
            se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
            cells.append(f"{values.mean():.4f} ± {se:.4f}")
        ratio = np.mean([r["curves"] for r in runs]) / np.mean([r["impute"] for r in runs])
        lines.append(f"| {family} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="write the report here")
    args = parser.parse_args(argv)
    report = (
        "# Final values of stopped trials read from learning curves\n\n"
        f"`python benchmarks/curve_measurements.py --seeds {args.seeds}`: mean absolute error "
        "of the stopped trials' final values (mean ± standard error over studies; see the "
        "script's docstring for the studies).\n\n## Mean absolute error\n\n"
        + table(args.seeds)
        + "\n"
    )
    print(report)
    if args.out is not None:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
