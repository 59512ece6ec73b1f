"""Runtime variation of random configurations (Lee et al., UAI 2021, Figure 1).

``n`` random configurations of each model (``RandomSampler``, seed 0) on one dataset split:
the wall-clock seconds of fit + validation predict, the CPU seconds of the same section and
the validation error; histograms of log10 runtime per model. The models and spaces are those
of ``benchmarks.problems.hpo`` (KNN, DT, RF: the paper's; MLP, SVM: ours). Also the way to
size the HPO budgets (``hpo.BUDGETS``: about 50 x the mean cost of a random configuration).

    python -m benchmarks paper runtime --dataset w2a [--n-configs 1000] [--models knn dt]
    python -m benchmarks paper runtime --models knn dt rf --n-configs 50 --out DIR

Writes ``hpo_runtime_<dataset>[_smoke].csv/.md/.png`` under ``--out`` (default
``benchmarks/results``): one row per configuration (this is a sample of configurations, not
a budgeted run, so it is not in the run cache's format). Data: ``benchmarks.problems.data``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import csv
import json
from pathlib import Path
import time
from typing import Any

import numpy as np
import optuna

from benchmarks.harness import report
from benchmarks.problems import data
from benchmarks.problems import hpo


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
    evaluators = {m: hpo.HpoEvaluator(m, dataset, split_mapping) for m in models}
    studies = {
        m: optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed)) for m in models
    }
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    for i in range(n_configs):
        for m in models:
            trial = studies[m].ask()
            params = {p.name: p.suggest(trial) for p in hpo.MODELS[m].params}
            error, _ = evaluators[m](params)
            wall, cpu = evaluators[m].last_times
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
        f"machine (single-threaded BLAS). {dataset.describe()}. " + report.versions_line(total_s),
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
            [hpo.MODELS[m].label, str(len(s))]
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
    out += report.table(
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
        ax.set_title(hpo.MODELS[m].label)
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="w2a", help="w2a (default), a1a, ...")
    parser.add_argument("--models", nargs="+", choices=list(hpo.MODELS), default=list(hpo.MODELS))
    parser.add_argument("--n-configs", type=int, default=1000, help="per model (1000)")
    parser.add_argument("--split-mapping", choices=("fraction", "impurity"), default="fraction")
    parser.add_argument("--smoke", action="store_true", help="3 configurations, smoke files")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    data.add_data_arguments(parser)
    args = parser.parse_args(argv)
    try:
        dataset = data.dataset_from_args(args.dataset, args)
    except data.DataUnavailableError as exc:
        raise SystemExit(f"error: {exc}") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    n = 3 if args.smoke else args.n_configs
    print(f"{dataset.describe()}\n{n} random configurations of {args.models}", flush=True)
    start = time.perf_counter()
    rows = runtime_variation(dataset, args.models, n, split_mapping=args.split_mapping)
    total = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    prefix = args.out / f"hpo_runtime_{args.dataset}{'_smoke' if args.smoke else ''}"
    write_runtime_csv(rows, Path(f"{prefix}.csv"))
    png = Path(f"{prefix}.png")
    text = runtime_report(rows, dataset, total)
    if runtime_figure(rows, png, f"Runtime of {n} random configurations, {dataset.name}"):
        text += f"\n![log runtime histograms]({png.name})\n"
    Path(f"{prefix}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.runtime_variation
    from benchmarks import _preamble

    _preamble.forward("paper", "runtime")
