"""The reports of the benchmarks: tables (Markdown and CSV) from cached runs.

Two reports over the same statistics (:mod:`benchmarks.harness.stats`):

- :func:`write_suite_report` (many problems): regret at the end and at half budget; per
  problem mean +- standard error over seeds; average ranks within each (problem, seed),
  averaged over seeds, then over problems (all, and per group); paired tests of a reference
  method against every other one, per problem, over the seeds both ran; the figure of
  median regret against cumulative cost;
- :func:`problem_report` (one problem, the paper reproductions): per-method summary, paired
  comparisons of reference methods against every other one (final best and best within half
  the budget), mean best-so-far on a cost grid, anomalies.

Paired verdicts ("better" / "worse") are those of :class:`~benchmarks.harness.stats.Paired`:
p < 0.05 in the two-sided Wilcoxon signed-rank test, the direction from the signed-rank
statistic (W- against W+), never from the mean difference.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
import csv
import dataclasses
from dataclasses import dataclass
import math
from pathlib import Path
import platform
import re
from typing import Any

import numpy as np

from benchmarks.harness import figures
from benchmarks.harness import stats
from benchmarks.harness.methods import label as method_label
from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import SCORINGS
from benchmarks.harness.runner import Run


POINTS = ("end", "half")
GROUP_LABELS = {"control": "controls"}


def _group_label(group: str) -> str:
    return GROUP_LABELS.get(group, group)


# -- scoring --------------------------------------------------------------------------------


@dataclass
class Scored:
    """One run with its regrets (raw values when the problem has no known optimum).

    On a noisy problem (issue 51) the regret is the noise-free value of the incumbent minus
    f*: ``final`` and ``half`` by ``study.best_trial`` (what the ranks and paired tests use:
    what a user deploys by default), ``final_rec`` and ``half_rec`` by the method's
    recommendation (``runner.Run.recommended``); nan on a problem without noise.
    """

    run: Run
    final: float
    half: float
    spent: float
    final_rec: float = math.nan
    half_rec: float = math.nan

    @property
    def noisy(self) -> bool:
        return bool(self.run.true_values)

    @property
    def n_trials(self) -> int:
        return len(self.run.costs)


def hv_regret_run(run: Run, problem: Problem) -> Run:
    """A copy of a multi-objective ``run`` whose ``values`` are, per trial, the normalized
    hypervolume regret of the front found so far (``stats.hv_regret_trace``: non-increasing,
    so the best-so-far of these values, which every aggregate and figure takes, is the regret
    of the front at that point)."""
    if problem.hv_star is None:
        raise ValueError(f"{problem.name} is not a multi-objective problem")
    trace = stats.hv_regret_trace(
        np.asarray(run.objectives, dtype=float).reshape(-1, problem.n_objectives),
        problem.reference_point,
        problem.hv_star,
    )
    return dataclasses.replace(run, values=[float(v) for v in trace])


def score(run: Run, problem: Problem) -> Scored:
    """The run's regrets; on a multi-objective problem (``problem.multi``) the normalized
    hypervolume regret at the end and at half budget (:func:`hv_regret_run`)."""
    if problem.multi:
        run = hv_regret_run(run, problem)
    offset = problem.f_star if problem.f_star is not None else 0.0
    half_budget = problem.budget / 2
    values = np.asarray(run.values, dtype=float)
    finite = values[np.isfinite(values)]
    regrets = [math.nan] * 4  # final, half, final_rec, half_rec
    if run.true_values:  # noisy: the noise-free value of the incumbent
        for j, scoring in enumerate(SCORINGS):
            incumbent = run.incumbent_true(scoring)
            regrets[2 * j] = stats.incumbent_within(run.costs, incumbent) - offset
            regrets[2 * j + 1] = stats.incumbent_within(run.costs, incumbent, half_budget) - offset
    else:
        regrets[0] = float(finite.min()) - offset if len(finite) else math.nan
        regrets[1] = stats.best_within(run.costs, run.values, half_budget) - offset
    if problem.f_star is not None:
        # Rounding of f* (a polished float) can leave -1e-16: regrets are >= 0 by definition.
        regrets = [max(v, 0.0) if not math.isnan(v) else v for v in regrets]
    final, half, final_rec, half_rec = regrets
    return Scored(run, final, half, float(np.sum(run.costs)), final_rec, half_rec)


def _regret(s: Scored, point: str, scoring: str = "best_trial") -> float:
    if scoring == "recommended":
        return s.final_rec if point == "end" else s.half_rec
    return s.final if point == "end" else s.half


# -- aggregates -----------------------------------------------------------------------------


def scopes(problems: Sequence[Problem]) -> list[str]:
    """The scopes of the aggregates: all problems, then each group (in order of appearance)."""
    return ["all", *dict.fromkeys(p.group for p in problems)]


def rank_tables(
    scored: dict[tuple[str, str, int], Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
    seeds: Sequence[int],
    scoring: str = "best_trial",
) -> tuple[dict[tuple[str, str, str], float], dict[str, int]]:
    """(problem, method, point) -> average rank over the complete seeds; problem -> number
    of complete seeds (every method ran). ``scoring``: a noisy problem's incumbent
    (:class:`Scored`)."""
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
                    stats.ranks_in_cell(
                        np.array(
                            [_regret(scored[(p.name, m, s)], point, scoring) for m in methods]
                        )
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
    out: dict[tuple[str, str, str], float] = {}
    for scope in scopes(problems):
        members = [p for p in problems if scope in ("all", p.group)]
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
    """One row per (problem, method, point): the reference against the method."""
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
                a = [_regret(scored[(p.name, reference, s)], point) for s in common]
                b = [_regret(scored[(p.name, m, s)], point) for s in common]
                t = stats.paired(a, b)
                rows.append(
                    {
                        "problem": p.name,
                        "group": p.group,
                        "point": point,
                        "reference": reference,
                        "method": m,
                        "n": t.n,
                        "mean_diff": t.mean_diff,
                        "p_value": t.p_value,
                        "wins": t.wins,
                        "ties": t.ties,
                        "losses": t.losses,
                        "median_diff": t.median_diff,
                        "w_plus": t.w_plus,
                        "w_minus": t.w_minus,
                        "verdict": t.verdict,
                    }
                )
    return rows


# -- formatting -----------------------------------------------------------------------------


def fmt_g(x: float | None, digits: int = 3) -> str:
    """Significant digits (``-`` for nan)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def fmt(x: float, digits: int = 3) -> str:
    """Fixed decimals (``-`` for nan)."""
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


