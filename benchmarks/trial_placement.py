"""Where a method's trials go over the budget: how many start in each stretch of it, what they
cost, and the share within ``--near`` of the optimum (issue 25: the default against EIpu on
Branin with a cheap optimum).

    python -m benchmarks.suite.run --seeds 20 --methods rollout eipu --problems branin-cheap \
        --out benchmarks/results/branin_cheap_placement --jobs 1 --reference rollout
    python -m benchmarks.trial_placement --out benchmarks/results/branin_cheap_placement \
        --problem branin-cheap --methods rollout eipu \
        [--report benchmarks/results/branin_cheap_placement/placement.md]

Reads the suite's cached runs; f* and the budget come from the problem's definition.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
import sys
from typing import Any

import numpy as np


if __package__ in (None, ""):
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import cache
from benchmarks.harness import report
from benchmarks.harness import stats
from benchmarks.harness.runner import Run


STRETCHES = ((0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 0.9), (0.9, np.inf))
"""Stretches of the budget, by the cost spent when a trial started (the last one: the rest)."""


def placement(runs: Sequence[Run], budget: float, f_star: float, near: float) -> list[dict]:
    """Per stretch: trials started there per run, their mean cost, and the share of them with
    a value within ``near`` of ``f_star``."""
    rows: list[dict[str, Any]] = []
    for lo, hi in STRETCHES:
        counts, costs, close = [], [], []
        for run in runs:
            c = np.asarray(run.costs, dtype=float)  # (n,)
            v = np.asarray(run.values, dtype=float)  # (n,)
            started = stats.spent_at_start(c) / budget  # (n,)
            sel = (started >= lo) & (started < hi)
            counts.append(int(sel.sum()))
            costs += list(c[sel])
            close += list(v[sel] - f_star <= near)
        rows.append(
            {
                "lo": lo,
                "hi": hi,
                "trials_per_run": float(np.mean(counts)),
                "mean_cost": float(np.mean(costs)) if costs else float("nan"),
                "near_share": float(np.mean(close)) if close else float("nan"),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.problems.synthetic import SUITE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the suite's results folder")
    parser.add_argument("--problem", default="branin-cheap")
    parser.add_argument("--methods", nargs="+", default=["rollout", "eipu"])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--near", type=float, default=0.01)
    parser.add_argument("--report", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.problem not in SUITE:
        raise SystemExit(f"unknown problem {args.problem!r}; the suite's: {', '.join(SUITE)}")
    problem = SUITE[args.problem]
    if problem.f_star is None:
        raise SystemExit(f"{args.problem} has no known f*")
    lines = [
        f"# Where the trials go: {args.problem} (issue 25)",
        "",
        "Command: `python -m benchmarks.trial_placement "
        + " ".join(sys.argv[1:] if argv is None else argv)
        + f"`. Stretches of the budget by the cost spent when a trial started; near: within "
        f"{args.near:g} of f*.",
        "",
    ]
    rows = []
    for method in args.methods:
        valid, _, _ = cache.load_all(args.out / "runs", problem, [method], list(range(args.seeds)))
        runs = [valid[k] for k in sorted(valid)]
        for row in placement(runs, problem.budget, problem.f_star, args.near):
            hi = "end" if not np.isfinite(row["hi"]) else f"{100 * row['hi']:.0f}%"
            rows.append(
                [
                    method,
                    str(len(runs)),
                    f"{100 * row['lo']:.0f}%-{hi}",
                    f"{row['trials_per_run']:.1f}",
                    f"{row['mean_cost']:.2f}",
                    f"{100 * row['near_share']:.0f}%",
                ]
            )
    header = ["method", "runs", "stretch", "trials per run", "mean cost", "near f*"]
    lines += report.table(header, rows)
    report.print_and_write("\n".join(lines) + "\n", args.report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
