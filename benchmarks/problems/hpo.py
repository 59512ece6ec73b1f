"""Hyperparameter optimization problems of Lee et al. (UAI 2021, Section 6.2 and Figure 1).

Objective: validation classification error (minimize). Cost: the wall-clock seconds of
training plus predicting the validation set, timed around ``fit`` + ``predict`` with
``time.perf_counter`` and reported with ``report_cost`` (this is what ``CostRolloutSampler``
measures by default, less Optuna's own few milliseconds of bookkeeping; reporting it
explicitly charges every method, Optuna's samplers included, the same quantity). The data
split is fixed (``--split-seed``, default 0) and the models are seeded (``random_state=0``),
so the objective is deterministic and only the cost is noisy.

Search spaces (the paper's words -> scikit-learn 1.x; see ``benchmarks/README.md``):

KNN, 5-D (``KNeighborsClassifier(n_jobs=1)`` after a random projection):
  - "dimensionality reduction percentage" in [1e-6, 1] (log) -> ``reduction_fraction``;
    ``n_components = max(1, round(fraction * n_features))`` (on w2a, 300 features, every
    fraction below 1/600 gives one component: a plateau, as in the paper's space);
  - "type" {Gaussian, Random} -> ``GaussianRandomProjection`` or ``SparseRandomProjection``
    (scikit-learn's two random projections; ``random_state=0``, dense output);
  - "neighbor count" {1, ..., 256} -> ``n_neighbors`` (integer, linear: the paper marks only
    its continuous ranges as log-scaled);
  - "weight function" {Uniform, Distance} -> ``weights``;
  - "distance" {Minkowski, Cityblock, Cosine, Euclidean, L1, L2, Manhattan} -> ``metric``
    (minkowski with p=2 equals euclidean and l2; cityblock = l1 = manhattan: the paper's
    space has these duplicates and so does this one).

Decision tree, 3-D (``DecisionTreeClassifier(random_state=0)``):
  - "tree depth" {1, ..., 64} -> ``max_depth``;
  - "tree split threshold" [0.1, 1] (log) -> ``min_samples_split`` as a *fraction* of the
    training rows (a node splits only if it holds at least ``ceil(t * n_train)`` rows). This
    is the one scikit-learn parameter whose documented float domain, (0, 1], holds the
    paper's range. The other reading, ``min_impurity_decrease`` in [0.1, 1], forbids every
    split (binary Gini impurity is at most 0.5; w2a's root impurity is 0.06), a constant
    objective. Measured on w2a (40 random configurations): validation error 0.020 - 0.032
    with ``min_samples_split`` (majority-class error 0.031; depth still matters, since a
    0.1 threshold allows long chains of splits peeling a few rows off a large node).
    ``--split-mapping impurity`` switches to ``min_impurity_decrease = 0.1 * t**4`` (the
    log-linear remap of ``examples/random_forest_openml.py``: [0.1, 1] -> [1e-5, 0.1]);
  - "split feature size" [1e-3, 0.5] (log) -> ``max_features`` as a fraction of the
    features (scikit-learn takes ``max(1, int(f * n_features))``).

Random forest, 3-D (``RandomForestClassifier(random_state=0, n_jobs=1)``, other settings
default: bootstrap, ``max_features="sqrt"``):
  - "number of trees" {1, ..., 256} -> ``n_estimators``;
  - "tree depth" {1, ..., 64} -> ``max_depth``;
  - "tree split threshold" [0.1, 1] (log) -> ``min_samples_split`` fraction, as for trees.

Figure 1 also shows an MLP and an SVM, whose spaces the paper does not give; ours (runtime
variation only): MLP ``hidden`` units 1..256 (log) in ``layers`` 1..3, ``alpha`` [1e-6, 1]
(log), ``learning_rate_init`` [1e-5, 1e-1] (log), ``max_iter=100``; SVM (``SVC``) ``C``
[1e-3, 1e3] (log), ``gamma`` [1e-4, 10] (log), ``kernel`` {rbf, poly, sigmoid, linear},
``max_iter=100000``.

Budgets: the paper's 800 s (KNN), 15 s (DT), 15 s (RF) were sized for its machine. Ours are
scaled so that about 30-100 evaluations fit on a 2-core machine: the mean cost of random
configurations (``--runtime-variation``), times about 50: KNN 7 s, DT 0.75 s, RF 25 s on w2a,
KNN 1.3 s on a1a (``BUDGETS``; ``benchmarks/README.md`` has the measurements). Re-measure on
the machine of the full runs: ``python benchmarks/hpo.py --runtime-variation --models knn dt
rf --n-configs 50``.

Each run goes to its own fresh process (forkserver, one run per child), at most ``--jobs``
(default 1) at a time: parallel runs perturb each other's timings. Runs are ordered seed by
seed, all methods within a seed, so that slow drifts of the machine's load hit every method
alike; a random-search control (``random``) is always run in the same session (drop it with
``--no-control``).

Outputs (``--out``, default ``benchmarks/results``), prefix ``hpo_<problem>_<dataset>`` (with
``_smoke`` after ``--smoke``): ``_runs.csv``, ``_run_summary.csv`` (both rewritten after every
run; ``--resume`` continues a stopped session), ``_settings.json``, ``_params.csv`` (every
trial's parameters), ``_quality.md`` (the report of ``reports.report`` plus the table in the
paper's format: mean and std of the final validation error per method, with the paper's
numbers for KNN on a1a) and ``_quality.png``. ``--runtime-variation`` writes
``hpo_runtime_<dataset>[_smoke].csv/.md/.png`` (histograms of log10 runtime per model).

    python benchmarks/hpo.py --problem dt --dataset w2a --smoke
    python benchmarks/hpo.py --problem knn --dataset w2a --reps 50 [--methods ...] [--budget S]
    python benchmarks/hpo.py --problem knn --dataset a1a --methods ei eipu rollout2 rollout4
    python benchmarks/hpo.py --runtime-variation --dataset w2a [--n-configs 1000]
    python benchmarks/hpo.py --problem dt --dataset w2a --report-only
    python benchmarks/hpo.py --problem knn --dataset w2a --reps 50 --resume  # after a stop

Data: ``benchmarks/data.py`` (OpenML, or the LIBSVM files via ``--data-dir`` /
``COSTBO_DATA_DIR``).
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Callable
from collections.abc import Sequence
import csv
from dataclasses import dataclass
import gc
import json
import math
from pathlib import Path
import sys
import time
from typing import Any
import warnings


sys.path.insert(0, str(Path(__file__).resolve().parent))

import data
import figures
import numpy as np
import optuna
from registry import DEFAULT_METHODS
from registry import METHODS
import reports
import results_io
import runner
from runner import Run
import session
import stats


# Budgets in seconds: about 50x the mean cost (CPU time, i.e. idle wall-clock) of a random
# configuration, measured on a busy 2-core machine (see benchmarks/README.md); the paper's are
# 800, 15, 15 s on w2a (and 800 s for KNN on a1a).
BUDGETS = {("knn", "w2a"): 7.0, ("dt", "w2a"): 0.75, ("rf", "w2a"): 25.0, ("knn", "a1a"): 1.3}
PAPER_BUDGETS = {"knn": 800.0, "dt": 15.0, "rf": 15.0}
SMOKE_BUDGETS = {"knn": 0.4, "dt": 0.05, "rf": 1.0}
SMOKE_METHODS = ("rollout2", "random")
SMOKE_STARTUP = 3  # so that a smoke run reaches the models (plumbing, not a result)
DEFAULT_REPS = 50  # the paper's replications
SAFETY_TRIALS = 2000
CLOCKS = ("wall", "cpu")
PRELOAD = (  # imported once by the fork server, not in every run
    "sklearn.ensemble",
    "sklearn.neighbors",
    "sklearn.pipeline",
    "sklearn.random_projection",
    "sklearn.tree",
    "optuna.samplers",
)
METRICS = ("minkowski", "cityblock", "cosine", "euclidean", "l1", "l2", "manhattan")
PAPER_TABLE = {"ei": 0.140, "eipu": 0.139, "rollout2": 0.137, "rollout4": 0.131}  # KNN, a1a
PAPER_TABLE_SD = {"ei": 0.005, "eipu": 0.005, "rollout2": 0.004, "rollout4": 0.001}
PAPER_LABELS = {"ei": "EI", "eipu": "EIpu", "rollout2": "R2", "rollout4": "R4"}


# -- search spaces and models ------------------------------------------------------------


def _suggest_knn(trial: optuna.Trial) -> dict[str, Any]:
    return {
        "reduction_fraction": trial.suggest_float("reduction_fraction", 1e-6, 1.0, log=True),
        "projection": trial.suggest_categorical("projection", ["gaussian", "sparse"]),
        "n_neighbors": trial.suggest_int("n_neighbors", 1, 256),
        "weights": trial.suggest_categorical("weights", ["uniform", "distance"]),
        "metric": trial.suggest_categorical("metric", list(METRICS)),
    }


def _build_knn(p: dict[str, Any], n_features: int, split_mapping: str) -> Any:
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.random_projection import GaussianRandomProjection
    from sklearn.random_projection import SparseRandomProjection

    n_components = max(1, round(p["reduction_fraction"] * n_features))
    projector = (
        GaussianRandomProjection(n_components, random_state=0)
        if p["projection"] == "gaussian"
        else SparseRandomProjection(n_components, dense_output=True, random_state=0)
    )
    knn = KNeighborsClassifier(
        n_neighbors=p["n_neighbors"], weights=p["weights"], metric=p["metric"], n_jobs=1
    )
    return make_pipeline(projector, knn)


def split_kwargs(split_threshold: float, split_mapping: str) -> dict[str, float]:
    """The paper's "tree split threshold" t in [0.1, 1] as scikit-learn keyword arguments."""
    if split_mapping == "fraction":
        return {"min_samples_split": float(split_threshold)}
    if split_mapping == "impurity":
        return {"min_impurity_decrease": 0.1 * float(split_threshold) ** 4}
    raise ValueError(f"split_mapping must be 'fraction' or 'impurity', got {split_mapping!r}")


