"""Fixed budgets against the runs without a budget, at equal spend (issue 27).

A run of the stopping rule has no budget (``budget=None``): its acquisition never cools (EI
per unit cost throughout) and the rollout plans over an unbounded remainder. Does that cost
regret? Each records run of ``benchmarks/stopping_threshold.py`` (the rule at a rate that never
fires, up to the cap) is cut where it had spent what the fixed-budget run of the same
(problem, seed) spent, and the best values found are compared:

    python -m benchmarks.stopping_equal_spend --out benchmarks/results/stopping_lbfgsb \
        [--report benchmarks/results/stopping_lbfgsb/equal_spend.md]

A trial of the records run counts if it started before its spend reached the fixed run's
total. Reads the cached runs only (no problem definitions, so no YAHPO environment needed).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
import sys

import numpy as np


if __package__ in (None, ""):
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import cache
from benchmarks.harness import report
from benchmarks.harness import stats
from benchmarks.harness.runner import Run


RECORDS_DIR = "rollout_budget=none,value_per_cost=1e-300"
"""The records runs' method folder (``stopping_threshold.records_policy``)."""

FIXED = ("0.5", "1", "2")


def best_at_spend(run: Run, spend: float) -> float:
    """The best value among the trials of ``run`` started before it had spent ``spend``."""
    values = np.asarray(run.values, dtype=float)[stats.spent_at_start(run.costs) < spend]
    return float(np.nanmin(values)) if np.isfinite(values).any() else float("nan")


def compare(fixed: Run, records: Run) -> int:
    """+1 if the fixed-budget run found a better (lower) value than the records run at the
    fixed run's spend, -1 if worse, 0 if equal."""
    mine = float(np.nanmin(np.asarray(fixed.values, dtype=float)))
    other = best_at_spend(records, float(sum(fixed.costs)))
    return int(np.sign(other - mine)) if np.isfinite(other) else 1


def tally(runs_root: Path, fixed_label: str) -> tuple[int, int, int]:
    """(fixed better, equal, fixed worse) over every (problem, seed) with both runs."""
    counts = [0, 0, 0]
    for path in cache.glob(runs_root, f"*-b{fixed_label}/rollout/seed*.csv"):
        problem = path.parent.parent.name.removesuffix(f"-b{fixed_label}")
        records_dir = Path(runs_root) / f"{problem}-cap3" / RECORDS_DIR
        fixed = cache.read_run(path)
        records = cache.read_run(records_dir / path.name)
        if fixed is None or records is None or fixed.error or records.error:
            continue
        counts[1 - compare(fixed, records)] += 1
    return counts[0], counts[1], counts[2]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, nargs="+", required=True, help="stopping folders")
    parser.add_argument("--report", type=Path, default=None)
    args = parser.parse_args(argv)
    lines = [
        "# Fixed budgets against the runs without a budget, at equal spend (issue 27)",
        "",
        "Command: `python -m benchmarks.stopping_equal_spend "
        + " ".join(sys.argv[1:] if argv is None else argv)
        + "`. Per (problem, seed): is the best value of the fixed-budget run better, equal or "
        "worse than that of the records run (no budget) cut at the same spend?",
        "",
    ]
    rows = [
        [f"`{folder}`", f"{label} B", *map(str, tally(folder / "runs", label))]
        for folder in args.out
        for label in FIXED
    ]
    header = ["folder", "fixed budget", "fixed better", "equal", "fixed worse"]
    lines += report.table(header, rows)
    report.print_and_write("\n".join(lines) + "\n", args.report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
