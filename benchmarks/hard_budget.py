"""The hard budget against the soft one (issue 50, item 4): overruns, and regrets at the end
and at equal spend, from the suite's cached runs.

    python -m benchmarks suite hard-budget                        # benchmarks/results/hard-budget
    python -m benchmarks suite hard-budget --folder DIR --report DIR/results.md

Reads ``<folder>/synthetic/runs`` (the suite's synthetic problems) and ``<folder>/real/runs``
(the YAHPO Gym instances; skipped, and said so, without the YAHPO environment of
``benchmarks/problems/README_yahpo.md``) and writes ``<folder>/results.md``, the tables the
study's ``report.md`` copies; the rule registered in ``<folder>/PREREG.md``:

- per run: spent (the sum of the trials' costs; a trial the sampler skipped, whose cost is not
  recorded, costs nothing), spent / B, overran = spent > B, the overrun fraction (spent - B) / B
  and the final regret (``report.score``: minus f*, at least 0);
- per problem and hard method: the share of runs within the budget, and the paired Wilcoxon
  (``stats.paired``) against the soft ``rollout:overrun_risk=none`` (cached as ``rollout``) on
  (a) the final regrets, each run at its own end, (b) the regrets at equal spend: for each
  seed, s = min(spent_hard, spent_soft) and each run's best value among its trials whose
  cumulative cost is <= s;
- the rule: ``overrun_risk="auto"`` as the default iff, on the confirmation half, hard at 0.05
  keeps spent <= B in >= 95 % of its runs and is worse than soft at equal spend on no problem.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
import math
from pathlib import Path
import sys

import numpy as np

from benchmarks.harness import best_known
from benchmarks.harness import cache
from benchmarks.harness import report
from benchmarks.harness import stats
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import split
from benchmarks.harness.runner import Run


FOLDER = Path(__file__).resolve().parent / "results" / "hard-budget"
BEST_KNOWN = Path(__file__).resolve().parent / "results" / "yahpo_best_known.json"
SOFT = "rollout:overrun_risk=none"
CACHED_SOFT = "rollout"
"""The spec the registered study's soft runs are cached under: ``rollout`` was the soft budget
until ``overrun_risk="auto"`` became the default (hard for reported costs since)."""
HARD = "rollout:overrun_risk=0.05"
"""The hard method the rule decides on (what ``overrun_risk="auto"`` gives reported costs)."""
HARD_METHODS = (HARD, "rollout:overrun_risk=0.2", "rollout:overrun_risk=0.05,known_cost=true")
WITHIN_SHARE = 0.95
"""The rule's least share of runs with spent <= B (hard at 0.05, the confirmation half)."""
POOL_EPS = 1e-12


@dataclass(frozen=True)
class RunStats:
    """One run's spend against its budget, and its final regret."""

    seed: int
    spent: float
    budget: float
    final: float  # regret
    problem: str = ""
    left: float = math.nan  # the budget left when the last charged trial started
    last: float = math.nan  # that trial's cost

    @property
    def ratio(self) -> float:
        return self.spent / self.budget

    @property
    def overran(self) -> bool:
        return self.spent > self.budget

    @property
    def overrun(self) -> float:
        """(spent - B) / B: negative when budget was left."""
        return (self.spent - self.budget) / self.budget


def costs_of(run: Run) -> list[float]:
    """The run's trial costs, (n,), a trial without a recorded cost (skipped by the sampler
    before it ran: ``TrialPruned`` in suggest) as 0."""
    return [0.0 if math.isnan(c) else float(c) for c in run.costs]


def spent_of(run: Run) -> float:
    return float(np.sum(costs_of(run)))


def regret(value: float, f_star: float | None) -> float:
    """``report.score``'s regret of a best value: value - f*, at least 0 (raw without f*)."""
    if f_star is None or math.isnan(value):
        return value
    return max(value - f_star, 0.0)


