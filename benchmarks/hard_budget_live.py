"""The hard budget against the soft one on the live wall-clock problems (issue 50, item 4),
from the cached runs of ``python -m benchmarks cheap-trials``.

    python -m benchmarks cheap-trials --methods rollout rollout:overrun_risk=0.05 \\
        rollout:overrun_risk=0.2 --seeds 10 --out benchmarks/results/hard-budget/live \\
        --tag live --resume
    python -m benchmarks cheap-trials hard-live        # writes FOLDER/results.md

Per run, with B the problem's wall-clock budget (seconds of the whole ``study.optimize``):

- spent: the run's ``optimize_s``, the wall clock of the whole ``study.optimize`` (the
  objective, the sampler and Optuna's bookkeeping, up to the return of ``optimize``: the
  study's own clock, what the budget is defined on); spent / B, within = spent <= B (no
  tolerance), the overrun share (spent - B) / B (negative: budget left);
- end: when the last trial that ran finished (``Run.elapsed``), (end - B) / B beside;
- stopped: the run ended on a trial the sampler skipped (nothing fits: the hard budget's
  stop) rather than on the harness's callback once the clock passed B;
- the final regret: the run's best value over all its trials, and the in-budget regret: over
  the trials that finished by B (what ``cheap-trials`` scores), each minus the best value any
  trial of any run of the problem in the folder reached (no f* is known);
- at equal spend against soft (same seed): s = the smaller of the two runs' spends, each
  run's best value among its trials that finished by s, minus the same reference.

Per problem and hard method the paired Wilcoxon (``stats.paired``) against soft, and over all
problems pooled (each problem's regrets divided by the mean of its soft final regrets, plus
1e-12; secondary: the problems' scales differ).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
import math
from pathlib import Path

import numpy as np

from benchmarks.hard_budget import pool_scale
from benchmarks.harness import cache
from benchmarks.harness import report
from benchmarks.harness import stats
from benchmarks.harness.runner import Run
from benchmarks.problems.hpo import live_problems


FOLDER = Path(__file__).resolve().parent / "results" / "hard-budget" / "live"
SOFT = "rollout"  # the wall clock: soft under the default overrun_risk="auto"
METHODS = (SOFT, "rollout:overrun_risk=0.05", "rollout:overrun_risk=0.2")


@dataclass(frozen=True)
class Live:
    """One run's spend against its budget and its regrets (against ``ref``)."""

    run: Run
    budget: float
    ref: float

    @property
    def spent(self) -> float:
        return float(self.run.meta.get("optimize_s", self.run.run_s))

    @property
    def end(self) -> float:
        done = [t for t in self.run.elapsed if math.isfinite(t)]
        return max(done) if done else 0.0

    @property
    def stopped(self) -> bool:
        return bool(self.run.costs) and math.isnan(self.run.costs[-1])

    def best_by(self, limit: float) -> float:
        """Regret of the best value among the trials finished by ``limit`` (nan: none)."""
        ok = [v for v, t in zip(self.run.values, self.run.elapsed, strict=True) if t <= limit]
        ok = [v for v in ok if math.isfinite(v)]
        return min(ok) - self.ref if ok else math.nan

    @property
    def final(self) -> float:
        return self.best_by(math.inf)


def _f(x: float, digits: int = 3) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}g}"


