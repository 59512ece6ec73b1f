"""Draw docs/img/acquisitions.png: EI, EI per unit cost and the rollout on a 1-D toy problem.

The figure on the "Concepts" page. A 1-D objective has a shallow cheap basin (x ~ 0.25) and its
global minimum in the expensive region (x ~ 0.85); the cost grows as x^3. After five
observations, the script fits the package's own GP (``optuna_costbo._numerics.gp.fit.fit_gp``)
and evaluates, on a grid, expected improvement, EI per unit cost, and the rollout value
Lambda_h (``optuna_costbo._numerics.acquisition.rollout_values.rollout_values``, h = 3) for
two remaining budgets. EI and EIpu do not
depend on the budget; the rollout does: with little budget left it exploits the cheap basin, with
enough budget to follow up it pays for the expensive, unexplored region.

    python scripts/make_concepts_figure.py            # writes docs/img/acquisitions.png
    python scripts/make_concepts_figure.py --out x.png

Needs matplotlib (``pip install "optuna-costbo[plot]"``). The internals it calls are not public
API; if they change, update this script and redraw.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib


matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from optuna_costbo._numerics.acquisition.ei import ei as plain_ei
from optuna_costbo._numerics.acquisition.rollout_values import qmc_normals
from optuna_costbo._numerics.acquisition.rollout_values import rollout_values
from optuna_costbo._numerics.gp.fit import fit_gp


REPO = Path(__file__).resolve().parent.parent
HORIZON = 3
BUDGETS = (3.0, 10.0)  # remaining budget tau: small, then enough for an expensive step and more


def objective(x: np.ndarray) -> np.ndarray:  # (m,) -> (m,)
    """Cheap shallow basin at 0.25, expensive global minimum at 0.85."""
    return (
        -1.2 * np.exp(-(((x - 0.85) / 0.08) ** 2))
        - 0.6 * np.exp(-(((x - 0.25) / 0.12) ** 2))
        + 0.2 * x
    )


def cost(x: np.ndarray) -> np.ndarray:  # (m,) -> (m,)
    """From 0.2 at x = 0 to 5 at x = 1."""
    return 0.2 + 4.8 * x**3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "acquisitions.png")
    args = parser.parse_args()

    X = np.array([[0.05], [0.2], [0.4], [0.6], [0.78]])  # (n, 1)
    y = objective(X[:, 0])  # (n,)
    model = fit_gp(X, y, rng=np.random.default_rng(0))
    grid = np.linspace(0.0, 1.0, 201)[:, None]  # (m, 1)
    mean, var = model.predict(grid)  # (m,), (m,)
    cov = model.posterior_cov(grid)  # (m, m)
    best = float(y.min())
    c = cost(grid[:, 0])  # (m,)
    ei = plain_ei(mean, var, best)  # (m,)
    eipu = ei / c  # (m,)
    noise_var = model.hyper.noise_var * model.y_std**2
    normals = qmc_normals(256, HORIZON, 0)  # (N, h-1)
    rollouts = {
        tau: rollout_values(mean, cov, noise_var, best, len(grid), c, tau, HORIZON, normals)
        for tau in BUDGETS
    }  # each (m,), -inf where unaffordable

    x = grid[:, 0]
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(7.2, 5.6), sharex=True, gridspec_kw={"height_ratios": [1.1, 1.0]}
    )
    top.plot(x, objective(x), color="0.55", linestyle="--", label="objective (unknown)")
    sd = np.sqrt(var)
    top.plot(x, mean, color="C0", label="GP mean")
    top.fill_between(x, mean - 2 * sd, mean + 2 * sd, color="C0", alpha=0.15, label="±2 sd")
    top.scatter(X[:, 0], y, color="black", zorder=3, label="observations")
    top.set_ylabel("objective (minimize)")
    cost_ax = top.twinx()
    cost_ax.plot(x, c, color="C1", linewidth=2, label="cost c(x)")
    cost_ax.set_ylabel("cost", color="C1")
    cost_ax.tick_params(axis="y", colors="C1")
    handles = top.get_legend_handles_labels()[0] + cost_ax.get_legend_handles_labels()[0]
    top.set_ylim(-1.75, 0.5)  # room for the legend under the curves
    cost_ax.set_ylim(-1.9, 5.3)
    cost_ax.set_yticks([0, 1, 2, 3, 4, 5])
    top.legend(handles=handles, loc="lower center", fontsize=8, ncol=3)
    top.set_title("Where to evaluate next? Same model, different acquisitions")

    curves = [
        ("EI (ignores cost and budget)", ei, "C2", "-"),
        ("EI per unit cost", eipu, "C3", "-"),
    ]
    for tau, values in rollouts.items():
        style = ":" if tau == BUDGETS[0] else "-."
        curves.append((f"rollout h={HORIZON}, remaining budget {tau:g}", values, "C4", style))
    for label, values, color, style in curves:
        finite = np.isfinite(values)
        scaled = np.where(finite, values / np.max(values[finite]), np.nan)  # max = 1
        i = int(np.nanargmax(scaled))
        bottom.plot(x, scaled, color=color, linestyle=style, linewidth=2, label=label)
        bottom.axvline(x[i], color=color, linestyle=style, linewidth=1, alpha=0.7)
        bottom.scatter([x[i]], [1.0], color=color, marker="v", s=60, zorder=3)
    bottom.set_ylabel("acquisition / its max")
    bottom.set_xlabel("x")
    bottom.set_ylim(-0.05, 1.15)
    bottom.legend(loc="lower center", bbox_to_anchor=(0.55, 0.12), fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    for label, values, _, _ in curves:
        print(f"{label}: argmax x = {x[int(np.argmax(values))]:.3f}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
