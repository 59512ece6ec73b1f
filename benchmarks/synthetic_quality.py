"""Solution quality on the synthetic cost-constrained problem of Lee et al. (UAI 2021, Fig. 4).

The problem: x in [-1, 1]^2, r = ||x||_2, minimize f(x) = 10 r sin(2 pi r) under a cost
c(x) = 10 - 5 r per evaluation and a total budget of 150. The global minimum is
f = -7.6625 on the ring r = 0.782 (cost 6.09 there); the cost is largest at the centre.

Methods, each run with seeds 0..S-1 and the same budget:

- ``CostRolloutSampler`` with ``acquisition="ei"``, ``"eipu"``, ``"ei-cool"`` and ``"rollout"``
  with ``horizon=2`` and ``horizon=4`` (default ``n_samples`` and ``n_startup_trials``);
- Optuna's ``TPESampler``, ``GPSampler`` (needs torch) and ``RandomSampler``.

Budget rule, the same for every method: a trial starts only while the summed cost of the
finished trials is below the budget (so the last trial may overrun it). The objective reports
its cost with :func:`optuna_costbo.report_cost`. ``CostRolloutSampler`` is left to stop the
study by itself (``study.optimize`` without ``n_trials``, with a large safety cap); the run
is checked afterwards against the rule. Optuna's samplers are stopped by a callback.

Outputs (under ``--out``, default ``benchmarks/results``; ``--smoke`` writes
``synthetic_smoke_*`` instead so the full results are not overwritten):

- ``synthetic_runs.csv``: one row per trial (method, seed, trial, cost, cumcost, value, best);
- ``synthetic_run_summary.csv``: one row per run (trials, final best, overrun, timings, logs);
- ``synthetic_quality.md``: per-method summary, paired comparisons of rollout h=2 / h=4
  against every other method (Wilcoxon signed-rank test), mean best-so-far on a cost grid,
  and anything odd seen during the runs (warnings logged by the sampler, crashes, overruns);
- ``synthetic_quality.png`` (if matplotlib is installed): mean best-so-far vs cumulative cost
  with a +-1 standard error band, and beside it the regret (best - f*) on a log scale.

Runtime on 2 cores with ``--jobs 2``: ``--smoke`` takes about 10 s; the full run (30 seeds
x 8 methods = 240 runs of 25-27 trials) took 4.6 min on an idle machine and 6 min on a busy
one, most of it in the rollout runs (h=4 is the slowest, about 4 s per run). BLAS and torch
run single-threaded; ``--jobs`` worker processes run the (method, seed) pairs. Results are
deterministic for a given seed (only the timings vary). Note that with the smoke budget of 30
only 4-5 trials fit, fewer than the 6 quasi-random startup trials of ``CostRolloutSampler``:
the smoke run checks the plumbing, not the models.

    python benchmarks/synthetic_quality.py --smoke
    python benchmarks/synthetic_quality.py [--seeds 30] [--methods rollout2 ei] [--jobs 2]
    python benchmarks/synthetic_quality.py --report-only    # re-summarize saved CSVs
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections import Counter
from collections.abc import Callable
import concurrent.futures
import csv
from dataclasses import dataclass
from dataclasses import field
import logging
import math
from pathlib import Path
import platform
import re
import time
import traceback
import warnings

import numpy as np
import optuna
from scipy import stats

import optuna_costbo
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


BUDGET = 150.0
SMOKE_BUDGET = 30.0
GLOBAL_MIN = -7.662466812698264  # f at r = 0.781959
GRID_POINTS = 11  # table grid: 0, B/10, ..., B (cost 0 has no trial yet: shown as "-")
SAFETY_TRIALS = 1000  # cap for the self-stopping sampler; far above budget / min cost
TIE_TOL = 1e-9

# key -> (label, factory(budget, seed)); the order is the order of the tables.
METHODS: dict[str, tuple[str, Callable[[float, int], optuna.samplers.BaseSampler]]] = {
    "rollout2": (
        "rollout h=2",
        lambda b, s: CostRolloutSampler(b, acquisition="rollout", horizon=2, seed=s),
    ),
    "rollout4": (
        "rollout h=4",
        lambda b, s: CostRolloutSampler(b, acquisition="rollout", horizon=4, seed=s),
    ),
    "ei": ("EI", lambda b, s: CostRolloutSampler(b, acquisition="ei", seed=s)),
    "eipu": ("EIpu", lambda b, s: CostRolloutSampler(b, acquisition="eipu", seed=s)),
    "ei-cool": ("EI-cool", lambda b, s: CostRolloutSampler(b, acquisition="ei-cool", seed=s)),
    "tpe": ("Optuna TPE", lambda b, s: optuna.samplers.TPESampler(seed=s)),
    "gp": ("Optuna GP", lambda b, s: optuna.samplers.GPSampler(seed=s)),
    "random": ("Random", lambda b, s: optuna.samplers.RandomSampler(seed=s)),
}
ROLLOUTS = ("rollout2", "rollout4")
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


def problem(x0: float, x1: float) -> tuple[float, float]:
    """Objective f(x) = 10 r sin(2 pi r) and cost c(x) = 10 - 5 r, r = ||x||_2."""
    r = math.hypot(x0, x1)
    return 10.0 * r * math.sin(2.0 * math.pi * r), 10.0 - 5.0 * r


# -- one run ------------------------------------------------------------------------------


@dataclass
class Run:
    """One (method, seed) run: per-trial costs and values, timings and what was logged."""

    method: str
    seed: int
    costs: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)  # nan for a trial that did not complete
    suggest_s: list[float] = field(default_factory=list)
    run_s: float = 0.0
    not_complete: int = 0
    log_messages: list[str] = field(default_factory=list)
    py_warnings: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def cumcost(self) -> np.ndarray:
        return np.cumsum(np.asarray(self.costs, dtype=float))

    @property
    def best(self) -> np.ndarray:
        values = np.asarray(self.values, dtype=float)
        return (
            np.fmin.accumulate(np.where(np.isnan(values), np.inf, values))
            if len(values)
            else values
        )

    @property
    def final_best(self) -> float:
        best = self.best
        return float(best[-1]) if len(best) and np.isfinite(best[-1]) else math.nan


class _Collect(logging.Handler):
    """Keeps the messages of WARNING and above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def _init_worker() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.logging.disable_default_handler()
    try:
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    except (ImportError, RuntimeError):
        pass