def _suggest_dt(trial: optuna.Trial) -> dict[str, Any]:
    return {
        "max_depth": trial.suggest_int("max_depth", 1, 64),
        "split_threshold": trial.suggest_float("split_threshold", 0.1, 1.0, log=True),
        "feature_fraction": trial.suggest_float("feature_fraction", 1e-3, 0.5, log=True),
    }


def _build_dt(p: dict[str, Any], n_features: int, split_mapping: str) -> Any:
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(
        max_depth=p["max_depth"],
        max_features=p["feature_fraction"],
        random_state=0,
        **split_kwargs(p["split_threshold"], split_mapping),
    )


def _suggest_rf(trial: optuna.Trial) -> dict[str, Any]:
    return {
        "n_estimators": trial.suggest_int("n_estimators", 1, 256),
        "max_depth": trial.suggest_int("max_depth", 1, 64),
        "split_threshold": trial.suggest_float("split_threshold", 0.1, 1.0, log=True),
    }


def _build_rf(p: dict[str, Any], n_features: int, split_mapping: str) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(
        n_estimators=p["n_estimators"],
        max_depth=p["max_depth"],
        random_state=0,
        n_jobs=1,
        **split_kwargs(p["split_threshold"], split_mapping),
    )


def _suggest_mlp(trial: optuna.Trial) -> dict[str, Any]:
    return {
        "hidden": trial.suggest_int("hidden", 1, 256, log=True),
        "layers": trial.suggest_int("layers", 1, 3),
        "alpha": trial.suggest_float("alpha", 1e-6, 1.0, log=True),
        "learning_rate_init": trial.suggest_float("learning_rate_init", 1e-5, 1e-1, log=True),
    }