def run_stats(run: Run, problem: Problem) -> RunStats:
    """Spend and final regret of one run (``problem`` with the f* its regrets are taken
    against)."""
    values = np.asarray(run.values, dtype=float)
    finite = values[np.isfinite(values)]
    best = float(finite.min()) if len(finite) else math.nan
    costs = costs_of(run)
    charged = [i for i, c in enumerate(costs) if c > 0]
    k = charged[-1] if charged else 0
    return RunStats(
        run.seed,
        float(np.sum(costs)),
        problem.budget,
        regret(best, problem.f_star),
        problem.name,
        problem.budget - float(np.sum(costs[:k])),
        costs[k] if charged else math.nan,
    )


def equal_spend(hard: Run, soft: Run, f_star: float | None) -> tuple[float, float, float]:
    """(s, regret of ``hard`` at s, regret of ``soft`` at s), s the smaller of the two runs'
    spends; a run's regret at s is that of its best value among the trials whose cumulative
    cost is <= s (nan if none completed)."""
    s = min(spent_of(hard), spent_of(soft))
    at = [regret(stats.best_within(costs_of(r), r.values, s), f_star) for r in (hard, soft)]
    return s, at[0], at[1]


@dataclass(frozen=True)
class Comparison:
    """One hard method against soft on one problem, over the seeds both have."""

    problem: str
    half: str
    method: str
    hard: list[RunStats]
    soft: list[RunStats]
    at_end: stats.Paired  # final regrets
    at_equal: stats.Paired  # regrets at equal spend
    equal_share: float  # mean s / B
    equal_hard: list[float]  # regrets at equal spend, per seed
    equal_soft: list[float]


def compare(
    problem: Problem, half: str, method: str, hard: dict[int, Run], soft: dict[int, Run]
) -> Comparison | None:
    """``method``'s runs against soft's on the seeds both have (None if none)."""
    seeds = sorted(set(hard) & set(soft))
    if not seeds:
        return None
    h = [run_stats(hard[s], problem) for s in seeds]
    o = [run_stats(soft[s], problem) for s in seeds]
    eq = [equal_spend(hard[s], soft[s], problem.f_star) for s in seeds]
    return Comparison(
        problem=problem.name,
        half=half,
        method=method,
        hard=h,
        soft=o,
        at_end=stats.paired([r.final for r in h], [r.final for r in o]),
        at_equal=stats.paired([e[1] for e in eq], [e[2] for e in eq]),
        equal_share=float(np.mean([e[0] for e in eq])) / problem.budget,
        equal_hard=[e[1] for e in eq],
        equal_soft=[e[2] for e in eq],
    )


def within_share(runs: Sequence[RunStats]) -> float:
    """The share of runs with spent <= B (nan for none)."""
    return float(np.mean([not r.overran for r in runs])) if runs else math.nan


def pool_scale(soft_finals: Sequence[float]) -> float:
    """What a problem's regrets are divided by before they pool: the mean of its soft runs'
    final regrets plus :data:`POOL_EPS`."""
    return float(np.mean(soft_finals)) + POOL_EPS


def pooled(comparisons: Sequence[Comparison]) -> stats.Paired | None:
    """The secondary pooled test (PREREG.md): one paired Wilcoxon over every (problem, seed)
    of the equal-spend regrets, each problem's divided by the mean of its soft final regrets
    (plus :data:`POOL_EPS`), so that problems of different scales pool."""
    a: list[float] = []
    b: list[float] = []
    for c in comparisons:
        scale = pool_scale([r.final for r in c.soft])
        a += [x / scale for x in c.equal_hard]
        b += [x / scale for x in c.equal_soft]
    return stats.paired(a, b) if a else None