def run_one(method: str, seed: int, budget: float) -> Run:
    """Run ``method`` with ``seed`` until the budget is spent (never raises: see ``error``)."""
    run = Run(method, seed)
    handler = _Collect()
    loggers = [logging.getLogger("optuna_costbo"), logging.getLogger("optuna")]
    for logger in loggers:
        logger.addHandler(handler)
    propagate = loggers[0].propagate
    loggers[0].propagate = False  # collected here, reported in the Markdown file
    spent = 0.0

    def objective(trial: optuna.Trial) -> float:
        start = time.perf_counter()
        x0 = trial.suggest_float("x0", -1.0, 1.0)
        x1 = trial.suggest_float("x1", -1.0, 1.0)
        run.suggest_s.append(time.perf_counter() - start)
        value, cost = problem(x0, x1)
        report_cost(trial, cost)
        return value

    def stop_at_budget(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        nonlocal spent
        spent += float(trial.user_attrs.get("cost", 0.0))
        if spent >= budget:
            study.stop()

    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sampler = METHODS[method][1](budget, seed)
            study = optuna.create_study(sampler=sampler)
            if isinstance(sampler, CostRolloutSampler):
                study.optimize(objective, n_trials=SAFETY_TRIALS)
            else:
                study.optimize(objective, n_trials=SAFETY_TRIALS, callbacks=[stop_at_budget])
        for trial in study.get_trials(deepcopy=False):
            run.costs.append(float(trial.user_attrs.get("cost", 0.0)))
            complete = trial.state == optuna.trial.TrialState.COMPLETE
            run.values.append(float(trial.value) if complete else math.nan)
            run.not_complete += not complete
        run.py_warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
    except Exception:
        run.error = traceback.format_exc(limit=4).strip().splitlines()[-1]
    finally:
        run.run_s = time.perf_counter() - start
        run.log_messages = handler.messages
        for logger in loggers:
            logger.removeHandler(handler)
        loggers[0].propagate = propagate
    return run


# -- statistics ---------------------------------------------------------------------------


def mean_se(a: np.ndarray) -> tuple[float, float]:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    if len(a) == 0:
        return math.nan, math.nan
    se = float(np.std(a, ddof=1) / math.sqrt(len(a))) if len(a) > 1 else math.nan
    return float(np.mean(a)), se


def best_at(run: Run, grid: np.ndarray) -> np.ndarray:
    """Best value among trials whose cumulative cost is <= each grid point (nan: none yet)."""
    cum, best = run.cumcost, run.best
    idx = np.searchsorted(cum, grid, side="right") - 1  # last trial within each grid point
    out = np.where(idx >= 0, best[np.maximum(idx, 0)] if len(best) else np.nan, np.nan)
    return np.where(np.isfinite(out), out, np.nan)


def overrun(run: Run, budget: float) -> float:
    cum = run.cumcost
    return float(max(cum[-1] - budget, 0.0)) if len(cum) else 0.0


def started_after_budget(run: Run, budget: float) -> int:
    """Trials that started although the finished trials had already spent the budget."""
    before = np.concatenate([[0.0], run.cumcost[:-1]])
    return int(np.sum(before >= budget))


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float, int, int, int, float, int]:
    """Mean and SE of a - b over pairs, wins/ties/losses of a (lower is better), Wilcoxon p."""
    ok = np.isfinite(a) & np.isfinite(b)
    d = a[ok] - b[ok]
    mean, se = mean_se(d)
    wins = int(np.sum(d < -TIE_TOL))
    losses = int(np.sum(d > TIE_TOL))
    ties = len(d) - wins - losses
    p = math.nan
    if wins + losses > 0:
        p = float(stats.wilcoxon(d[np.abs(d) > TIE_TOL]).pvalue)
    return mean, se, wins, ties, losses, p, len(d)


