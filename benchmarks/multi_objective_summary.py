"""The multi-objective benchmark's summary (issue 52): ``python -m benchmarks suite
multi-summary [--dir DIR]``.

Reads what the suite wrote for each half and group (``DIR/<folder>/runs_summary.csv``: one
row per run with the normalized hypervolume regret at the end and at half budget; folders
``tuning`` and ``real-tuning`` for the tuning half, ``confirmation`` and
``real-confirmation`` for the confirmation half, those present) and the speed table
(``DIR/suggest_speed.md``), and writes ``DIR/report.md``: per half the average ranks among the
issue's five methods (the default and GPSampler, TPE, NSGA-II, Random) and among all methods
run, the paired verdicts of the default against each peer per problem, whether the issue's
"done when" holds, and the speed table.

``--variant DIR`` takes the default's runs from ``DIR`` (a changed default's folders, same
layout) and shows ``--dir``'s default beside them as ``ours, before``: how a change to the
default is judged against the committed runs of every peer
(``results/multi-objective/reference-point``); the report goes to ``DIR/report.md``.
``--before DIR2`` takes ``ours, before`` from ``DIR2`` (an earlier variant that became the
default) instead of ``--dir``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import csv
import gzip
import io
from pathlib import Path

import numpy as np

from benchmarks.harness import stats
from benchmarks.harness.methods import label


DEFAULT_DIR = Path(__file__).resolve().parent / "results" / "multi-objective"
HALVES = {
    "Tuning half": ("tuning", "real-tuning"),
    "Confirmation half": ("confirmation", "real-confirmation"),
}
"""Each half of the split and the folders of its groups' runs (``multi``, ``multi-real``)."""
DEFAULT = "rollout"
BEFORE = "rollout-before"
"""The name of the committed default's runs when a variant's runs take its place."""
PEERS = ("optuna-gp", "optuna-tpe", "optuna-nsga2", "random")
POINTS = {"end": "final_regret", "half": "half_regret"}