@dataclass(frozen=True)
class Verdict:
    within: float  # share of hard-0.05 runs with spent <= B, confirmation half
    n_runs: int
    worse: list[str]  # confirmation problems where hard is worse at equal spend
    adopt: bool
    registered: int | None = None  # the runs the rule needs (None: not known)

    @property
    def missing(self) -> int:
        return max(0, (self.registered or 0) - self.n_runs)

    @property
    def settled(self) -> bool:
        """Whether the missing runs cannot change the outcome: none is missing, or (1) fails
        even if every missing run keeps within the budget."""
        if not self.missing:
            return True
        assert self.registered is not None
        best_case = (self.within * self.n_runs + self.missing) / self.registered
        return best_case < WITHIN_SHARE

    def text(self) -> str:
        first = "met" if self.within >= WITHIN_SHARE else "not met"
        second = "met" if not self.worse else "not met (" + ", ".join(self.worse) + ")"
        outcome = (
            '`overrun_risk="auto"` becomes the default'
            if self.adopt
            else "the default stays `None`"
        )
        return (
            f"(1) spent <= B in {self.within:.1%} of the {self.n_runs} runs of hard at 0.05 "
            f"on the confirmation half (>= {WITHIN_SHARE:.0%} needed): {first}; (2) not "
            f"significantly worse than soft at equal spend on any confirmation problem: "
            f"{second}. So {outcome}."
        ) + (
            ""
            if not self.missing
            else (
                f" {self.n_runs} of the {self.registered} registered runs of hard at 0.05 on "
                "the confirmation half are in the cache; "
                + (
                    f"(1) fails even if all {self.missing} missing runs keep within B, so the "
                    "outcome is final."
                    if self.settled
                    else "PROVISIONAL: the missing runs could change the outcome."
                )
            )
        )

    def rows(self) -> list[list[str]]:
        """The rule as a table: each condition, what was measured, what it needs, met."""
        runs = f"{self.n_runs} runs" + (
            f" ({self.registered} registered)" if self.registered is not None else ""
        )
        return [
            [
                "(1) hard at 0.05 within B, confirmation runs",
                f"{self.within:.1%} of {runs}",
                f">= {WITHIN_SHARE:.0%}",
                "yes" if self.within >= WITHIN_SHARE else "no",
            ],
            [
                "(2) confirmation problems where hard at 0.05 is worse at equal spend",
                ", ".join(self.worse) or "none",
                "none",
                "yes" if not self.worse else "no",
            ],
            [
                "verdict",
                '`overrun_risk="auto"` as the default'
                if self.adopt
                else "the default stays `None`",
                "",
                "final" if self.settled else "provisional",
            ],
        ]


def decide(comparisons: Sequence[Comparison], registered: int | None = None) -> Verdict:
    """The registered rule on the comparisons of :data:`HARD` on the confirmation half
    (``registered``: the runs it needs, to say when the verdict is provisional)."""
    mine = [c for c in comparisons if c.method == HARD and c.half == "confirmation"]
    runs = [r for c in mine for r in c.hard]
    worse = [c.problem for c in mine if c.at_equal.verdict == "worse"]
    within = within_share(runs)
    adopt = bool(runs) and within >= WITHIN_SHARE and not worse
    return Verdict(within, len(runs), worse, adopt, registered)


# -- the report -----------------------------------------------------------------------------


def _f(x: float, digits: int = 3) -> str:
    return "nan" if math.isnan(x) else f"{x:.{digits}g}"


def _verdict(test: stats.Paired) -> tuple[str, str, str]:
    return (
        f"{test.wins}/{test.ties}/{test.losses}",
        report.fmt_p(test.p_value),
        (test.verdict if test.verdict != "same" else ""),
    )


def overrun_rows(
    runs: dict[tuple[str, str, str], list[RunStats]],
    methods: Sequence[str],
    expected: dict[tuple[str, str], int],
) -> list[list[str]]:
    """Per (group, half, method): runs found / registered, share within B, mean spent / B, the
    overrun fraction's mean over the runs that overran and its maximum."""
    rows = []
    for (group, half, method), rs in runs.items():
        if method not in methods or not rs:
            continue
        over = [r.overrun for r in rs if r.overran]
        rows.append(
            [
                group,
                half,
                f"`{method}`",
                f"{len(rs)}/{expected.get((group, half), 0)}",
                f"{within_share(rs):.1%}",
                f"{np.mean([r.ratio for r in rs]):.3f}",
                _f(float(np.mean(over))) if over else "-",
                _f(max(over)) if over else "-",
            ]
        )
    return rows