def print_and_write(text: str, path: Path | None) -> None:
    """Print a small report and, if ``path`` is given, write it there (its folder made)."""
    print(text)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
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


def versions_line(total_s: float | None, extra: str = "") -> str:
    import optuna

    import optuna_costbo

    return (
        f"optuna {optuna.__version__}, optuna_costbo {optuna_costbo.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}{extra}"
        + (f"; total wall time {total_s / 60:.1f} min." if total_s is not None else ".")
    )


def seed_text(seeds: Sequence[int]) -> str:
    seeds = sorted(seeds)
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1]} ({len(seeds)})"
    return ", ".join(map(str, seeds))


def shorten(msg: str, n: int = 160) -> str:
    """A message with its numbers masked, so that repeats of one message count together."""
    msg = re.sub(r"Trial \d+", "Trial N", msg)
    msg = re.sub(r"-?\d+\.\d+(e[-+]?\d+)?", "#", msg)
    return msg if len(msg) <= n else msg[: n - 3] + "..."


# -- the suite report -----------------------------------------------------------------------


def verdict_counts(tests: list[dict[str, Any]], method: str, point: str) -> tuple[str, str]:
    """("better/same/worse" over problems, "W/T/L" over (problem, seed) pairs)."""
    mine = [r for r in tests if r["method"] == method and r["point"] == point]
    better = sum(r["verdict"] == "better" for r in mine)
    worse = sum(r["verdict"] == "worse" for r in mine)
    same = len(mine) - better - worse
    w = sum(r["wins"] for r in mine)
    t = sum(r["ties"] for r in mine)
    lo = sum(r["losses"] for r in mine)
    return f"{better}/{same}/{worse}", f"{w}/{t}/{lo}"


