"""The benchmark figure: mean best-so-far against cumulative cost, per method (PNG)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from registry import METHODS
from registry import ROLLOUTS
from runner import Run
from stats import best_at


def figure(
    runs: dict[str, list[Run]],
    budget: float,
    path: Path,
    *,
    suptitle: str,
    optimum: float | None = None,
    grid_start: float | None = None,
    band: str = "se",
    value_label: str = "best value so far",
    cost_label: str = "cumulative cost",
    cost_histogram: bool = False,
) -> bool:
    """Mean best-so-far vs cumulative cost with a +-1 SE (or SD: ``band="sd"``) band on the
    left. On the right: the regret (best - ``optimum``) on a log scale when the optimum is
    known, or with ``cost_histogram`` the distribution of single-trial costs per method (where
    cost-aware methods spend: the paper's Figure 2, left). False if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
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
    for k, m in enumerate(m for m in METHODS if m in runs):
        curves = np.array([best_at(r, grid) for r in runs[m]])  # (S, G)
        ok = np.all(np.isfinite(curves), axis=0)
        x, curves = grid[ok], curves[:, ok]
        rollout = m in ROLLOUTS
        style = {
            "color": colors[k % len(colors)],
            "ls": "-" if rollout or m.startswith("ei") else "--",
            "lw": 2.2 if rollout else 1.4,
            "label": METHODS[m].label,
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