def problem_rows(comparisons: Sequence[Comparison]) -> list[list[str]]:
    rows = []
    for c in comparisons:
        end = _verdict(c.at_end)
        eq = _verdict(c.at_equal)
        rows.append(
            [
                c.problem,
                f"`{c.method}`",
                f"{sum(not r.overran for r in c.hard)}/{len(c.hard)}",
                f"{sum(not r.overran for r in c.soft)}/{len(c.soft)}",
                _f(float(np.mean([r.final for r in c.hard]))),
                _f(float(np.mean([r.final for r in c.soft]))),
                *end,
                f"{c.equal_share:.3f}",
                _f(float(np.nanmean(c.equal_hard))),
                _f(float(np.nanmean(c.equal_soft))),
                *eq,
            ]
        )
    return rows


def overran_rows(runs: dict[tuple[str, str, str], list[RunStats]]) -> list[list[str]]:
    """Every run of a hard method that overran: the budget left when its last trial started
    and that trial's cost, both as shares of B."""
    rows = []
    for (_, half, method), rs in runs.items():
        if method == SOFT:
            continue
        for r in rs:
            if r.overran:
                rows.append(
                    [
                        r.problem,
                        half,
                        f"`{method}`",
                        str(r.seed),
                        f"{r.left / r.budget:.4f}",
                        f"{r.last / r.budget:.4f}",
                        f"{r.overrun:.2g}",
                    ]
                )
    return rows


PROBLEM_HEADER = [
    "problem",
    "hard method",
    "hard within B",
    "soft within B",
    "final regret, hard",
    "soft",
    "W/T/L",
    "p",
    "verdict",
    "equal spend s/B",
    "regret at s, hard",
    "soft",
    "W/T/L",
    "p",
    "verdict",
]


def build(
    groups: dict[str, tuple[Path, list[Problem], list[int]]],
    scoring: dict[str, Problem] | None = None,
) -> tuple[
    list[Comparison], dict[tuple[str, str, str], list[RunStats]], dict[tuple[str, str], int]
]:
    """Comparisons and per-(group, half, method) runs of every group (name -> (runs root, its
    problems, seeds)), and the runs registered per method of each (group, half). ``scoring``:
    a problem's definition with the f* its regrets are taken against, when that is not the
    one its runs were made with (``best_known.rescored``: the cache checks the runs against
    the latter's fingerprint)."""
    comparisons: list[Comparison] = []
    runs: dict[tuple[str, str, str], list[RunStats]] = {}
    expected: dict[tuple[str, str], int] = {}
    methods = [SOFT, *HARD_METHODS]
    for group, (root, problems, seeds) in groups.items():
        tuning = {p.name for p in split(problems, "tuning")}
        for half in ("tuning", "confirmation"):
            for p in problems:
                if (p.name in tuning) != (half == "tuning"):
                    continue
                expected[(group, half)] = expected.get((group, half), 0) + len(seeds)
                valid, _, _ = cache.load_all(root, p, [*methods, CACHED_SOFT], seeds)
                for s in seeds:  # soft runs cached as CACHED_SOFT stand in for missing SOFT ones
                    if (CACHED_SOFT, s) in valid:
                        valid.setdefault((SOFT, s), valid.pop((CACHED_SOFT, s)))
                q = (scoring or {}).get(p.name, p)
                by_method = {
                    m: {s: valid[(m, s)] for s in seeds if (m, s) in valid} for m in methods
                }
                for m in methods:
                    runs.setdefault((group, half, m), []).extend(
                        run_stats(r, q) for r in by_method[m].values()
                    )
                for m in HARD_METHODS:
                    c = compare(q, half, m, by_method[m], by_method[SOFT])
                    if c is not None:
                        comparisons.append(c)
    return comparisons, runs, expected