def _test(a: Sequence[float], b: Sequence[float]) -> str:
    t = stats.paired(a, b)
    verdict = f", {t.verdict}" if t.verdict != "same" else ""
    return f"{t.wins}/{t.ties}/{t.losses}, p {report.fmt_p(t.p_value)}{verdict}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--tag", default="live")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1")
    parser.add_argument("--report", type=Path, default=None, help="default: FOLDER/results.md")
    args = parser.parse_args(argv)
    root = args.folder / "runs" / args.tag
    seeds = list(range(args.seeds))
    runs: dict[tuple[str, str], dict[int, Live]] = {}
    problems = live_problems()
    for p in problems.values():
        loaded = {
            (m, s): r
            for m in METHODS
            for s in seeds
            if (r := cache.load_valid(root, p, m, s)) is not None
        }
        values = [v for r in loaded.values() for v in r.values if math.isfinite(v)]
        ref = min(values) if values else math.nan
        for (m, s), r in loaded.items():
            runs.setdefault((p.name, m), {})[s] = Live(r, p.budget, ref)
    lines = [
        "# Hard budget against soft on the live wall-clock problems",
        "",
        f"Runs: `runs/{args.tag}` beside this file, seeds {report.seed_text(seeds)}. "
        "spent: the wall clock of the whole `study.optimize` (`optimize_s`); overrun: "
        "(spent - B) / B; end: when the last trial that ran finished; stopped: runs ended by "
        "the sampler (nothing fits); regrets: best value minus the best any run of the "
        "problem reached, final = all trials, in B = the trials finished by B (the score of "
        "`cheap-trials`).",
        "",
        "## Per method, all problems",
        "",
    ]
    rows = []
    for m in METHODS:
        mine = [x for (_, mm), d in runs.items() if mm == m for x in d.values()]
        if not mine:
            continue
        over = np.array([(x.spent - x.budget) / x.budget for x in mine])
        end = np.array([(x.end - x.budget) / x.budget for x in mine])
        rows.append(
            [
                f"`{m}`",
                str(len(mine)),
                f"{int(np.sum(over <= 0))}/{len(mine)}",
                _f(float(np.median(over))),
                _f(float(np.max(over))),
                f"{int(np.sum(end <= 0))}/{len(mine)}",
                _f(float(np.max(end))),
                str(sum(x.stopped for x in mine)),
            ]
        )
    lines += report.table(
        ["method", "runs", "within B", "overrun median", "max", "end <= B", "end max", "stopped"],
        rows,
    )
    lines += ["", "## Per problem", ""]
    rows = []
    pool: dict[str, list[list[float]]] = {}
    for (name, m), d in runs.items():
        soft = runs.get((name, SOFT), {})
        common = sorted(set(d) & set(soft))
        xs = [d[s] for s in sorted(d)]
        over = np.array([(x.spent - x.budget) / x.budget for x in xs])
        paired = ["", "", ""]
        if m != SOFT and common:
            h, o = [d[s] for s in common], [soft[s] for s in common]
            eq = [min(a.spent, b.spent) for a, b in zip(h, o, strict=True)]
            eh = [a.best_by(s) for a, s in zip(h, eq, strict=True)]
            es = [b.best_by(s) for b, s in zip(o, eq, strict=True)]
            scale = pool_scale([b.final for b in o])
            part = pool.setdefault(m, [[], [], [], [], [], []])
            for k, (a, b) in enumerate(
                [
                    ([x.final for x in h], [x.final for x in o]),
                    ([x.best_by(x.budget) for x in h], [x.best_by(x.budget) for x in o]),
                    (eh, es),
                ]
            ):
                part[2 * k] += [v / scale for v in a]
                part[2 * k + 1] += [v / scale for v in b]
                paired[k] = _test(a, b)
        rows.append(
            [
                name,
                f"`{m}`",
                f"{int(np.sum(over <= 0))}/{len(xs)}",
                _f(float(np.median(over))),
                _f(float(np.max(over))),
                f"{np.mean([len([c for c in x.run.costs if math.isfinite(c)]) for x in xs]):.0f}",
                _f(float(np.median([x.final for x in xs]))),
                _f(float(np.median([x.best_by(x.budget) for x in xs]))),
                *paired,
            ]
        )
    lines += report.table(
        [
            "problem",
            "method",
            "within B",
            "overrun median",
            "max",
            "trials",
            "final regret median",
            "in-B regret median",
            "vs soft final W/T/L",
            "vs soft in B",
            "vs soft at equal spend",
        ],
        rows,
    )
    lines += [
        "",
        "Pooled over the problems (each problem's regrets divided by the mean of its soft final "
        "regrets; W/T/L: hard lower / equal / higher than soft):",
        "",
    ]
    rows = [
        [f"`{m}`", str(len(p[0])), _test(p[0], p[1]), _test(p[2], p[3]), _test(p[4], p[5])]
        for m, p in pool.items()
    ]
    lines += report.table(["hard method", "pairs", "final", "in B", "at equal spend"], rows)
    lines += ["", "## Per run", ""]
    rows = [
        [
            name,
            f"`{m}`",
            str(s),
            f"{x.spent / x.budget:.4f}",
            f"{x.end / x.budget:.4f}",
            "yes" if x.stopped else "",
            _f(x.final),
            _f(x.best_by(x.budget)),
            _f(float(x.run.meta.get("load1", math.nan)), 2),
        ]
        for (name, m), d in runs.items()
        for s, x in sorted(d.items())
    ]
    lines += report.table(
        [
            "problem",
            "method",
            "seed",
            "spent/B",
            "end/B",
            "stopped",
            "final regret",
            "in-B regret",
            "load1",
        ],
        rows,
    )
    report.print_and_write("\n".join(lines) + "\n", args.report or args.folder / "results.md")
    return 0


if __name__ == "__main__":
    from benchmarks import _preamble

    _preamble.forward("cheap-trials", "hard-live")