# -- report -------------------------------------------------------------------------------


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if not math.isfinite(x) else f"{x:.{digits}f}"


def _pm(mean: float, se: float) -> str:
    return f"{_fmt(mean)} ± {_fmt(se)}"


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "-"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def report(
    runs: dict[str, list[Run]], budget: float, total_s: float | None, figure: str | None
) -> str:
    """The Markdown report."""
    methods = [m for m in METHODS if m in runs]
    label = {m: METHODS[m][0] for m in methods}
    n_seeds = max(len(r) for r in runs.values())
    grid = np.linspace(0.0, budget, GRID_POINTS)
    half = budget / 2.0
    finals = {m: np.array([r.final_best for r in runs[m]]) for m in methods}
    at_grid = {m: np.array([best_at(r, grid) for r in runs[m]]) for m in methods}  # (S, G)
    at_half = {m: np.array([best_at(r, np.array([half]))[0] for r in runs[m]]) for m in methods}
    at_budget = {m: at_grid[m][:, -1] for m in methods}

    out = [
        "# Synthetic problem of Lee et al. (UAI 2021, Figure 4)",
        "",
        f"f(x) = 10 r sin(2 pi r), c(x) = 10 - 5 r, r = ||x||, x in [-1, 1]^2, budget {budget:g}; "
        f"{n_seeds} seeds per method (0..{n_seeds - 1}), the same seeds for every method. "
        f"Minimization; global minimum f* = {GLOBAL_MIN:.4f} (r = 0.782, cost 6.09). "
        "A trial starts only while the finished trials have spent less than the budget, so "
        "the last trial may overrun it: *final best* counts that trial, *best within budget* "
        "does not (best among trials whose cumulative cost is <= the budget).",
        "",
        f"optuna {optuna.__version__}, optuna_costbo {optuna_costbo.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}"
        + (f"; total wall time {total_s / 60:.1f} min." if total_s is not None else "."),
        "",
        "## Per method",
        "",
        "s / suggestion: wall time of the two `suggest_float` calls of a trial (where Optuna "
        "calls the sampler), mean over all trials including the startup ones; max in brackets.",
        "",
    ]
    rows = []
    for m in methods:
        rs = runs[m]
        sug = np.concatenate([r.suggest_s for r in rs]) if rs else np.empty(0)
        overruns = [overrun(r, budget) for r in rs]
        rows.append(
            [
                label[m],
                str(len(rs)),
                _pm(*mean_se(finals[m])),
                _fmt(float(np.nanmedian(finals[m]))),
                _pm(*mean_se(at_budget[m])),
                _fmt(float(np.mean([len(r.costs) for r in rs])), 1),
                f"{np.mean(sug):.3f} ({np.max(sug):.2f})" if len(sug) else "-",
                f"{_fmt(float(np.mean(overruns)), 2)} ({sum(o > 0 for o in overruns)})",
            ]
        )
    out += _table(
        [
            "method",
            "runs",
            "final best (mean ± SE)",
            "median",
            "best within budget (mean ± SE)",
            "trials (mean)",
            "s / suggestion",
            "overrun mean (runs)",
        ],
        rows,
    )

    for title, data in (
        ("final best", finals),
        (f"best within cost {half:g} (half the budget)", at_half),
    ):
        out += [
            "",
            f"## Paired comparison: {title}",
            "",
            "Difference = rollout minus the other method over the same seeds (negative: "
            "rollout better); W/T/L = rollout wins / ties / losses; p = two-sided Wilcoxon "
            "signed-rank test (scipy.stats.wilcoxon, ties dropped).",
            "",
        ]
        rows = []
        for r in (m for m in ROLLOUTS if m in methods):
            for m in methods:
                if m == r:
                    continue
                if r == "rollout4" and m == "rollout2":
                    continue  # already shown as rollout h=2 vs h=4
                mean, se, w, t, losses, p, n = paired(data[r], data[m])
                rows.append(
                    [label[r], label[m], str(n), _pm(mean, se), f"{w}/{t}/{losses}", _p(p)]
                )
        out += _table(["rollout", "vs", "pairs", "mean difference ± SE", "W/T/L", "p"], rows)

    out += [
        "",
        "## Mean best-so-far on a cost grid",
        "",
        "Best value among the trials whose cumulative cost is <= the grid point (a step "
        "function), averaged over seeds (SE in the figure). At cost 0 no trial has finished.",
        "",
    ]
    rows = []
    for m in methods:
        finite = np.isfinite(at_grid[m])
        counts = np.sum(finite, axis=0)
        means = np.sum(np.where(finite, at_grid[m], 0.0), axis=0) / np.maximum(counts, 1)
        rows.append(
            [label[m]]
            + [_fmt(float(v), 2) if c > 0 else "-" for v, c in zip(means, counts, strict=True)]
        )
    out += _table(["method"] + [f"{g:g}" for g in grid], rows)

    out += ["", "## Anomalies", ""]
    notes = []
    for m in methods:
        for r in runs[m]:
            where = f"{label[m]} seed {r.seed}"
            if r.error:
                notes.append(f"- {where}: CRASHED: {r.error}")
            n_after = started_after_budget(r, budget)
            if n_after:
                notes.append(f"- {where}: {n_after} trial(s) started after the budget was spent")
            if r.not_complete:
                notes.append(f"- {where}: {r.not_complete} trial(s) not COMPLETE")
        logs = Counter(_shorten(msg) for r in runs[m] for msg in r.log_messages)
        n_runs = sum(1 for r in runs[m] if r.log_messages)
        for msg, count in logs.most_common(5):
            notes.append(f"- {label[m]}: logged {count}x (in {n_runs} runs): `{msg}`")
        pyw = Counter(_shorten(w) for r in runs[m] for w in r.py_warnings)
        for msg, count in pyw.most_common(3):
            notes.append(f"- {label[m]}: Python warning {count}x: `{msg}`")
    out += notes or ["None: no crash, no trial after the budget, nothing logged."]
    if figure:
        out += ["", f"![best-so-far vs cumulative cost]({figure})"]
    return "\n".join(out) + "\n"