def _build_mlp(p: dict[str, Any], n_features: int, split_mapping: str) -> Any:
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(
        hidden_layer_sizes=(p["hidden"],) * p["layers"],
        alpha=p["alpha"],
        learning_rate_init=p["learning_rate_init"],
        max_iter=100,
        random_state=0,
    )


def _suggest_svm(trial: optuna.Trial) -> dict[str, Any]:
    return {
        "C": trial.suggest_float("C", 1e-3, 1e3, log=True),
        "gamma": trial.suggest_float("gamma", 1e-4, 10.0, log=True),
        "kernel": trial.suggest_categorical("kernel", ["rbf", "poly", "sigmoid", "linear"]),
    }


def _build_svm(p: dict[str, Any], n_features: int, split_mapping: str) -> Any:
    from sklearn.svm import SVC

    return SVC(C=p["C"], gamma=p["gamma"], kernel=p["kernel"], max_iter=100_000)


@dataclass(frozen=True)
class Model:
    label: str
    suggest: Callable[[optuna.Trial], dict[str, Any]]
    build: Callable[[dict[str, Any], int, str], Any]


MODELS: dict[str, Model] = {
    "knn": Model("KNN", _suggest_knn, _build_knn),
    "mlp": Model("MLP", _suggest_mlp, _build_mlp),
    "svm": Model("SVM", _suggest_svm, _build_svm),
    "dt": Model("DT", _suggest_dt, _build_dt),
    "rf": Model("RF", _suggest_rf, _build_rf),
}
PROBLEMS = ("knn", "dt", "rf")  # the paper's HPO benchmarks