def render(
    comparisons: Sequence[Comparison],
    runs: dict[tuple[str, str, str], list[RunStats]],
    expected: dict[tuple[str, str], int],
    notes: Sequence[str],
    command: str,
) -> str:
    lines = [
        "# Hard budget against soft (issue 50, item 4)",
        "",
        f"Command: `{command}`. The rule: `PREREG.md` beside this file. W/T/L: hard lower / "
        f"equal / higher regret than soft (`{SOFT}`, the same seeds); p: two-sided Wilcoxon "
        "signed-rank (`benchmarks/harness/stats.py`), the verdict by the larger signed-rank "
        "sum when p < 0.05. Equal spend: per seed, s = the smaller of the two runs' spends, "
        "each run's best value among its trials whose cumulative cost is <= s.",
        "",
        *notes,
        "## Spend against the budget, per method and half",
        "",
        "runs: found / registered; within B: the share of runs with spent <= B; overrun: "
        "(spent - B) / B over the runs that overran (mean, max).",
        "",
    ]
    lines += report.table(
        ["group", "half", "method", "runs", "within B", "mean spent/B", "overrun mean", "max"],
        overrun_rows(runs, [SOFT, *HARD_METHODS], expected),
    )
    overran = overran_rows(runs)
    if overran:
        lines += [
            "",
            "## The hard runs that overran",
            "",
            "left: the budget left when the run's last trial started; last: that trial's cost; "
            "both / B.",
            "",
        ]
        lines += report.table(
            ["problem", "half", "method", "seed", "left", "last", "(spent - B)/B"], overran
        )
    registered = sum(n for (_, half), n in expected.items() if half == "confirmation")
    verdict = decide(comparisons, registered)
    lines += ["", "## The registered rule (confirmation half)", ""]
    lines += report.table(["condition", "measured", "needed", "met"], verdict.rows())
    lines += ["", verdict.text(), ""]
    for half in ("confirmation", "tuning"):
        mine = [c for c in comparisons if c.half == half]
        if not mine:
            continue
        lines += [f"## Per problem, {half} half", ""]
        lines += report.table(PROBLEM_HEADER, problem_rows(mine))
        lines += [""]
        pools = []
        for group_is_real in (False, True):
            for m in HARD_METHODS:
                part = [
                    c
                    for c in mine
                    if c.method == m and c.problem.startswith("yahpo-") == group_is_real
                ]
                test = pooled(part) if group_is_real else None
                if test is not None:
                    wtl, p, v = _verdict(test)
                    pools.append([f"`{m}`", str(test.n), wtl, p, v or "same"])
        if pools:
            lines += [
                "Pooled over the YAHPO instances of this half (secondary, not deciding: each "
                "instance's equal-spend regrets divided by the mean of its soft final regrets):",
                "",
            ]
            lines += report.table(["hard method", "pairs", "W/T/L", "p", "verdict"], pools)
            lines += [""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--synthetic-seeds", type=int, default=20, help="seeds 0..N-1")
    parser.add_argument("--real-seeds", type=int, default=5, help="seeds 0..N-1")
    parser.add_argument("--report", type=Path, default=None, help="default: FOLDER/results.md")
    args = parser.parse_args(argv)
    from benchmarks.problems.synthetic import SUITE

    groups: dict[str, tuple[Path, list[Problem], list[int]]] = {
        "synthetic": (
            args.folder / "synthetic" / "runs",
            list(SUITE.values()),
            list(range(args.synthetic_seeds)),
        )
    }
    notes: list[str] = []
    scoring: dict[str, Problem] = {}
    try:
        from benchmarks.problems.yahpo import real_problems

        table = best_known.load(BEST_KNOWN)
        real = list(real_problems().values())
        scoring = {p.name: best_known.rescored(p, table) for p in real}
        groups["real"] = (args.folder / "real" / "runs", real, list(range(args.real_seeds)))
    except (ImportError, FileNotFoundError) as exc:
        notes += [f"**The YAHPO instances were not read**: {report.shorten(str(exc))}", ""]
    comparisons, runs, expected = build(groups, scoring)
    command = "python -m benchmarks suite hard-budget " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    text = render(comparisons, runs, expected, notes, command.strip())
    report.print_and_write(text, args.report or args.folder / "results.md")
    return 0


if __name__ == "__main__":
    from benchmarks import _preamble

    _preamble.forward("suite", "hard-budget")
