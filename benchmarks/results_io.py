"""Benchmark runs to and from CSV files: ``<prefix>_runs.csv`` (one row per trial) and
``<prefix>_run_summary.csv`` (one row per run: trials, final best, overrun, timings, logs)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from runner import Run
from runner import group_runs
from stats import overrun
from stats import started_after_budget


RUN_FIELDS = ("method", "seed", "trial", "cost", "cumcost", "value", "best")
SUMMARY_FIELDS = (
    "method",
    "seed",
    "n_trials",
    "final_best",
    "cumcost",
    "overrun",
    "started_after_budget",
    "not_complete",
    "suggest_s_mean",
    "suggest_s_max",
    "run_s",
    "n_log_warnings",
    "log_messages",
    "py_warnings",
    "error",
)


def write_csvs(runs: dict[str, list[Run]], budget: float, prefix: Path) -> None:
    with open(f"{prefix}_runs.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(RUN_FIELDS)
        for m, rs in runs.items():
            for r in rs:
                rows = zip(r.costs, r.cumcost, r.values, r.best, strict=True)
                for i, (c, cum, v, b) in enumerate(rows):
                    writer.writerow(
                        [
                            m,
                            r.seed,
                            i,
                            repr(float(c)),
                            repr(float(cum)),
                            repr(float(v)),
                            repr(float(b)),
                        ]
                    )
    with open(f"{prefix}_run_summary.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(SUMMARY_FIELDS)
        for m, rs in runs.items():
            for r in rs:
                sug = np.asarray(r.suggest_s)
                writer.writerow(
                    [
                        m,
                        r.seed,
                        len(r.costs),
                        repr(r.final_best),
                        repr(float(r.cumcost[-1])) if r.costs else "0.0",
                        repr(overrun(r, budget)),
                        started_after_budget(r, budget),
                        r.not_complete,
                        repr(float(sug.mean())) if len(sug) else "nan",
                        repr(float(sug.max())) if len(sug) else "nan",
                        repr(r.run_s),
                        len(r.log_messages),
                        " || ".join(r.log_messages),
                        " || ".join(r.py_warnings),
                        r.error,
                    ]
                )


def read_csvs(prefix: Path) -> dict[str, list[Run]]:
    """Runs back from the two CSV files (per-trial suggestion times are lost: their mean and
    max per run are kept, which is all the report uses)."""
    runs: dict[tuple[str, int], Run] = {}
    with open(f"{prefix}_run_summary.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            r = Run(row["method"], int(row["seed"]))
            n = int(row["n_trials"])
            mean, mx = float(row["suggest_s_mean"]), float(row["suggest_s_max"])
            # Keep the per-run mean exact and the max visible: n - 1 copies of a filler + max.
            r.suggest_s = [mx] + [(mean * n - mx) / (n - 1)] * (n - 1) if n > 1 else [mx]
            r.run_s = float(row["run_s"])
            r.not_complete = int(row["not_complete"])
            r.log_messages = [s for s in row["log_messages"].split(" || ") if s]
            r.py_warnings = [s for s in row["py_warnings"].split(" || ") if s]
            r.error = row["error"]
            runs[(r.method, r.seed)] = r
    with open(f"{prefix}_runs.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            r = runs[(row["method"], int(row["seed"]))]
            r.costs.append(float(row["cost"]))
            r.values.append(float(row["value"]))
    return group_runs(list(runs.values()))
