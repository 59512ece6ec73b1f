"""Runs with a pruner against runs without one, at equal spend (issue 24).

A run of the pruning benchmark ends when its budget is spent or at the trial cap
(``--max-trials``, 400). Where a pruner stops most trials at the first step, the cap comes
first: the run ends with budget left (lcbench 7593 with Median: 69 % of it spent), while the
run without a pruner spends all of it. "At the end" then compares unequal spends. This reads
each pair of runs of one (problem, seed) at the spend of the one that spent less:

    python -m benchmarks pruning equal-spend --out benchmarks/results/pruning/heldout-10 \
        --baseline rollout:horizon=2 --methods rollout+median rollout+hyperband \
        --problems ... --seeds 10 [--report FILE]

A trial counts if the cumulative cost up to and including it is within that spend (the rule of
the benchmark's half-budget score), and regrets are the benchmark's (minus the best known value,
``benchmarks/results/pruning/best_known.json``, at least 0). Reads the cached runs only; the
problem definitions load without the YAHPO environment.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
import math
from pathlib import Path
import sys

import numpy as np

from benchmarks import pruning
from benchmarks.harness import best_known
from benchmarks.harness import cache
from benchmarks.harness import methods as methods_mod
from benchmarks.harness import report
from benchmarks.harness import stats
from benchmarks.harness.runner import Run
from benchmarks.problems import stepped


@dataclass(frozen=True)
class Pair:
    """One (problem, seed): the run with a pruner and the one without, read at ``spend``."""

    seed: int
    spend: float  # the smaller of the two runs' total costs
    share: float  # spend / budget
    capped: bool  # the run with a pruner stopped at the trial cap
    mine: float  # its best COMPLETE value within spend
    base: float  # the baseline's


def best_at(run: Run, spend: float) -> float:
    """The best value of ``run`` among its trials whose cumulative cost is within ``spend``
    (nan if none; a pruned trial has no value)."""
    return stats.best_within(run.costs, run.values, spend)


def pair(run: Run, base: Run, budget: float, seed: int) -> Pair:
    """``run`` and ``base`` of one seed, each at the spend of the one that spent less."""
    spend = min(float(np.sum(run.costs)), float(np.sum(base.costs)))
    return Pair(
        seed=seed,
        spend=spend,
        share=spend / budget,
        capped=bool(run.capped),
        mine=best_at(run, spend),
        base=best_at(base, spend),
    )


def _fmt(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.3g}"


def regret(value: float, f_star: float | None) -> float:
    """The benchmark's regret of a best value (``report.score``): ``value - f*``, at least 0
    (a run can beat the calibration's best known value); the raw value when f* is unknown."""
    if f_star is None or math.isnan(value):
        return value
    return max(value - f_star, 0.0)


def table_rows(
    pairs: dict[tuple[str, str], list[Pair]], f_stars: dict[str, float | None]
) -> list[list[str]]:
    """Per (problem, method): pairs, capped runs, mean share of the budget, mean regrets at
    that spend, W/T/L of the method against the baseline, p, and the verdict."""
    rows = []
    for (problem, method), mine in pairs.items():
        f_star = f_stars[problem]
        a = [regret(p.mine, f_star) for p in mine]
        b = [regret(p.base, f_star) for p in mine]
        test = stats.paired(a, b)
        verdict = test.verdict if test.verdict != "same" else ""
        rows.append(
            [
                problem,
                methods_mod.label(method),
                str(len(mine)),
                str(sum(p.capped for p in mine)),
                f"{np.mean([p.share for p in mine]):.2f}",
                _fmt(float(np.mean(a))),
                _fmt(float(np.mean(b))),
                f"{test.wins}/{test.ties}/{test.losses}",
                f"{test.p_value:.2g}",
                verdict,
            ]
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="a pruning results folder")
    parser.add_argument("--baseline", default="rollout:horizon=2", help="the run without pruner")
    parser.add_argument("--methods", nargs="+", required=True, help="runs with a pruner")
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1")
    parser.add_argument("--max-trials", type=int, default=None, help="the runs' trial cap")
    parser.add_argument("--report", type=Path, default=None)
    args = parser.parse_args(argv)
    pairs: dict[tuple[str, str], list[Pair]] = {}
    f_stars: dict[str, float | None] = {}
    seeds = list(range(args.seeds))
    known = best_known.load(pruning.BEST_KNOWN)
    for name in args.problems:
        problem = stepped.get_problem(name, args.max_trials)
        f_stars[name] = best_known.rescored(problem, known).f_star
        valid, _, _ = cache.load_all(
            args.out / "runs", problem, [args.baseline, *args.methods], seeds
        )
        for method in args.methods:
            pairs[(name, method)] = [
                pair(valid[(method, s)], valid[(args.baseline, s)], problem.budget, s)
                for s in seeds
                if (method, s) in valid and (args.baseline, s) in valid
            ]
    lines = [
        "# With a pruner against without, at equal spend (issue 24)",
        "",
        "Command: `python -m benchmarks pruning equal-spend "
        + " ".join(sys.argv[1:] if argv is None else argv)
        + "`.",
        "",
        f"Each run with a pruner and the run of `{args.baseline}` with the same (problem, "
        "seed) are read at the spend of the one that spent less: the best COMPLETE trial "
        "among the trials whose cumulative cost is within it, as regret (the benchmark's: "
        "minus the best known value of `best_known.json`, at least 0). W/T/L: the run with "
        "a pruner lower / equal / higher; p: Wilcoxon signed-rank over the seeds, the "
        "verdict by the larger signed-rank sum when p < 0.05 (`benchmarks/harness/stats.py`).",
        "",
    ]
    header = [
        "problem",
        "method",
        "pairs",
        "capped",
        "spend / budget",
        "regret, with pruner",
        "regret, without",
        "W/T/L",
        "p",
        "verdict",
    ]
    lines += report.table(header, table_rows(pairs, f_stars))
    report.print_and_write("\n".join(lines) + "\n", args.report)
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.pruning_equal_spend
    from benchmarks import _preamble

    _preamble.forward("pruning", "equal-spend")
