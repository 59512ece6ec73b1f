"""Statistics, tables and the figure of the suite.

- regret of a run: best value found minus the known optimum; at the end (every trial the
  budget rule let start) and at half budget (the trials whose cumulative cost is <= B/2);
- per problem: mean +- standard error over seeds, median trials and run time;
- average ranks: within each (problem, seed) that every method ran, rank the methods by regret
  (ties share the mean rank; a run with no finite value ranks last), average over seeds, then
  over problems; at the end and at half budget; all problems, adversarial, controls;
- paired Wilcoxon signed-rank tests of a reference method against every other, per problem,
  over the seeds both ran: mean difference (reference minus other; negative: the reference is
  better), p-value (two-sided; 1 when every pair ties), wins / ties / losses of the reference;
- a figure of the median regret against cumulative cost, one panel per problem.
"""

from __future__ import annotations

from collections.abc import Sequence
import csv
from dataclasses import dataclass
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from benchmarks.suite.methods import Run
from benchmarks.suite.methods import resolve
from benchmarks.suite.problems import Problem


TIE_TOL = 1e-9
GRID = 41
POINTS = ("end", "half")


@dataclass
class Scored:
    """One run with its regrets."""

    run: Run
    final: float
    half: float
    spent: float

    @property
    def n_trials(self) -> int:
        return len(self.run.costs)


def best_up_to(run: Run, cost_limit: float) -> float:
    """Best value among trials whose cumulative cost is <= ``cost_limit`` (nan if none)."""
    costs = np.asarray(run.costs, dtype=float)
    values = np.asarray(run.values, dtype=float)
    ok = (np.cumsum(costs) <= cost_limit + 1e-12) & np.isfinite(values)
    return float(values[ok].min()) if ok.any() else math.nan


def score(run: Run, problem: Problem) -> Scored:
    values = np.asarray(run.values, dtype=float)
    finite = values[np.isfinite(values)]
    final = float(finite.min()) - problem.f_star if len(finite) else math.nan
    half = best_up_to(run, problem.budget / 2) - problem.f_star
    # Rounding of f* (a polished float) can leave -1e-16: regrets are >= 0 by definition.
    final, half = (max(v, 0.0) if not math.isnan(v) else v for v in (final, half))
    return Scored(run, final, half, float(np.sum(run.costs)))


def curve(run: Run, problem: Problem, grid: np.ndarray) -> np.ndarray:
    """Regret at each cumulative cost of ``grid`` (nan before the first trial), (len(grid),)."""
    return np.array([best_up_to(run, g) - problem.f_star for g in grid])


