"""The figures (PNG, when matplotlib is installed) of the reports.

- :func:`suite_figure`: median regret against cumulative cost, one panel per problem (also
  the curves as CSV rows);
- :func:`problem_figure`: mean best-so-far against cumulative cost for one problem, with
  beside it the regret on a log scale (known optimum) or the distribution of single-trial
  costs per method.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from benchmarks.harness import stats
from benchmarks.harness.methods import resolve
from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import Run


if TYPE_CHECKING:
    from benchmarks.harness.report import Scored

GRID = 41
STYLES = {"ours": "-", "optuna": ":", "botorch": "--", "peer": "-."}


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def panel_grid(n: int, most_columns: int = 4) -> tuple[int, int, bool]:
    """``(rows, columns, legend_outside)`` for ``n`` problem panels: at most ``most_columns``
    a row and never more columns than panels (one problem gets one full-size panel, not a
    quarter of an empty row); the legend goes in the spare cells of the last row, or beside
    the panels when no cell is spare."""
    if n < 1:
        raise ValueError(f"a figure needs at least one panel, got {n}")
    ncols = min(most_columns, n)
    nrows = math.ceil(n / ncols)
    return nrows, ncols, nrows * ncols == n


def _curve(run: Run, grid: np.ndarray) -> np.ndarray:
    """The run's best-so-far at each grid cost, (len(grid),); on a noisy problem the
    noise-free value of ``study.best_trial`` instead (the lowest noisy observation would
    fall below f*)."""
    if run.true_values:
        incumbent = run.incumbent_true("best_trial")
        return np.array([stats.incumbent_within(run.costs, incumbent, g) for g in grid])
    return np.array([stats.best_within(run.costs, run.values, g) for g in grid])


def suite_figure(
    path: Path,
    scored: dict[tuple[str, str, int], Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
    seeds: Sequence[int],
) -> list[dict[str, Any]]:
    """Median regret vs cumulative cost per problem (PNG if matplotlib is there); the curves
    as CSV rows (problem, method, cost, median, q25, q75)."""
    rows: list[dict[str, Any]] = []
    curves: dict[tuple[str, str], np.ndarray] = {}
    for p in problems:
        offset = p.f_star if p.f_star is not None else 0.0
        grid = np.linspace(0.0, p.budget, GRID)
        for m in methods:
            runs = [scored[(p.name, m, s)].run for s in seeds if (p.name, m, s) in scored]
            if not runs:
                continue
            c = np.array([_curve(r, grid) - offset for r in runs])  # (runs, GRID)
            c = np.where(np.isnan(c), np.inf, c)
            med = np.median(c, axis=0)
            with np.errstate(invalid="ignore"):
                q25, q75 = np.quantile(c, [0.25, 0.75], axis=0)
            curves[(p.name, m)] = med
            for g, a, lo, hi in zip(grid, med, q25, q75, strict=True):
                rows.append(
                    {
                        "problem": p.name,
                        "method": m,
                        "cost": float(g),
                        "median": float(a),
                        "q25": float(lo),
                        "q75": float(hi),
                    }
                )
    plt = _pyplot()
    if plt is None:
        return rows
    nrows, ncols, legend_outside = panel_grid(len(problems))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.0 * nrows), squeeze=False)
    cmap = plt.get_cmap("tab20")
    for ax, p in zip(axes.flat, problems, strict=False):
        grid = np.linspace(0.0, p.budget, GRID)
        for j, m in enumerate(methods):
            if (p.name, m) not in curves:
                continue
            med = curves[(p.name, m)]
            y = np.where(np.isfinite(med), np.maximum(med, 1e-6), np.nan)
            method = resolve(m)
            ax.plot(grid, y, STYLES[method.family], color=cmap(j % 20), lw=1.3, label=method.label)
        ax.set_yscale("log")
        ax.set_title(f"{p.name} ({p.group[:3]})", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("cumulative cost", fontsize=7)
    for ax in list(axes.flat)[len(problems) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if legend_outside:
        fig.legend(
            handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8,
            frameon=False,
        )  # fmt: skip
    else:
        fig.legend(handles, labels, loc="lower right", fontsize=8, ncol=2, frameon=False)
    fig.suptitle(
        f"median regret (clipped at 1e-6) vs cumulative cost, {len(seeds)} seeds", fontsize=10
    )
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=70, bbox_inches="tight")  # tight: keeps a legend beside the panels
    plt.close(fig)
    return rows


def problem_figure(
    runs: dict[str, list[Run]],
    budget: float,
    path: Path,
    *,
    suptitle: str,
    references: Sequence[str] = (),
    optimum: float | None = None,
    grid_start: float | None = None,
    band: str = "se",
    value_label: str = "best value so far",
    cost_label: str = "cumulative cost",
    cost_histogram: bool = False,
) -> bool:
    """Mean best-so-far vs cumulative cost with a +-1 SE (or SD: ``band="sd"``) band on the
    left (``references`` drawn thicker). On the right: the regret (best - ``optimum``) on a
    log scale when the optimum is known, or with ``cost_histogram`` the distribution of
    single-trial costs per method (where cost-aware methods spend: the paper's Figure 2,
    left). False if matplotlib is missing."""
    plt = _pyplot()
    if plt is None:
        return False
    import matplotlib.ticker

    start = grid_start if grid_start is not None else budget / 100.0
    grid = np.linspace(start, budget, 300)
    second = optimum is not None or cost_histogram
    if second:
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13.0, 5.0))
    else:
        fig, ax = plt.subplots(1, 1, figsize=(7.5, 5.0))
        ax2 = None
    colors = plt.get_cmap("tab10").colors
    all_costs = np.concatenate([np.asarray(r.costs) for rs in runs.values() for r in rs] or [[]])
    positive = all_costs[all_costs > 0]
    bins = (
        np.logspace(np.log10(positive.min()), np.log10(positive.max()) + 1e-9, 30)
        if len(positive) > 1
        else None
    )
    for k, m in enumerate(runs):
        curves = np.array([stats.best_on_grid(r.costs, r.values, grid) for r in runs[m]])
        ok = np.all(np.isfinite(curves), axis=0)
        x, curves = grid[ok], curves[:, ok]
        thick = m in references
        method = resolve(m)
        style = {
            "color": colors[k % len(colors)],
            "ls": STYLES[method.family] if not thick else "-",
            "lw": 2.2 if thick else 1.4,
            "label": method.label,
        }
        panels = [(ax, curves)]
        if optimum is not None and ax2 is not None:
            panels.append((ax2, curves - optimum))
        for axis, data in panels:
            if data.shape[1] == 0:
                continue
            mean = np.mean(data, axis=0)
            axis.plot(x, mean, **style)
            if len(data) > 1:
                spread = np.std(data, axis=0, ddof=1)
                if band == "se":
                    spread = spread / math.sqrt(len(data))
                low = mean - spread if axis is ax else np.maximum(mean - spread, mean * 0.05)
                axis.fill_between(x, low, mean + spread, color=style["color"], alpha=0.12)
        if cost_histogram and optimum is None and ax2 is not None and bins is not None:
            costs = np.concatenate([np.asarray(r.costs) for r in runs[m]])
            ax2.hist(
                costs[costs > 0],
                bins=bins,
                histtype="step",
                lw=style["lw"],
                color=style["color"],
                ls=style["ls"],
                label=style["label"],
            )
    what = "SE" if band == "se" else "SD"
    if optimum is not None and ax2 is not None:
        ax.axhline(optimum, color="k", lw=0.8, ls=":", label="global minimum")
        ax2.set_yscale("log")
        ax2.set_ylabel(f"regret: best so far − f* (mean ± {what}, log scale)")
        ax2.set_xlabel(cost_label)
    elif ax2 is not None:
        ax2.set_xscale("log")
        ax2.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax2.set_xlabel("cost of one trial (log scale)")
        ax2.set_ylabel("trials (all seeds)")
        ax2.legend(fontsize=8)
    ax.set_ylabel(f"{value_label} (mean ± {what})")
    ax.set_xlabel(cost_label)
    for axis in (ax, ax2):
        if axis is not None:
            axis.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(suptitle)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
