"""Cheap and expensive trials with the study's wall-clock as the budget, sampler included.

Live scikit-learn problems (bundled or generated data, no download): two whose trials take
about 5-60 ms and two whose trials take about 0.05-2 s. Each run gets a wall-clock budget for
the whole ``study.optimize`` (sampler, Optuna and objective); a trial counts if it finished
within the budget. Methods run interleaved, seed by seed (the order rotated per seed), so
that the load of a shared machine falls on all of them alike.

Printed per problem: mean final regret (best value of the run minus the best value any run
of that problem found), mean rank over seeds (1 = best; ties share), mean trials, and the
share of the wall-clock spent outside the objective (the sampler, plus Optuna's bookkeeping,
which is the same for all methods).

    pip install torch==2.13.0   # for GPSampler
    python benchmarks/cheap_trials.py [--seeds 10] [--problems sgd-digits tree-synth ...]

``--smoke``: one seed, small budgets, results written to ``*_smoke`` files.
``--budget-scale 3``: every budget three times as long (the expensive problems with 30 s).
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Callable
import csv
from dataclasses import dataclass
import math
from pathlib import Path
import sys
import time
from typing import Any
import warnings

import numpy as np
import optuna
from scipy.stats import rankdata

from optuna_costbo import CostRolloutSampler


optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")

RESULTS = Path(__file__).parent / "results"


@dataclass(frozen=True)
class Problem:
    """A live HPO problem: a space and a model whose fit time grows with its size."""

    name: str
    budget: float  # wall-clock seconds of the whole study
    kind: str  # "cheap" or "expensive"
    objective: Callable[[optuna.Trial], float]


def _digits() -> tuple[np.ndarray, ...]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    out: list[np.ndarray] = train_test_split(
        X / 16.0, y, test_size=0.3, random_state=0, stratify=y
    )
    return tuple(out)


def _synthetic(n: int, d: int) -> tuple[np.ndarray, ...]:
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=d // 2, flip_y=0.05, random_state=0
    )
    out: list[np.ndarray] = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    return tuple(out)


_FIT_SECONDS = [0.0]  # fit + score seconds of the current run (the objective's own time)


def _error(model: Any, data: tuple[np.ndarray, ...]) -> float:
    """Validation error; the fit and score time is added to ``_FIT_SECONDS``.

    Timed here, after the ``suggest_*`` calls: the sampler runs inside the first of them.
    """
    X_tr, X_va, y_tr, y_va = data
    start = time.perf_counter()
    model.fit(X_tr, y_tr)
    value = float(1.0 - model.score(X_va, y_va))
    _FIT_SECONDS[0] += time.perf_counter() - start
    return value


def make_problems(scale: float = 1.0) -> dict[str, Problem]:
    """The problems; ``scale`` multiplies the budgets (``--smoke``)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import SGDClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    digits = _digits()
    small = _synthetic(2000, 20)
    large = _synthetic(4000, 30)

    def sgd(trial: optuna.Trial) -> float:  # 5-60 ms: passes over 1258 x 64
        model = SGDClassifier(
            loss=trial.suggest_categorical("loss", ["hinge", "log_loss", "modified_huber"]),
            penalty="elasticnet",
            alpha=trial.suggest_float("alpha", 1e-7, 1.0, log=True),
            l1_ratio=trial.suggest_float("l1_ratio", 0.0, 1.0),
            max_iter=trial.suggest_int("max_iter", 1, 30),
            tol=None,
            random_state=0,
        )
        return _error(model, digits)

    def tree(trial: optuna.Trial) -> float:  # 3-40 ms
        model = DecisionTreeClassifier(
            max_depth=trial.suggest_int("max_depth", 1, 30),
            min_samples_leaf=trial.suggest_int("min_samples_leaf", 1, 64, log=True),
            max_features=trial.suggest_float("max_features", 0.05, 1.0),
            criterion=trial.suggest_categorical("criterion", ["gini", "entropy"]),
            random_state=0,
        )
        return _error(model, small)

    def hgb(trial: optuna.Trial) -> float:  # 0.05-2 s
        model = HistGradientBoostingClassifier(
            max_iter=trial.suggest_int("max_iter", 10, 200),
            learning_rate=trial.suggest_float("learning_rate", 0.01, 1.0, log=True),
            max_leaf_nodes=trial.suggest_int("max_leaf_nodes", 4, 64, log=True),
            l2_regularization=trial.suggest_float("l2", 1e-4, 10.0, log=True),
            early_stopping=False,
            random_state=0,
        )
        return _error(model, large)

    def mlp(trial: optuna.Trial) -> float:  # 0.05-1.5 s
        model = MLPClassifier(
            hidden_layer_sizes=(trial.suggest_int("hidden", 8, 256, log=True),),
            alpha=trial.suggest_float("alpha", 1e-6, 1.0, log=True),
            learning_rate_init=trial.suggest_float("lr", 1e-4, 1e-1, log=True),
            max_iter=trial.suggest_int("max_iter", 5, 100, log=True),
            random_state=0,
        )
        return _error(model, digits)

    problems = [
        Problem("sgd-digits", 3.0 * scale, "cheap", sgd),
        Problem("tree-synth", 3.0 * scale, "cheap", tree),
        Problem("hgb-synth", 10.0 * scale, "expensive", hgb),
        Problem("mlp-digits", 10.0 * scale, "expensive", mlp),
    ]
    return {p.name: p for p in problems}