def write_suite_report(
    out: Path,
    scored: dict[tuple[str, str, int], Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
    seeds: Sequence[int],
    reference: str,
    *,
    skipped: dict[str, str],
    command: str,
    preamble: Sequence[str] = (),
) -> Path:
    """Write report.md, the CSVs and the figure under ``out``; the Markdown path."""
    out.mkdir(parents=True, exist_ok=True)
    per_problem, complete = rank_tables(scored, problems, methods, seeds)
    grouped = group_ranks(per_problem, problems, methods)
    tests = (
        paired_tests(scored, problems, methods, seeds, reference) if reference in methods else []
    )
    label = {m: method_label(m) for m in methods}
    scope_list = scopes(problems)
    groups = scope_list[1:]

    any_noisy = any(sc.noisy for sc in scored.values())
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
                        **(
                            {"final_regret_rec": sc.final_rec, "half_regret_rec": sc.half_rec}
                            if any_noisy
                            else {}
                        ),
                        "run_s": sc.run.run_s,
                        "suggest_s": sc.run.suggest_s,
                        "n_warnings": sc.run.n_warnings,
                        "capped": int(sc.run.capped),
                    }
                )
    write_csv(out / "runs_summary.csv", run_rows)

    summary_rows = [
        {
            **summary_row(p, m, mine),
            "half_median": float(np.nanmedian([x.half for x in mine])),
            "trials_median": float(np.median([x.n_trials for x in mine])),
            "run_s_mean": float(np.mean([x.run.run_s for x in mine])),
            **rank_fields(p, m, per_problem),
        }
        for p in problems
        for m in methods
        if (mine := [scored[(p.name, m, s)] for s in seeds if (p.name, m, s) in scored])
    ]
    write_csv(out / "problem_summary.csv", summary_rows)
    write_csv(out / "ranks.csv", rank_rows(grouped, scope_list, methods))
    write_csv(out / "wilcoxon.csv", tests)
    curve_rows = figures.suite_figure(out / "regret_vs_cost.png", scored, problems, methods, seeds)
    write_csv(out / "curves.csv", curve_rows)

    md: list[str] = ["# Cost-aware BO suite: results", ""]
    n_cells = sum(complete.values())
    md += [
        f"Command: `{command}`",
        "",
        *preamble,
        f"{len(problems)} problems, {len(methods)} methods, seeds {seed_text(seeds)}; "
        f"{len(scored)} runs; ranks over {n_cells} complete (problem, seed) cells "
        f"(every method ran): {', '.join(f'{k} {v}' for k, v in complete.items())}.",
        "",
    ]
    if skipped:
        md += ["Skipped methods:", ""] + [f"- `{m}`: {why}" for m, why in skipped.items()] + [""]

    counts = ", ".join(f"{sum(p.group == g for p in problems)} {_group_label(g)}" for g in groups)
    md += ["## Average rank (lower is better)", ""]
    md += [
        "Ranks within each (problem, seed) by regret, averaged over seeds, then over problems "
        f"({counts}). 1 = best of {len(methods)}.",
        "",
        "| method | "
        + " | ".join(f"{_group_label(scope)}, {point}" for scope in scope_list for point in POINTS)
        + " |",
        "|---" * (1 + 2 * len(scope_list)) + "|",
    ]
    order = sorted(
        methods,
        key=lambda m: (
            math.inf if math.isnan(grouped[("all", m, "end")]) else grouped[("all", m, "end")]
        ),
    )
    for m in order:
        cells = [fmt_g(grouped[(scope, m, point)], 3) for scope in scope_list for point in POINTS]
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
            + " | ".join(fmt_g(per_problem.get((p.name, m, "end"), math.nan), 3) for m in methods)
            + " |"
        )
    md.append("")

    if tests:
        md += [f"## Paired tests: `{reference}` against each method", ""]
        md += [
            "Wilcoxon signed-rank over seeds, per problem. Summary over problems: how many "
            f"problems `{reference}` is significantly better / not significantly different / "
            "significantly worse (p < 0.05; better or worse by the signed-rank statistic, "
            f"i.e. whether the differences where `{reference}` is lower (W-) or higher (W+) "
            "have the larger rank sum, not by the mean difference, which a few large "
            "differences can turn); total wins/ties/losses over (problem, seed) pairs.",
            "",
            "| method | end: better/same/worse | end: W/T/L "
            "| half: better/same/worse | half: W/T/L |",
            "|---|---|---|---|---|",
        ]
        for m in methods:
            if m == reference:
                continue
            cells = [c for point in POINTS for c in verdict_counts(tests, m, point)]
            md.append(f"| {label[m]} | " + " | ".join(cells) + " |")
        md.append("")
        for point in POINTS:
            md += [
                f"### Per problem, {'end of budget' if point == 'end' else 'half budget'}: "
                f"mean regret difference (`{reference}` minus other), p-value, W/T/L, "
                "verdict when p < 0.05",
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
                    star = "**" if r["p_value"] < stats.ALPHA else ""
                    verdict = f" {r['verdict']}" if r["verdict"] != "same" else ""
                    cells.append(
                        f"{star}{fmt_g(r['mean_diff'], 2)} (p {fmt_g(r['p_value'], 2)}){star} "
                        f"{r['wins']}/{r['ties']}/{r['losses']}{verdict}"
                    )
                md.append(f"| {p.name} | " + " | ".join(cells) + " |")
            md.append("")

    noisy = [
        p for p in problems if any(sc.noisy for (pn, _, _), sc in scored.items() if pn == p.name)
    ]
    if noisy:
        md += noisy_section(scored, noisy, methods, seeds, label)

    md += ["## Regret per problem: mean ± SE over seeds", ""]
    md += ["![median regret vs cost](regret_vs_cost.png)", ""]
    for p in problems:
        f_star = f"f* = {p.f_star:.6g}" if p.f_star is not None else "f* unknown (raw values)"
        md += [
            f"### {p.name} ({p.group})",
            "",
            f"{p.description}; budget {p.budget:g}; {f_star}; "
            f"BoTorch references' start-up 2(d+1) = {p.n_startup}."
            + (
                " Noisy: regret of the noise-free value of `study.best_trial` (the "
                "recommendation's: the section above)."
                if p in noisy
                else ""
            ),
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
                f"| {fmt_g(row['final_mean'])} ± {fmt_g(row['final_se'], 2)} "
                f"| {fmt_g(row['half_mean'])} ± {fmt_g(row['half_se'], 2)} "
                f"| {fmt_g(row['rank_end'], 3)} | {fmt_g(row['rank_half'], 3)} "
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


def noisy_section(
    scored: dict[tuple[str, str, int], Scored],
    problems: Sequence[Problem],
    methods: Sequence[str],
    seeds: Sequence[int],
    label: dict[str, str],
) -> list[str]:
    """The noisy problems' section: regrets by ``study.best_trial`` and by the
    recommendation, average ranks under each, and per method the paired test of the
    recommendation against ``study.best_trial`` (the same runs)."""
    md = ["## Noisy problems: `study.best_trial` and the recommendation", ""]
    md += [
        "Regret = noise-free value of the incumbent minus f*: of `study.best_trial` (lowest "
        "noisy observation; the ranks and paired tests above) and of the method's "
        "recommendation (`CostRolloutSampler`: the study user attr `cost_recommended_trial`, "
        "the complete trial with the best posterior mean; every other method: "
        "`study.best_trial`). Mean ± SE over seeds.",
        "",
        "| scoring | " + " | ".join(f"{label[m]}, {pt}" for m in methods for pt in POINTS) + " |",
        "|---" * (1 + 2 * len(methods)) + "|",
    ]
    for scoring in SCORINGS:
        ranks, _ = rank_tables(scored, problems, methods, seeds, scoring)
        cells = []
        for m in methods:
            for point in POINTS:
                vals = [ranks[(p.name, m, point)] for p in problems if (p.name, m, point) in ranks]
                cells.append(fmt_g(float(np.mean(vals)) if vals else math.nan, 3))
        md.append(f"| average rank by {scoring} | " + " | ".join(cells) + " |")
    md += [""]
    md += [
        "| problem | method | end, best_trial | end, recommended | half, best_trial "
        "| half, recommended | recommended vs best_trial, end: W/T/L (p) |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in problems:
        for m in methods:
            mine = [scored[(p.name, m, s)] for s in seeds if (p.name, m, s) in scored]
            if not mine:
                continue
            cells = [
                f"{fmt_g(mu)} ± {fmt_g(se, 2)}"
                for point in POINTS
                for scoring in SCORINGS
                for mu, se in [stats.mean_se([_regret(x, point, scoring) for x in mine])]
            ]
            t = stats.paired([x.final_rec for x in mine], [x.final for x in mine])
            verdict = f" {t.verdict}" if t.verdict != "same" else ""
            md.append(
                f"| {p.name} | {label[m]} | "
                + " | ".join(cells)
                + f" | {t.wins}/{t.ties}/{t.losses} ({fmt_p(t.p_value)}){verdict} |"
            )
    md.append("")
    return md


# -- the report of one problem (the paper reproductions) ------------------------------------


SUGGEST_NOTE = (
    "s / suggestion: wall time of the `suggest_*` calls of a trial (where Optuna calls the "
    "sampler), mean over all trials including the start-up ones; max in brackets."
)


def problem_report(
    runs: dict[str, list[Run]],
    problem: Problem,
    references: Sequence[str],
    *,
    title: str,
    intro: list[str],
    figure_name: str | None,
    failed: Sequence[Run] = (),
    suggest_note: str = SUGGEST_NOTE,
    grid_points: int = 11,
    digits: int = 3,
    extra_sections: list[str] | None = None,
    figure_band: str = "SE",
) -> str:
    """The Markdown report of one problem: ``runs`` is method -> runs sorted by seed.

    Per-method summary, paired comparisons of each of ``references`` against every other
    method (final best, best within half the budget), mean best-so-far on a cost grid,
    anomalies (failed runs, trials after the budget, what was logged).
    """
    budget = problem.budget
    methods = list(runs)
    label = {m: method_label(m) for m in methods}
    grid = np.linspace(0.0, budget, grid_points)
    half = budget / 2.0

    def final_best(r: Run) -> float:
        finite = [v for v in r.values if math.isfinite(v)]
        return min(finite) if finite else math.nan

    finals = {m: np.array([final_best(r) for r in runs[m]]) for m in methods}
    at_grid = {
        m: np.array([stats.best_on_grid(r.costs, r.values, grid) for r in runs[m]])
        for m in methods
    }  # (S, G)
    at_half = {
        m: np.array([stats.best_within(r.costs, r.values, half) for r in runs[m]]) for m in methods
    }
    at_budget = {m: at_grid[m][:, -1] for m in methods}

    out = [f"# {title}", ""]
    for paragraph in intro:
        out += [paragraph, ""]
    out += ["## Per method", "", suggest_note, ""]
    rows = []
    for m in methods:
        rs = runs[m]
        n_trials = sum(len(r.costs) for r in rs)
        sug_mean = sum(r.suggest_s for r in rs) / n_trials if n_trials else math.nan
        sug_max = max((float(r.meta.get("suggest_max_s", math.nan)) for r in rs), default=math.nan)
        overruns = [stats.overrun(r.costs, budget) for r in rs]
        rows.append(
            [
                label[m],
                str(len(rs)),
                pm(*stats.mean_se(finals[m]), digits),
                fmt(
                    float(np.nanmedian(finals[m])) if np.any(np.isfinite(finals[m])) else math.nan,
                    digits,
                ),
                pm(*stats.mean_se(at_budget[m]), digits),
                fmt(float(np.mean([len(r.costs) for r in rs])), 1),
                f"{sug_mean:.3f} ({sug_max:.2f})" if n_trials else "-",
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

    refs = [r for r in references if r in methods]
    for heading, data in (
        ("final best", finals),
        (f"best within cost {half:g} (half the budget)", at_half),
    ):
        out += [
            "",
            f"## Paired comparison: {heading}",
            "",
            "Difference = reference minus the other method over the same seeds (negative: "
            "the reference is lower); W/T/L = the reference's wins / ties / losses; p = "
            "two-sided Wilcoxon signed-rank test (ties dropped); verdict at p < 0.05 by the "
            "signed-rank statistic (W- against W+), not by the mean.",
            "",
        ]
        rows = []
        for k, r in enumerate(refs):
            for m in methods:
                if m == r or m in refs[:k]:
                    continue  # a pair of references is shown once
                seeds_r = {run.seed: i for i, run in enumerate(runs[r])}
                common = [
                    (seeds_r[run.seed], j) for j, run in enumerate(runs[m]) if run.seed in seeds_r
                ]
                t = stats.paired([data[r][i] for i, _ in common], [data[m][j] for _, j in common])
                rows.append(
                    [
                        label[r],
                        label[m],
                        str(t.n),
                        pm(t.mean_diff, t.se_diff, digits),
                        f"{t.wins}/{t.ties}/{t.losses}",
                        fmt_p(t.p_value),
                        t.verdict,
                    ]
                )
        out += table(
            ["reference", "vs", "pairs", "mean difference ± SE", "W/T/L", "p", "verdict"], rows
        )

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
    notes = [f"- {method_label(r.method)} seed {r.seed}: CRASHED: {r.error}" for r in failed]
    for m in methods:
        for r in runs[m]:
            where = f"{label[m]} seed {r.seed}"
            n_after = stats.started_after_budget(r.costs, budget)
            if n_after:
                notes.append(f"- {where}: {n_after} trial(s) started after the budget was spent")
            n_missing = sum(1 for v in r.values if not math.isfinite(v))
            if n_missing:
                notes.append(f"- {where}: {n_missing} trial(s) not COMPLETE")
        logs: Counter[str] = Counter()
        for r in runs[m]:
            for msg, count in r.meta.get("log_messages", {}).items():
                logs[shorten(msg)] += count
        n_runs = sum(1 for r in runs[m] if r.n_warnings)
        for msg, count in logs.most_common(5):
            notes.append(f"- {label[m]}: logged {count}x (in {n_runs} runs): `{msg}`")
        pyw: Counter[str] = Counter()
        for r in runs[m]:
            for msg, count in r.meta.get("py_warnings", {}).items():
                pyw[shorten(msg)] += count
        for msg, count in pyw.most_common(3):
            notes.append(f"- {label[m]}: Python warning {count}x: `{msg}`")
    out += notes or ["None: no crash, no trial after the budget, nothing logged."]
    if figure_name:
        out += ["", f"![best-so-far vs cumulative cost]({figure_name})"]
    return "\n".join(out) + "\n"


def summary_row(
    problem: Problem,
    method: str,
    mine: Sequence[Any],
) -> dict[str, Any]:
    """The fields every report's ``problem_summary.csv`` starts with for one (problem,
    method): its scored runs ``mine`` (one per seed) and their final and half-budget
    regrets."""
    fm, fse = stats.mean_se([x.final for x in mine])
    hm, hse = stats.mean_se([x.half for x in mine])
    return {
        "problem": problem.name,
        "group": problem.group,
        "method": method,
        "n_seeds": len(mine),
        "final_mean": fm,
        "final_se": fse,
        "final_median": float(np.nanmedian([x.final for x in mine])),
        "half_mean": hm,
        "half_se": hse,
    }


def rank_fields(
    problem: Problem, method: str, per_problem: dict[tuple[str, str, str], float]
) -> dict[str, float]:
    """The method's average rank within the problem at the end and at half budget."""
    return {
        "rank_end": per_problem.get((problem.name, method, "end"), math.nan),
        "rank_half": per_problem.get((problem.name, method, "half"), math.nan),
    }


def rank_rows(
    grouped: dict[tuple[str, str, str], float], scope_list: Sequence[str], methods: Sequence[str]
) -> list[dict[str, Any]]:
    """``ranks.csv``: the average rank of each method in each scope at each point."""
    return [
        {"scope": scope, "point": point, "method": m, "avg_rank": grouped[(scope, m, point)]}
        for scope in scope_list
        for point in POINTS
        for m in methods
    ]