class HpoProblem:
    """One HPO problem on one dataset split, as ``runner.run_one`` sees it (picklable)."""

    cost_fn = None  # wall-clock costs: CostRolloutSampler models log(cost) with its GP

    def __init__(
        self,
        model: str,
        dataset: data.Dataset,
        split_mapping: str = "fraction",
        clock: str = "wall",
        n_startup: int | None = None,
    ):
        if model not in MODELS:
            raise ValueError(f"model must be one of {sorted(MODELS)}, got {model!r}")
        if clock not in CLOCKS:
            raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
        split_kwargs(0.5, split_mapping)  # validates
        self.model = model
        self.dataset = dataset
        self.split_mapping = split_mapping
        self.clock = clock
        self.costbo_options = {} if n_startup is None else {"n_startup_trials": n_startup}
        self.last_times = (math.nan, math.nan)  # (wall, cpu) seconds of the latest evaluate

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        return MODELS[self.model].suggest(trial)

    def evaluate(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[float, float]:
        """(validation error, seconds of fit + predict: wall-clock, or CPU time of this
        process with ``clock="cpu"``)."""
        d = self.dataset
        estimator = MODELS[self.model].build(params, d.n_features, self.split_mapping)
        # NOTE: no garbage collection inside the timed section (a full collection of the
        # sampler's garbage would be charged to this configuration); a gc.collect() before
        # it instead costs ~0.2 s per trial of unbilled time on a big heap.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence warnings of MLP/SVM, cosine on 0
                start, cpu_start = time.perf_counter(), time.process_time()
                estimator.fit(d.X_train, d.y_train)
                predicted = estimator.predict(d.X_valid)
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        finally:
            if was_enabled:
                gc.enable()
        self.last_times = (wall, cpu)
        error = float(np.mean(predicted != d.y_valid))
        return error, max(wall if self.clock == "wall" else cpu, 1e-6)


# -- report extras -----------------------------------------------------------------------


def paper_table(runs: dict[str, list[Run]], budget: float, problem: str, dataset: str) -> str:
    """Mean and std (ddof=1) over replications of the best validation error within the
    budget, one column per method, in the layout of the paper's Table 1 (EI, EIpu, R2, R4
    first); with the paper's numbers for KNN on a1a."""
    methods = [m for m in METHODS if m in runs]
    order = [m for m in PAPER_LABELS if m in methods] + [
        m for m in methods if m not in PAPER_LABELS
    ]
    at_budget = {
        m: np.array([stats.best_at(r, np.array([budget]))[0] for r in runs[m]]) for m in order
    }
    stats_ = {m: stats.mean_sd(at_budget[m]) for m in order}
    best = min((stats_[m][0] for m in order if math.isfinite(stats_[m][0])), default=math.nan)

    def cell(m: str, k: int) -> str:
        text = reports.fmt(stats_[m][k])
        return f"**{text}**" if k == 0 and stats_[m][0] == best else text

    header = [""] + [PAPER_LABELS.get(m, METHODS[m].label) for m in order]
    rows = [
        ["mean"] + [cell(m, 0) for m in order],
        ["std"] + [cell(m, 1) for m in order],
        ["runs"] + [str(int(np.sum(np.isfinite(at_budget[m])))) for m in order],
    ]
    lines = [
        "## Final validation error in the paper's format",
        "",
        "Best validation error among the trials within the budget (cumulative cost <= "
        f"{budget:g} s), mean and standard deviation (ddof=1) over the replications; lowest "
        "mean in bold.",
        "",
    ]
    if problem == "knn" and dataset == "a1a":
        rows.append(["paper mean"] + [reports.fmt(PAPER_TABLE.get(m, math.nan)) for m in order])
        rows.append(["paper std"] + [reports.fmt(PAPER_TABLE_SD.get(m, math.nan)) for m in order])
        lines[3:3] = [
            "Paper (Lee et al., UAI 2021, supplementary Table 1, KNN on OpenML a1a, budget "
            "800 s on their machine): EI 0.140 ± 0.005, EIpu 0.139 ± 0.005, R2 0.137 ± 0.004, "
            "R4 0.131 ± 0.001. Their data split is not given, so only the ordering and the "
            "spreads are comparable, not the levels.",
            "",
        ]
    return "\n".join(lines + reports.table(header, rows)) + "\n"


PARAMS_FIELDS = ("method", "seed", "trial", "cost", "value", "params")


def append_params(r: Run, path: Path) -> None:
    """Append one run's trials (cost, value, parameters as JSON) to the params CSV."""
    new = not path.is_file()
    with open(path, "a", newline="") as fh:
        writer = csv.writer(fh)
        if new:
            writer.writerow(PARAMS_FIELDS)
        for i, p in enumerate(r.params):
            writer.writerow(
                [r.method, r.seed, i, repr(r.costs[i]), repr(r.values[i]), json.dumps(p)]
            )


# -- runtime variation (paper Figure 1) --------------------------------------------------


def runtime_variation(
    dataset: data.Dataset,
    models: Sequence[str],
    n_configs: int,
    *,
    seed: int = 0,
    split_mapping: str = "fraction",
    progress: bool = True,
) -> list[dict[str, Any]]:
    """``n_configs`` random configurations per model (RandomSampler(seed)); one row each with
    the runtime (fit + predict seconds) and validation error. Configurations are interleaved
    across models (config i of every model, then i + 1) so that load drifts hit all alike."""
    problems = {m: HpoProblem(m, dataset, split_mapping) for m in models}
    studies = {
        m: optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed)) for m in models
    }
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    for i in range(n_configs):
        for m in models:
            trial = studies[m].ask()
            params = problems[m].suggest(trial)
            error, _ = problems[m].evaluate(params)
            wall, cpu = problems[m].last_times
            studies[m].tell(trial, error)
            rows.append(
                {
                    "model": m,
                    "config": i,
                    "seconds": wall,
                    "cpu_seconds": cpu,
                    "error": error,
                    "params": params,
                }
            )
        if progress and (i + 1) % max(1, n_configs // 10) == 0:
            print(f"[{i + 1}/{n_configs} configs, {time.perf_counter() - start:.0f}s]", flush=True)
    return rows


def runtime_report(rows: list[dict[str, Any]], dataset: data.Dataset, total_s: float) -> str:
    models = list(dict.fromkeys(r["model"] for r in rows))
    n = max((r["config"] for r in rows), default=-1) + 1
    out = [
        f"# Runtime variation of random configurations ({dataset.name}; paper Figure 1)",
        "",
        f"{n} random configurations per model (Optuna RandomSampler, seed 0), runtime = "
        f"wall-clock seconds of fit + predict (quantiles); CPU s = CPU time of the process "
        f"over the same section, which is what the wall-clock time would be on an idle "
        f"machine (single-threaded BLAS). {dataset.describe()}. " + reports.versions_line(total_s),
        "",
        "Budget guide: the HPO budgets are chosen so that about 30-100 evaluations fit; "
        "50x the mean random-configuration cost is in the last column (model-based "
        "methods drift towards cheaper or dearer regions, so the count varies); on a busy "
        "machine use the CPU column.",
        "",
    ]
    rows_md = []
    for m in models:
        s = np.array([r["seconds"] for r in rows if r["model"] == m])
        cpu = np.array([r["cpu_seconds"] for r in rows if r["model"] == m])
        e = np.array([r["error"] for r in rows if r["model"] == m])
        q = np.quantile(s, [0.0, 0.1, 0.5, 0.9, 1.0])
        rows_md.append(
            [MODELS[m].label, str(len(s))]
            + [f"{v:.4f}" for v in q]
            + [
                f"{np.mean(s):.4f}",
                f"{np.mean(cpu):.4f}",
                f"{q[4] / max(q[0], 1e-12):.0f}",
                f"{np.min(e):.4f}",
                f"{np.median(e):.4f}",
                f"{50 * np.mean(s):.2f}",
                f"{50 * np.mean(cpu):.2f}",
            ]
        )
    out += reports.table(
        [
            "model",
            "configs",
            "min s",
            "10% s",
            "median s",
            "90% s",
            "max s",
            "mean s",
            "mean CPU s",
            "max/min",
            "best error",
            "median error",
            "50 x mean s",
            "50 x mean CPU s",
        ],
        rows_md,
    )
    return "\n".join(out) + "\n"


def runtime_figure(rows: list[dict[str, Any]], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(models), figsize=(3.2 * len(models), 3.4), squeeze=False)
    for ax, m in zip(axes[0], models, strict=True):
        s = np.log10([r["seconds"] for r in rows if r["model"] == m])
        ax.hist(s, bins=min(40, max(5, len(s) // 10)), color="tab:blue", alpha=0.8)
        ax.set_title(MODELS[m].label)
        ax.set_xlabel("log10 runtime (s)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("configurations")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_runtime_csv(rows: list[dict[str, Any]], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(("model", "config", "seconds", "cpu_seconds", "error", "params"))
        for r in rows:
            writer.writerow(
                [
                    r["model"],
                    r["config"],
                    repr(r["seconds"]),
                    repr(r["cpu_seconds"]),
                    repr(r["error"]),
                    json.dumps(r["params"]),
                ]
            )


# -- main --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", choices=PROBLEMS, default="knn")
    parser.add_argument("--dataset", default="w2a", help="w2a (default), a1a, ...")
    parser.add_argument("--reps", type=int, default=DEFAULT_REPS, help="seeds 0..N-1 (50)")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=None)
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds (default: BUDGETS; smoke smaller)"
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="runs at a time (default 1; 0: in this process)"
    )
    parser.add_argument("--no-control", action="store_true", help="do not add random search")
    parser.add_argument(
        "--split-mapping",
        choices=("fraction", "impurity"),
        default="fraction",
        help="split threshold -> min_samples_split fraction (default) or min_impurity_decrease",
    )
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        default="wall",
        help="cost = wall-clock seconds (default, the paper's) or the process's CPU seconds",
    )
    parser.add_argument(
        "--n-startup",
        type=int,
        default=None,
        help="CostRolloutSampler startup trials (default: its own, 2 (d + 1); smoke: 3)",
    )
    parser.add_argument("--smoke", action="store_true", help="1 rep, tiny budget, smoke files")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--report-only", action="store_true", help="re-summarize saved CSVs")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs already in the CSVs (same settings), run only the missing ones",
    )
    parser.add_argument(
        "--runtime-variation", action="store_true", help="paper Figure 1 instead of a benchmark"
    )
    parser.add_argument(
        "--models", nargs="+", choices=list(MODELS), default=list(MODELS), help="for Figure 1"
    )
    parser.add_argument("--n-configs", type=int, default=1000, help="for Figure 1 (1000)")
    data.add_data_arguments(parser)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    smoke = "_smoke" if args.smoke else ""

    if args.runtime_variation:
        dataset = _load(args)
        n = 3 if args.smoke else args.n_configs
        print(f"{dataset.describe()}\n{n} random configurations of {args.models}", flush=True)
        start = time.perf_counter()
        rows = runtime_variation(dataset, args.models, n, split_mapping=args.split_mapping)
        total = time.perf_counter() - start
        prefix = args.out / f"hpo_runtime_{args.dataset}{smoke}"
        write_runtime_csv(rows, Path(f"{prefix}.csv"))
        png = Path(f"{prefix}.png")
        text = runtime_report(rows, dataset, total)
        if runtime_figure(rows, png, f"Runtime of {n} random configurations, {dataset.name}"):
            text += f"\n![log runtime histograms]({png.name})\n"
        Path(f"{prefix}.md").write_text(text)
        print(text)
        return

    budget = args.budget or (
        SMOKE_BUDGETS[args.problem] if args.smoke else default_budget(args.problem, args.dataset)
    )
    reps = 1 if args.smoke else args.reps
    methods = list(args.methods or (SMOKE_METHODS if args.smoke else DEFAULT_METHODS))
    if not args.no_control and "random" not in methods:
        methods.append("random")  # the same-session control
    prefix = args.out / f"hpo_{args.problem}_{args.dataset}{smoke}"
    if args.report_only and args.budget is None:
        budget = session.saved_budget(prefix) or budget

    total_s: float | None = None
    source = "(report only)"
    if args.report_only:
        runs = results_io.read_csvs(prefix)
    else:
        dataset = _load(args)
        source = dataset.describe()
        print(source, flush=True)
        n_startup = args.n_startup or (SMOKE_STARTUP if args.smoke else None)
        problem = HpoProblem(args.problem, dataset, args.split_mapping, args.clock, n_startup)
        tasks = runner.order_tasks(methods, range(reps), interleave=True)
        print(
            f"{len(tasks)} runs, {MODELS[args.problem].label} on {args.dataset}, budget "
            f"{budget:g} s, {args.jobs} at a time, each in its own process",
            flush=True,
        )
        params_path = Path(f"{prefix}_params.csv")
        if not args.resume:
            params_path.unlink(missing_ok=True)
        settings = {
            "problem": args.problem,
            "dataset": args.dataset,
            "split_mapping": args.split_mapping,
            "clock": args.clock,
            "n_startup": n_startup,
            "split_seed": args.split_seed,
            "valid_fraction": args.valid_fraction,
        }
        runs, total_s = session.run_session(
            tasks,
            budget,
            problem,
            prefix,
            settings=settings,
            jobs=args.jobs,
            resume=args.resume,
            fresh_process=True,
            preload=PRELOAD + (("torch",) if "gp" in methods else ()),
            safety_trials=SAFETY_TRIALS,
            on_run=lambda r: append_params(r, params_path),
        )

    n_reps = max(len(r) for r in runs.values())
    png = Path(f"{prefix}_quality.png")
    label = MODELS[args.problem].label
    has_figure = figures.figure(
        runs,
        budget,
        png,
        suptitle=f"{label} on {args.dataset}: budget {budget:g} s, {n_reps} replications",
        band="sd",
        value_label="best validation error so far",
        cost_label="cumulative cost (s of fit + predict)",
        cost_histogram=True,
    )
    intro = [
        f"{label} on {args.dataset}, validation classification error (minimize), cost = "
        f"wall-clock seconds of fit + predict, budget {budget:g} s (paper: "
        f"{PAPER_BUDGETS[args.problem]:g} s on its machine); {n_reps} replications per "
        f"method (seeds 0..{n_reps - 1}), the same seeds and data split for every method, "
        f"split threshold mapping {args.split_mapping!r}, clock {args.clock!r}. Runs ran "
        f"{args.jobs} at a time, each in a fresh process, seed by seed. A trial starts only "
        "while the finished trials have spent less than the budget.",
        f"Data: {source}",
        reports.versions_line(total_s, extra=f", jobs {args.jobs}"),
    ]
    text = reports.report(
        runs,
        budget,
        title=f"HPO: {label} on {args.dataset} (Lee et al., UAI 2021, Figure 5)",
        intro=intro,
        total_s=total_s,
        figure_name=png.name if has_figure else None,
        figure_band="SD",
        digits=4,
        extra_sections=[paper_table(runs, budget, args.problem, args.dataset)],
    )
    Path(f"{prefix}_quality.md").write_text(text)
    print()
    print(text)


def default_budget(problem: str, dataset: str) -> float:
    """The measured budget of (problem, dataset), else the problem's w2a one (with a note)."""
    if (problem, dataset) in BUDGETS:
        return BUDGETS[(problem, dataset)]
    print(
        f"note: no measured budget for {problem} on {dataset}; using its w2a budget "
        f"{BUDGETS[(problem, 'w2a')]:g} s (measure with --runtime-variation, set --budget)"
    )
    return BUDGETS[(problem, "w2a")]


def _load(args: argparse.Namespace) -> data.Dataset:
    try:
        return data.dataset_from_args(args.dataset, args)
    except data.DataUnavailableError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