def _shorten(msg: str, n: int = 160) -> str:
    """A message with its numbers masked, so that repeats of one message count together."""
    msg = re.sub(r"Trial \d+", "Trial N", msg)
    msg = re.sub(r"-?\d+\.\d+(e[-+]?\d+)?", "#", msg)
    return msg if len(msg) <= n else msg[: n - 3] + "..."


def figure(runs: dict[str, list[Run]], budget: float, path: Path) -> bool:
    """Mean best-so-far vs cumulative cost with a +-1 SE band (left), and the same as the
    regret f_best - f* on a log scale (right), where the late differences are visible.
    False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    grid = np.linspace(budget / 15.0, budget, 300)  # the first trial costs at most 10
    fig, (ax, ax_log) = plt.subplots(1, 2, figsize=(13.0, 5.0))
    colors = plt.get_cmap("tab10").colors
    for k, m in enumerate(m for m in METHODS if m in runs):
        curves = np.array([best_at(r, grid) for r in runs[m]])  # (S, G)
        ok = np.all(np.isfinite(curves), axis=0)
        x, curves = grid[ok], curves[:, ok]
        rollout = m in ROLLOUTS
        style = {
            "color": colors[k % len(colors)],
            "ls": "-" if rollout or m.startswith("ei") else "--",
            "lw": 2.2 if rollout else 1.4,
            "label": METHODS[m][0],
        }
        for axis, data in ((ax, curves), (ax_log, curves - GLOBAL_MIN)):
            mean = np.mean(data, axis=0)
            axis.plot(x, mean, **style)
            if len(data) > 1:
                se = np.std(data, axis=0, ddof=1) / math.sqrt(len(data))
                low = mean - se if axis is ax else np.maximum(mean - se, mean * 0.05)
                axis.fill_between(x, low, mean + se, color=style["color"], alpha=0.12)
    ax.axhline(GLOBAL_MIN, color="k", lw=0.8, ls=":", label="global minimum")
    ax.set_ylabel("best value so far (mean ± SE)")
    ax_log.set_yscale("log")
    ax_log.set_ylabel("regret: best so far − f* (mean ± SE, log scale)")
    n = max(len(r) for r in runs.values())
    for axis in (ax, ax_log):
        axis.set_xlabel("cumulative cost")
        axis.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(f"f = 10 r sin(2πr), c = 10 − 5r on [−1, 1]², budget {budget:g}, {n} seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- files --------------------------------------------------------------------------------


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
    out: dict[str, list[Run]] = {}
    for (m, _), r in sorted(
        runs.items(), key=lambda kv: (list(METHODS).index(kv[0][0]), kv[0][1])
    ):
        out.setdefault(m, []).append(r)
    return out


# -- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=30, help="seeds 0..N-1 (default 30)")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--budget", type=float, default=None, help="default 150 (smoke: 30)")
    parser.add_argument("--smoke", action="store_true", help="1 seed, budget 30, smoke files")
    parser.add_argument(
        "--report-only", action="store_true", help="re-summarize the saved CSVs, run nothing"
    )
    args = parser.parse_args()
    seeds = 1 if args.smoke else args.seeds
    budget = args.budget or (SMOKE_BUDGET if args.smoke else BUDGET)
    stem = "synthetic_smoke" if args.smoke else "synthetic"
    args.out.mkdir(parents=True, exist_ok=True)
    prefix = args.out / stem

    total_s: float | None = None
    if args.report_only:
        runs = read_csvs(prefix)
    else:
        # Slowest methods first, so that the two workers finish together.
        tasks = [(m, s) for m in args.methods for s in range(seeds)]
        tasks.sort(key=lambda t: (-ROLLOUTS.index(t[0]) if t[0] in ROLLOUTS else 1, t[1]))
        print(f"{len(tasks)} runs, budget {budget:g}, {args.jobs} workers", flush=True)
        results: list[Run] = []
        start = time.perf_counter()
        with concurrent.futures.ProcessPoolExecutor(args.jobs, initializer=_init_worker) as pool:
            futures = [pool.submit(run_one, m, s, budget) for m, s in tasks]
            for k, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                r = fut.result()
                results.append(r)
                flag = f" ERROR {r.error}" if r.error else ""
                flag += f" ({len(r.log_messages)} log warnings)" if r.log_messages else ""
                print(
                    f"[{k}/{len(tasks)} {time.perf_counter() - start:6.0f}s] "
                    f"{METHODS[r.method][0]:<12} seed {r.seed:<3} trials {len(r.costs):<3} "
                    f"best {r.final_best:8.4f}  {r.run_s:6.1f}s{flag}",
                    flush=True,
                )
        total_s = time.perf_counter() - start
        runs = {}
        for m in METHODS:
            chosen = sorted((r for r in results if r.method == m), key=lambda r: r.seed)
            if chosen:
                runs[m] = chosen
        write_csvs(runs, budget, prefix)

    png = Path(f"{prefix}_quality.png")
    has_figure = figure(runs, budget, png)
    if not has_figure:
        print("matplotlib is not installed: no figure (pip install matplotlib)")
    text = report(runs, budget, total_s, png.name if has_figure else None)
    Path(f"{prefix}_quality.md").write_text(text)
    print()
    print(text)


if __name__ == "__main__":
    main()