def _rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file, or of its gzipped copy ``<path>.gz`` (how it is committed)."""
    if path.is_file():
        text = path.read_text()
    else:
        text = gzip.decompress(path.with_name(path.name + ".gz").read_bytes()).decode()
    return list(csv.DictReader(io.StringIO(text)))


def _has_runs(folder: Path) -> bool:
    return any((folder / name).is_file() for name in ("runs_summary.csv", "runs_summary.csv.gz"))


def _table(
    rows: list[dict[str, str]],
) -> tuple[list[str], list[str], list[int], dict[tuple[str, str, int, str], float]]:
    """(problems, methods, seeds, (problem, method, seed, point) -> regret), in file order."""
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    seeds = sorted({int(r["seed"]) for r in rows})
    values = {
        (r["problem"], r["method"], int(r["seed"]), point): float(r[column])
        for r in rows
        for point, column in POINTS.items()
    }
    return problems, methods, seeds, values


def average_ranks(
    values: dict[tuple[str, str, int, str], float],
    problems: Sequence[str],
    methods: Sequence[str],
    seeds: Sequence[int],
    point: str,
) -> dict[str, float]:
    """Ranks within each complete (problem, seed) cell, averaged over seeds, then problems."""
    per_problem: dict[str, list[np.ndarray]] = {p: [] for p in problems}
    for p in problems:
        for s in seeds:
            cell = [values.get((p, m, s, point)) for m in methods]
            if all(v is not None for v in cell):
                per_problem[p].append(stats.ranks_in_cell(np.asarray(cell, dtype=float)))
    means = [np.mean(r, axis=0) for r in per_problem.values() if r]  # (m,) per problem
    if not means:
        return {m: float("nan") for m in methods}
    avg = np.mean(means, axis=0)
    return {m: float(avg[k]) for k, m in enumerate(methods)}


def _budgets() -> dict[str, float]:
    """Budget per problem of the groups ``multi`` and ``multi-real`` (definitions only)."""
    from benchmarks.problems.multi import multi_problems
    from benchmarks.problems.yahpo_multi import multi_real_problems

    problems = (*multi_problems().values(), *multi_real_problems().values())
    return {p.name: p.budget for p in problems}


def _label(method: str) -> str:
    return "ours, before (committed runs)" if method == BEFORE else label(method)


def half_section(
    name: str,
    folders: Sequence[Path],
    variant: Sequence[Path] = (),
    before: Sequence[Path] = (),
) -> tuple[list[str], dict[str, bool]]:
    """The Markdown of one half (the runs of ``folders``: one per group) and its "done when"
    checks; with ``variant`` (the same groups' folders of a changed default), its runs are the
    default's and the default's of ``before`` (else of ``folders``) are :data:`BEFORE`."""
    rows = [r for folder in folders for r in _rows(folder / "runs_summary.csv")]
    if variant:
        if before:
            rows = [r for r in rows if r["method"] != DEFAULT]
            rows += [r for folder in before for r in _rows(folder / "runs_summary.csv")]
        for r in rows:
            r["method"] = BEFORE if r["method"] == DEFAULT else r["method"]
        rows = [r for folder in variant for r in _rows(folder / "runs_summary.csv")] + rows
    problems, methods, seeds, values = _table(rows)
    group_of = {r["problem"]: r.get("group", "") for r in rows}
    groups = list(dict.fromkeys(group_of[p] for p in problems))
    five = [m for m in (DEFAULT, *PEERS) if m in methods]
    links = ", ".join(
        f"[`{f.name}/report.md`]({f.name}/report.md) ([figure]({f.name}/regret_vs_cost.png))"
        for f in folders
    )
    scopes = [("all", problems)] + (
        [(g, [p for p in problems if group_of[p] == g]) for g in groups] if len(groups) > 1 else []
    )
    lines = [f"## {name}", ""]
    lines += [
        f"Problems: {', '.join(f'`{p}` ({group_of[p]})' for p in problems)}; seeds "
        f"{seeds[0]}..{seeds[-1]} ({len(seeds)}). Reports: {links}.",
        "",
        "Average rank of the normalized hypervolume regret (1 = best) among the issue's five "
        "methods, over all the half's problems"
        + (" and over each group's" if len(scopes) > 1 else "")
        + ", then among every method run:",
        "",
        "| method | "
        + " | ".join(f"five, {scope}: {point}" for scope, _ in scopes for point in POINTS)
        + " | every method: end | every method: half |",
        "|---" * (2 * len(scopes) + 3) + "|",
    ]
    ranks = {
        (scope, point): average_ranks(values, chosen, five, seeds, point)
        for scope, chosen in scopes
        for point in POINTS
    }
    every = {point: average_ranks(values, problems, methods, seeds, point) for point in POINTS}
    for m in methods:
        cells = [
            f"{ranks[(scope, point)][m]:.2f}" if m in ranks[(scope, point)] else "-"
            for scope, _ in scopes
            for point in POINTS
        ]
        cells += [f"{every[point][m]:.2f}" for point in POINTS]
        lines.append(f"| {_label(m)} | " + " | ".join(cells) + " |")
    lines += ["", "Mean normalized hypervolume regret per problem (end / half):", ""]
    lines += ["| problem | " + " | ".join(_label(m) for m in methods) + " |"]
    lines += ["|---" * (len(methods) + 1) + "|"]
    for p in problems:
        cells = []
        for m in methods:
            ends = [values[(p, m, s, "end")] for s in seeds if (p, m, s, "end") in values]
            halves = [values[(p, m, s, "half")] for s in seeds if (p, m, s, "half") in values]
            cells.append(f"{np.mean(ends):.3f} / {np.mean(halves):.3f}" if ends else "-")
        lines.append(f"| `{p}` | " + " | ".join(cells) + " |")
    budgets = _budgets()
    lines += [
        "",
        "What the runs bought: median trials, median share of the budget spent, runs stopped "
        "by the 60-trial cap:",
        "",
        "| problem | " + " | ".join(_label(m) for m in methods) + " |",
        "|---" * (len(methods) + 1) + "|",
    ]
    for p in problems:
        cells = []
        for m in methods:
            mine = [r for r in rows if r["problem"] == p and r["method"] == m]
            if not mine:
                cells.append("-")
                continue
            trials = float(np.median([float(r["n_trials"]) for r in mine]))
            share = (
                f"{np.median([float(r['spent']) for r in mine]) / budgets[p]:.0%}"
                if p in budgets
                else "?"
            )
            capped = sum(int(r["capped"]) for r in mine)
            cells.append(f"{trials:g} / {share} / {capped}")
        lines.append(f"| `{p}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Paired tests of the default (`{DEFAULT}`) against each peer: Wilcoxon signed-rank "
        "over seeds, verdict at p < 0.05 by the larger signed-rank sum (better / same / worse "
        "for the default), p, wins/ties/losses of the default:",
        "",
    ]
    peers = [m for m in methods if m != DEFAULT]
    lines += ["| problem | point | " + " | ".join(_label(m) for m in peers) + " |"]
    lines += ["|---|---" + "|---" * len(peers) + "|"]
    worse = False
    for p in problems:
        for point in POINTS:
            cells = []
            for m in peers:
                common = [
                    s
                    for s in seeds
                    if (p, m, s, point) in values and (p, DEFAULT, s, point) in values
                ]
                if not common:
                    cells.append("-")
                    continue
                test = stats.paired(
                    [values[(p, DEFAULT, s, point)] for s in common],
                    [values[(p, m, s, point)] for s in common],
                )
                worse |= test.verdict == "worse" and m in PEERS
                cells.append(
                    f"**{test.verdict}** (p {test.p_value:.2g}, {test.wins}/{test.ties}/"
                    f"{test.losses})"
                    if test.verdict != "same"
                    else f"same (p {test.p_value:.2g}, {test.wins}/{test.ties}/{test.losses})"
                )
            lines.append(f"| `{p}` | {point} | " + " | ".join(cells) + " |")
    best = {
        point: all(ranks[("all", point)][DEFAULT] < ranks[("all", point)][m] for m in five[1:])
        for point in POINTS
    }
    checks = {
        "best average rank at the end": best["end"],
        "best average rank at half budget": best["half"],
        "not significantly worse than any peer on any problem": not worse,
    }
    lines += ["", 'Issue 52\'s "done when" on this half (among the five):', ""]
    lines += [f"- {what}: {'yes' if ok else '**no**'}" for what, ok in checks.items()]
    return [*lines, ""], checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--variant", type=Path, default=None)
    parser.add_argument("--before", type=Path, default=None)
    args = parser.parse_args(argv)
    folder: Path = args.dir
    out: Path = args.variant or folder
    md = ["# Multi-objective benchmark (issue 52): results", ""]
    intro = out / "intro.md"
    if intro.is_file():
        md += [intro.read_text().strip(), ""]
    for half, parts in HALVES.items():
        present = [part for part in parts if _has_runs(folder / part)]
        if args.variant is not None:
            present = [part for part in present if _has_runs(out / part)]
        if present:
            variant = [out / part for part in present] if args.variant is not None else []
            before = [args.before / part for part in present] if args.before is not None else []
            lines, _ = half_section(half, [folder / part for part in present], variant, before)
            md += lines
    speed = folder / "suggest_speed.md"
    if speed.is_file():
        text = speed.read_text().strip().replace("\n## ", "\n### ")  # under this heading
        md += ["## Suggestion time, 2 objectives, 200 trials", "", text, ""]
    (out / "report.md").write_text("\n".join(md))
    print(f"report: {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    from benchmarks import _preamble

    _preamble.forward("suite", "multi-summary")
