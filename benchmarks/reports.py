"""The Markdown report of a benchmark, and the formatting helpers the scripts share.

:func:`report`: per-method summary, paired comparisons of the rollouts against every other
method (final best, best within half the budget), mean best-so-far on a cost grid, anomalies
(crashes, trials after the budget, what was logged); :func:`table`, :func:`fmt`, :func:`pm`,
:func:`fmt_p`, :func:`versions_line` for the scripts' own tables.
"""

from __future__ import annotations

from collections import Counter
import math
import platform
import re

import numpy as np
import optuna
from registry import METHODS
from registry import ROLLOUTS
from runner import Run
from stats import best_at
from stats import mean_se
from stats import overrun
from stats import paired
from stats import started_after_budget

import optuna_costbo


def fmt(x: float, digits: int = 3) -> str:
    return "-" if not math.isfinite(x) else f"{x:.{digits}f}"


def pm(mean: float, se: float, digits: int = 3) -> str:
    return f"{fmt(mean, digits)} ± {fmt(se, digits)}"


def fmt_p(p: float) -> str:
    if not math.isfinite(p):
        return "-"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def versions_line(total_s: float | None, extra: str = "") -> str:
    return (
        f"optuna {optuna.__version__}, optuna_costbo {optuna_costbo.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}{extra}"
        + (f"; total wall time {total_s / 60:.1f} min." if total_s is not None else ".")
    )


SUGGEST_NOTE = (
    "s / suggestion: wall time of the `suggest_*` calls of a trial (where Optuna calls the "
    "sampler), mean over all trials including the startup ones; max in brackets."
)


def report(
    runs: dict[str, list[Run]],
    budget: float,
    *,
    title: str,
    intro: list[str],
    total_s: float | None,
    figure_name: str | None,
    suggest_note: str = SUGGEST_NOTE,
    grid_points: int = 11,
    digits: int = 3,
    extra_sections: list[str] | None = None,
    figure_band: str = "SE",
) -> str:
    """The Markdown report: per-method summary, paired comparisons of the rollouts against
    every other method (final best, best within half the budget), mean best-so-far on a cost
    grid, anomalies. ``intro``: paragraphs under the title (the last usually the versions)."""
    methods = [m for m in METHODS if m in runs]
    label = {m: METHODS[m].label for m in methods}
    grid = np.linspace(0.0, budget, grid_points)
    half = budget / 2.0
    finals = {m: np.array([r.final_best for r in runs[m]]) for m in methods}
    at_grid = {m: np.array([best_at(r, grid) for r in runs[m]]) for m in methods}  # (S, G)
    at_half = {m: np.array([best_at(r, np.array([half]))[0] for r in runs[m]]) for m in methods}
    at_budget = {m: at_grid[m][:, -1] for m in methods}

    out = [f"# {title}", ""]
    for paragraph in intro:
        out += [paragraph, ""]
    out += ["## Per method", "", suggest_note, ""]
    rows = []
    for m in methods:
        rs = runs[m]
        sug = np.concatenate([r.suggest_s for r in rs]) if rs else np.empty(0)
        overruns = [overrun(r, budget) for r in rs]
        rows.append(
            [
                label[m],
                str(len(rs)),
                pm(*mean_se(finals[m]), digits),
                fmt(
                    float(np.nanmedian(finals[m])) if np.any(np.isfinite(finals[m])) else math.nan,
                    digits,
                ),
                pm(*mean_se(at_budget[m]), digits),
                fmt(float(np.mean([len(r.costs) for r in rs])), 1),
                f"{np.mean(sug):.3f} ({np.max(sug):.2f})" if len(sug) else "-",
                f"{fmt(float(np.mean(overruns)), 2)} ({sum(o > 0 for o in overruns)})",
            ]
        )
    out += table(
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

    for heading, data in (
        ("final best", finals),
        (f"best within cost {half:g} (half the budget)", at_half),
    ):
        out += [
            "",
            f"## Paired comparison: {heading}",
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
                    [
                        label[r],
                        label[m],
                        str(n),
                        pm(mean, se, digits),
                        f"{w}/{t}/{losses}",
                        fmt_p(p),
                    ]
                )
        out += table(["rollout", "vs", "pairs", "mean difference ± SE", "W/T/L", "p"], rows)

    out += [
        "",
        "## Mean best-so-far on a cost grid",
        "",
        "Best value among the trials whose cumulative cost is <= the grid point (a step "
        f"function), averaged over seeds ({figure_band} in the figure). At cost 0 no trial has "
        "finished.",
        "",
    ]
    rows = []
    for m in methods:
        finite = np.isfinite(at_grid[m])
        counts = np.sum(finite, axis=0)
        means = np.sum(np.where(finite, at_grid[m], 0.0), axis=0) / np.maximum(counts, 1)
        rows.append(
            [label[m]]
            + [
                fmt(float(v), max(digits - 1, 2)) if c > 0 else "-"
                for v, c in zip(means, counts, strict=True)
            ]
        )
    out += table(["method"] + [f"{g:g}" for g in grid], rows)

    for section in extra_sections or []:
        out += ["", section.rstrip("\n")]

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
        logs = Counter(shorten(msg) for r in runs[m] for msg in r.log_messages)
        n_runs = sum(1 for r in runs[m] if r.log_messages)
        for msg, count in logs.most_common(5):
            notes.append(f"- {label[m]}: logged {count}x (in {n_runs} runs): `{msg}`")
        pyw = Counter(shorten(w) for r in runs[m] for w in r.py_warnings)
        for msg, count in pyw.most_common(3):
            notes.append(f"- {label[m]}: Python warning {count}x: `{msg}`")
    out += notes or ["None: no crash, no trial after the budget, nothing logged."]
    if figure_name:
        out += ["", f"![best-so-far vs cumulative cost]({figure_name})"]
    return "\n".join(out) + "\n"


def shorten(msg: str, n: int = 160) -> str:
    """A message with its numbers masked, so that repeats of one message count together."""
    msg = re.sub(r"Trial \d+", "Trial N", msg)
    msg = re.sub(r"-?\d+\.\d+(e[-+]?\d+)?", "#", msg)
    return msg if len(msg) <= n else msg[: n - 3] + "..."