def make_sampler(method: str, budget: float, seed: int) -> optuna.samplers.BaseSampler:
    if method == "costbo":
        return CostRolloutSampler(budget=budget, seed=seed)
    if method.startswith("costbo-acq-"):  # e.g. costbo-acq-eipu: another acquisition
        acquisition = method.removeprefix("costbo-acq-")
        return CostRolloutSampler(budget=budget, seed=seed, acquisition=acquisition)
    if method == "costbo-prefetch":  # the next suggestion computed while a trial runs
        return CostRolloutSampler(budget=budget, seed=seed, prefetch=True)
    if method == "costbo-uncharged":  # the previous default
        return CostRolloutSampler(budget=budget, seed=seed, charge_sampler_time=False)
    if method.startswith("costbo-share"):  # e.g. costbo-share0.1
        share = float(method.removeprefix("costbo-share"))
        return CostRolloutSampler(budget=budget, seed=seed, max_sampler_share=share)
    if method == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if method == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if method == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    raise ValueError(f"unknown method {method!r}")


def run(problem: Problem, method: str, seed: int) -> dict[str, Any]:
    """One study under a wall-clock budget; returns the run's summary row."""
    sampler = make_sampler(method, problem.budget, seed)
    study = optuna.create_study(sampler=sampler)
    _FIT_SECONDS[0] = 0.0
    finished: list[tuple[float, float]] = []  # (time since start at the end, value)
    start = time.perf_counter()

    def objective(trial: optuna.Trial) -> float:
        value = problem.objective(trial)
        finished.append((time.perf_counter() - start, value))
        return value

    def wall_clock(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if time.perf_counter() - start >= problem.budget:
            study.stop()

    study.optimize(objective, callbacks=[wall_clock])
    total = time.perf_counter() - start
    objective_seconds = _FIT_SECONDS[0]
    in_budget = [v for t, v in finished if t <= problem.budget]
    counts = (
        sampler._effort.counts(study._study_id)
        if isinstance(sampler, CostRolloutSampler)
        else {"full": -1, "quick": -1}
    )
    return {
        "problem": problem.name,
        "method": method,
        "seed": seed,
        "best": min(in_budget) if in_budget else math.inf,
        "n_trials": len(in_budget),
        # Everything outside the objective's fit and score: the sampler and Optuna's
        # bookkeeping, over the whole run (the last trial may end after the budget).
        "sampler_share": max(total - objective_seconds, 0.0) / total if total > 0 else 0.0,
        "objective_seconds": objective_seconds,
        "wall": total,
        "n_full": counts["full"],
        "n_quick": counts["quick"],
    }


def _routes(rows: list[dict[str, Any]]) -> str:
    full = [float(r["n_full"]) for r in rows]
    if min(full) < 0:
        return "-"
    return f"{np.mean(full):.0f} / {np.mean([float(r['n_quick']) for r in rows]):.0f}"


def report(rows: list[dict[str, Any]], methods: list[str]) -> str:
    lines = []
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    for name in problems:
        sub = [r for r in rows if r["problem"] == name]
        best = min(r["best"] for r in sub)
        seeds = sorted({r["seed"] for r in sub})
        ranks: dict[str, list[float]] = {m: [] for m in methods}
        for s in seeds:
            got = {r["method"]: r["best"] for r in sub if r["seed"] == s}
            if len(got) != len(methods):
                continue
            rk = rankdata([got[m] for m in methods])
            for m, k in zip(methods, rk, strict=True):
                ranks[m].append(float(k))
        lines.append(
            f"\n### {name} (budget {sub[0]['budget']:g} s wall-clock, {len(seeds)} seeds)\n"
        )
        lines.append(
            "| method | regret (mean) | regret (median) | rank (mean) | trials | sampler share "
            "| full / quick suggestions |"
        )
        lines.append("|---|---|---|---|---|---|---|")
        for m in methods:
            mine = [r for r in sub if r["method"] == m]
            if not mine:
                continue
            reg = np.array([r["best"] - best for r in mine])
            lines.append(
                f"| {m} | {reg.mean():.4f} | {np.median(reg):.4f} | "
                f"{np.mean(ranks[m]) if ranks[m] else float('nan'):.2f} | "
                f"{np.mean([r['n_trials'] for r in mine]):.0f} | "
                f"{100 * np.mean([r['sampler_share'] for r in mine]):.0f}% | {_routes(mine)} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument(
        "--methods", nargs="*", default=["costbo", "costbo-uncharged", "tpe", "random", "gp"]
    )
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--tag", default="cheap_trials")
    parser.add_argument(
        "--budget-scale", type=float, default=1.0, help="multiply every problem's budget"
    )
    args = parser.parse_args(argv)
    problems = make_problems(scale=(0.1 if args.smoke else 1.0) * args.budget_scale)
    names = args.problems or list(problems)
    seeds = range(args.first_seed, args.first_seed + (1 if args.smoke else args.seeds))
    tag = args.tag + ("_smoke" if args.smoke else "")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{tag}_runs.csv"

    # Warm up imports and first calls (torch, sklearn) outside any timed run.
    for method in args.methods:
        run(Problem("warm-up", 0.3, "cheap", problems[names[0]].objective), method, 0)

    rows: list[dict[str, Any]] = []
    methods = list(args.methods)
    for i, seed in enumerate(seeds):
        order = methods[i % len(methods) :] + methods[: i % len(methods)]
        for name in names:
            for method in order:
                row = run(problems[name], method, seed)
                row["budget"] = problems[name].budget
                row["load1"] = os.getloadavg()[0]
                rows.append(row)
                print(
                    f"seed {seed} {name:11s} {method:17s} best {row['best']:.4f} "
                    f"trials {row['n_trials']:4d} share {row['sampler_share']:.2f} "
                    f"load {row['load1']:.1f}",
                    file=sys.stderr,
                    flush=True,
                )
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    text = report(rows, methods)
    loads = [r["load1"] for r in rows]
    text += (
        f"\n\nLoad average (1 min) during the runs: mean {np.mean(loads):.1f}, "
        f"max {np.max(loads):.1f} on {os.cpu_count()} cores.\n"
    )
    (args.out / f"{tag}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