def _mean_se(x: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    if not len(a):
        return math.nan, math.nan
    se = float(a.std(ddof=1) / math.sqrt(len(a))) if len(a) > 1 else math.nan
    return float(a.mean()), se


def _regret(s: Scored, point: str) -> float:
    return s.final if point == "end" else s.half


def _ranks_in_cell(values: np.ndarray) -> np.ndarray:
    v = np.where(np.isfinite(values), values, np.inf)
    # Values within TIE_TOL (relative to the cell's scale) tie.
    scale = max(1.0, float(np.max(np.abs(v[np.isfinite(v)]))) if np.isfinite(v).any() else 1.0)
    keyed = np.where(np.isfinite(v), np.round(v / (TIE_TOL * scale)), np.inf)
    return stats.rankdata(keyed)


def rank_tables(
    scored: dict[tuple[str, str, int], Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
    seeds: Sequence[int],
) -> tuple[dict[tuple[str, str, str], float], dict[str, int]]:
    """(problem, method, point) -> average rank over the complete seeds; problem -> number
    of complete seeds."""
    out: dict[tuple[str, str, str], float] = {}
    complete: dict[str, int] = {}
    for p in problems:
        cells = [s for s in seeds if all((p.name, m, s) in scored for m in methods)]
        complete[p.name] = len(cells)
        for point in POINTS:
            if not cells:
                continue
            ranks = np.array(
                [
                    _ranks_in_cell(
                        np.array([_regret(scored[(p.name, m, s)], point) for m in methods])
                    )
                    for s in cells
                ]
            )  # (seeds, methods)
            for j, m in enumerate(methods):
                out[(p.name, m, point)] = float(ranks[:, j].mean())
    return out, complete


def group_ranks(
    per_problem: dict[tuple[str, str, str], float],
    problems: Sequence[Problem],
    methods: Sequence[str],
) -> dict[tuple[str, str, str], float]:
    """(scope, method, point) -> mean over the scope's problems of the average ranks."""
    scopes = {
        "all": [p for p in problems],
        "adversarial": [p for p in problems if p.group == "adversarial"],
        "control": [p for p in problems if p.group == "control"],
    }
    out: dict[tuple[str, str, str], float] = {}
    for scope, members in scopes.items():
        for point in POINTS:
            for m in methods:
                vals = [
                    per_problem[(p.name, m, point)]
                    for p in members
                    if (p.name, m, point) in per_problem
                ]
                out[(scope, m, point)] = float(np.mean(vals)) if vals else math.nan
    return out


def paired_tests(
    scored: dict[tuple[str, str, int], Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
    seeds: Sequence[int],
    reference: str,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for p in problems:
        for m in methods:
            if m == reference:
                continue
            for point in POINTS:
                common = [
                    s
                    for s in seeds
                    if (p.name, reference, s) in scored and (p.name, m, s) in scored
                ]
                if not common:
                    continue
                a = np.array([_regret(scored[(p.name, reference, s)], point) for s in common])
                b = np.array([_regret(scored[(p.name, m, s)], point) for s in common])
                a = np.where(np.isfinite(a), a, np.inf)
                b = np.where(np.isfinite(b), b, np.inf)
                with np.errstate(invalid="ignore"):
                    d = a - b
                d = np.where(np.isnan(d), 0.0, d)  # inf - inf: a tie
                scale = max(
                    1.0,
                    float(
                        np.max(
                            np.abs(np.concatenate([a, b])[np.isfinite(np.concatenate([a, b]))]),
                            initial=0.0,
                        )
                    ),
                )
                tol = TIE_TOL * scale
                wins = int(np.sum(d < -tol))
                losses = int(np.sum(d > tol))
                ties = len(d) - wins - losses
                if wins + losses == 0:
                    pval = 1.0
                else:
                    dd = np.where(np.abs(d) <= tol, 0.0, d)
                    dd = np.clip(dd, -1e300, 1e300)
                    pval = float(stats.wilcoxon(dd, zero_method="wilcox").pvalue)
                finite = np.isfinite(a) & np.isfinite(b)
                rows.append(
                    {
                        "problem": p.name,
                        "group": p.group,
                        "point": point,
                        "reference": reference,
                        "method": m,
                        "n": len(common),
                        "mean_diff": float(np.mean(d[finite])) if finite.any() else math.nan,
                        "p_value": pval,
                        "wins": wins,
                        "ties": ties,
                        "losses": losses,
                    }
                )
    return rows


# -- output ---------------------------------------------------------------------------------


def _fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        path.write_text("")
        return
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()}
            )


def figure(
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
        grid = np.linspace(0.0, p.budget, GRID)
        for m in methods:
            runs = [scored[(p.name, m, s)].run for s in seeds if (p.name, m, s) in scored]
            if not runs:
                continue
            c = np.array([curve(r, p, grid) for r in runs])  # (runs, GRID)
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
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return rows
    ncols = 4
    nrows = math.ceil(len(problems) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.0 * nrows), squeeze=False)
    cmap = plt.get_cmap("tab20")
    styles = {"costbo": "-", "optuna": ":", "botorch": "--"}
    for ax, p in zip(axes.flat, problems, strict=False):
        grid = np.linspace(0.0, p.budget, GRID)
        for j, m in enumerate(methods):
            if (p.name, m) not in curves:
                continue
            med = curves[(p.name, m)]
            y = np.where(np.isfinite(med), np.maximum(med, 1e-6), np.nan)
            ax.plot(
                grid,
                y,
                styles[resolve(m).family],
                color=cmap(j % 20),
                lw=1.3,
                label=resolve(m).label,
            )
        ax.set_yscale("log")
        ax.set_title(f"{p.name} ({p.group[:3]})", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("cumulative cost", fontsize=7)
    for ax in list(axes.flat)[len(problems) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower right", fontsize=8, ncol=2, frameon=False)
    fig.suptitle(
        f"median regret (clipped at 1e-6) vs cumulative cost, {len(seeds)} seeds", fontsize=10
    )
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=70)
    plt.close(fig)
    return rows


def write_report(
    out: Path,
    scored: dict[tuple[str, str, int], Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
    seeds: Sequence[int],
    reference: str,
    *,
    skipped: dict[str, str],
    command: str,
) -> Path:
    """Write report.md, the CSVs and the figure under ``out``; the Markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    per_problem, complete = rank_tables(scored, problems, methods, seeds)
    grouped = group_ranks(per_problem, problems, methods)
    tests = (
        paired_tests(scored, problems, methods, seeds, reference) if reference in methods else []
    )
    label = {m: resolve(m).label for m in methods}

    run_rows = []
    for p in problems:
        for m in methods:
            for s in seeds:
                sc = scored.get((p.name, m, s))
                if sc is None:
                    continue
                run_rows.append(
                    {
                        "problem": p.name,
                        "group": p.group,
                        "method": m,
                        "seed": s,
                        "n_trials": sc.n_trials,
                        "spent": sc.spent,
                        "final_regret": sc.final,
                        "half_regret": sc.half,
                        "run_s": sc.run.run_s,
                        "suggest_s": sc.run.suggest_s,
                        "n_warnings": sc.run.n_warnings,
                        "capped": int(sc.run.capped),
                    }
                )
    _write_csv(out / "runs_summary.csv", run_rows)

    summary_rows = []
    for p in problems:
        for m in methods:
            mine = [scored[(p.name, m, s)] for s in seeds if (p.name, m, s) in scored]
            if not mine:
                continue
            fm, fse = _mean_se([x.final for x in mine])
            hm, hse = _mean_se([x.half for x in mine])
            summary_rows.append(
                {
                    "problem": p.name,
                    "group": p.group,
                    "method": m,
                    "n_seeds": len(mine),
                    "final_mean": fm,
                    "final_se": fse,
                    "final_median": float(np.nanmedian([x.final for x in mine])),
                    "half_mean": hm,
                    "half_se": hse,
                    "half_median": float(np.nanmedian([x.half for x in mine])),
                    "trials_median": float(np.median([x.n_trials for x in mine])),
                    "run_s_mean": float(np.mean([x.run.run_s for x in mine])),
                    "rank_end": per_problem.get((p.name, m, "end"), math.nan),
                    "rank_half": per_problem.get((p.name, m, "half"), math.nan),
                }
            )
    _write_csv(out / "problem_summary.csv", summary_rows)
    _write_csv(
        out / "ranks.csv",
        [
            {"scope": scope, "point": point, "method": m, "avg_rank": grouped[(scope, m, point)]}
            for scope in ("all", "adversarial", "control")
            for point in POINTS
            for m in methods
        ],
    )
    _write_csv(out / "wilcoxon.csv", tests)
    curve_rows = figure(out / "regret_vs_cost.png", scored, problems, methods, seeds)
    _write_csv(out / "curves.csv", curve_rows)

    md: list[str] = ["# Cost-aware BO suite: results", ""]
    n_cells = sum(complete.values())
    md += [
        f"Command: `{command}`",
        "",
        f"{len(problems)} problems, {len(methods)} methods, seeds {_seed_text(seeds)}; "
        f"{len(scored)} runs; ranks over {n_cells} complete (problem, seed) cells "
        f"(every method ran): {', '.join(f'{k} {v}' for k, v in complete.items())}.",
        "",
    ]
    if skipped:
        md += ["Skipped methods:", ""] + [f"- `{m}`: {why}" for m, why in skipped.items()] + [""]

    md += ["## Average rank (lower is better)", ""]
    md += [
        "Ranks within each (problem, seed) by regret, averaged over seeds, then over problems "
        f"({sum(p.group == 'adversarial' for p in problems)} adversarial, "
        f"{sum(p.group == 'control' for p in problems)} controls). 1 = best of {len(methods)}.",
        "",
        "| method | all, end | all, half | adversarial, end | adversarial, half "
        "| controls, end | controls, half |",
        "|---|---|---|---|---|---|---|",
    ]
    order = sorted(
        methods,
        key=lambda m: (
            math.inf if math.isnan(grouped[("all", m, "end")]) else grouped[("all", m, "end")]
        ),
    )
    for m in order:
        cells = [
            _fmt(grouped[(scope, m, point)], 3)
            for scope in ("all", "adversarial", "control")
            for point in POINTS
        ]
        md.append(f"| {label[m]} | " + " | ".join(cells) + " |")
    md.append("")

    md += ["### Average rank per problem (end of budget)", ""]
    md += [
        "| problem | " + " | ".join(label[m] for m in methods) + " |",
        "|---" * (len(methods) + 1) + "|",
    ]
    for p in problems:
        md.append(
            f"| {p.name} | "
            + " | ".join(_fmt(per_problem.get((p.name, m, "end"), math.nan), 3) for m in methods)
            + " |"
        )
    md.append("")

    if tests:
        md += [f"## Paired tests: `{reference}` against each method", ""]
        md += [
            "Wilcoxon signed-rank over seeds, per problem. Summary over problems: how many "
            f"problems `{reference}` is significantly better (p < 0.05 and lower mean regret) / "
            "not significantly different / significantly worse; total wins/ties/losses over "
            "(problem, seed) pairs.",
            "",
            "| method | end: better/same/worse | end: W/T/L "
            "| half: better/same/worse | half: W/T/L |",
            "|---|---|---|---|---|",
        ]
        for m in methods:
            if m == reference:
                continue
            cells = []
            for point in POINTS:
                mine = [r for r in tests if r["method"] == m and r["point"] == point]
                better = sum(r["p_value"] < 0.05 and r["mean_diff"] < 0 for r in mine)
                worse = sum(r["p_value"] < 0.05 and r["mean_diff"] > 0 for r in mine)
                same = len(mine) - better - worse
                w = sum(r["wins"] for r in mine)
                t = sum(r["ties"] for r in mine)
                lo = sum(r["losses"] for r in mine)
                cells += [f"{better}/{same}/{worse}", f"{w}/{t}/{lo}"]
            md.append(f"| {label[m]} | " + " | ".join(cells) + " |")
        md.append("")
        for point in POINTS:
            md += [
                f"### Per problem, {'end of budget' if point == 'end' else 'half budget'}: "
                f"mean regret difference (`{reference}` minus other), p-value, W/T/L",
                "",
                "| problem | " + " | ".join(label[m] for m in methods if m != reference) + " |",
                "|---" * len(methods) + "|",
            ]
            for p in problems:
                cells = []
                for m in methods:
                    if m == reference:
                        continue
                    r = next(
                        (
                            r
                            for r in tests
                            if r["problem"] == p.name and r["method"] == m and r["point"] == point
                        ),
                        None,
                    )
                    if r is None:
                        cells.append("-")
                        continue
                    star = "**" if r["p_value"] < 0.05 else ""
                    cells.append(
                        f"{star}{_fmt(r['mean_diff'], 2)} (p {_fmt(r['p_value'], 2)}){star} "
                        f"{r['wins']}/{r['ties']}/{r['losses']}"
                    )
                md.append(f"| {p.name} | " + " | ".join(cells) + " |")
            md.append("")

    md += ["## Regret per problem: mean ± SE over seeds", ""]
    md += ["![median regret vs cost](regret_vs_cost.png)", ""]
    for p in problems:
        md += [
            f"### {p.name} ({p.group})",
            "",
            f"{p.description}; budget {p.budget:g}; f* = {p.f_star:.6g}; "
            f"start-up 2(d+1) = {p.n_startup}.",
            "",
            "| method | end regret | half-budget regret | rank end | rank half "
            "| trials (median) | s / run |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in summary_rows:
            if row["problem"] != p.name:
                continue
            md.append(
                f"| {label[row['method']]} "
                f"| {_fmt(row['final_mean'])} ± {_fmt(row['final_se'], 2)} "
                f"| {_fmt(row['half_mean'])} ± {_fmt(row['half_se'], 2)} "
                f"| {_fmt(row['rank_end'], 3)} | {_fmt(row['rank_half'], 3)} "
                f"| {row['trials_median']:g} | {row['run_s_mean']:.1f} |"
            )
        md.append("")

    md += ["## Time per run by method", ""]
    md += [
        "| method | mean s / run | max s / run | mean trials | total s |",
        "|---|---|---|---|---|",
    ]
    for m in methods:
        mine = [sc for (pn, mm, s), sc in scored.items() if mm == m]
        if not mine:
            continue
        t = [sc.run.run_s for sc in mine]
        md.append(
            f"| {label[m]} | {np.mean(t):.2f} | {np.max(t):.1f} | "
            f"{np.mean([sc.n_trials for sc in mine]):.1f} | {np.sum(t):.0f} |"
        )
    md.append("")
    odd = [
        f"- {k[0]} / {k[1]} / seed {k[2]}: "
        + ", ".join(
            x
            for x in (
                "hit the trial cap" if sc.run.capped else "",
                f"{sc.run.n_warnings} log warnings" if sc.run.n_warnings else "",
                "no finite value" if math.isnan(sc.final) else "",
            )
            if x
        )
        for k, sc in scored.items()
        if sc.run.capped or math.isnan(sc.final)
    ]
    warn_counts: dict[str, int] = {}
    for (_, m, _), sc in scored.items():
        if sc.run.n_warnings:
            warn_counts[m] = warn_counts.get(m, 0) + 1
    md += ["## Flags", ""]
    if warn_counts:
        md.append(
            "Runs with WARNING log records (optuna / optuna_costbo): "
            + ", ".join(f"{label[m]} {n}" for m, n in warn_counts.items())
            + "."
        )
        md.append("")
    md += odd[:40] if odd else ["No run hit the trial cap or ended without a finite value."]
    if len(odd) > 40:
        md.append(f"- ... and {len(odd) - 40} more (see runs_summary.csv, column capped)")
    md.append("")
    path = out / "report.md"
    path.write_text("\n".join(md))
    return path


def _seed_text(seeds: Sequence[int]) -> str:
    seeds = sorted(seeds)
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1]} ({len(seeds)})"
    return ", ".join(map(str, seeds))
