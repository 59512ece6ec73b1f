"""How far early steps foretell final values on the pruning benchmark's problems (issue 24).

A pruner stops a trial on its early reports. Where learning curves cross (a configuration
that ends among the best looks poor early), any pruner stops some of the best trials, and no
sampler can win that back. For each problem, ``--n`` random configurations of the unit box
(seed 0) are run to the last step, and at each step the script reports:

- ``rho``: Spearman's rank correlation (``scipy.stats.spearmanr``) between the value at the step
  and the final value;
- ``top 10 % kept by a median rule``: of the configurations whose final value is among the
  best 10 %, the share whose value at the step is in the better half (what a median pruner at
  that step, against these configurations, would let through);
- ``rho within the top 10 %``: the same correlation among those best configurations only (a
  study that has found the good region prunes among good configurations, where curves may
  cross although they do not across the whole space);
- ``cost share``: the mean cumulative cost at the step over the mean final cost.

    python -m benchmarks.curve_crossing --problems yahpo-lcbench-189905-epochs ... \
        [--n 300] [--out benchmarks/results/pruning/curve_crossing.md]

The YAHPO problems need the benchmark environment (``benchmarks/problems/README_yahpo.md``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
import sys
import time

import numpy as np
from scipy import stats as sstats


if __package__ in (None, ""):
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import report
from benchmarks.harness.problem import Problem


TOP_SHARE = 0.1


def curves(problem: Problem, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Values and cumulative costs at ``problem.steps`` of ``n`` random configurations:
    (n, S) each."""
    assert problem.curve_fn is not None
    rng = np.random.default_rng(seed)
    values = np.empty((n, len(problem.steps)))  # (n, S)
    costs = np.empty((n, len(problem.steps)))  # (n, S)
    for i in range(n):
        params = problem.decode(rng.random(problem.encoded_dim))
        points = list(problem.curve_fn(params))
        values[i] = [v for _, v, _ in points]
        costs[i] = [c for _, _, c in points]
    return values, costs


def crossing(values: np.ndarray, costs: np.ndarray) -> list[dict[str, float]]:
    """Per step (columns of ``values`` (n, S)): ``rho``, ``kept``, ``rho_top`` and
    ``cost_share`` (see the module docstring). Lower values are better."""
    final = values[:, -1]  # (n,)
    k = max(1, round(TOP_SHARE * len(final)))
    top = np.argsort(final, kind="stable")[:k]  # (k,)
    out = []
    for j in range(values.shape[1]):
        at = values[:, j]  # (n,)
        better_half = at <= np.median(at)
        last = j == values.shape[1] - 1
        rho = 1.0 if last else float(sstats.spearmanr(at, final).statistic)
        rho_top = 1.0 if last else float(sstats.spearmanr(at[top], final[top]).statistic)
        out.append(
            {
                "rho": rho,
                "rho_top": rho_top,
                "kept": float(np.mean(better_half[top])),
                "cost_share": float(np.mean(costs[:, j]) / np.mean(costs[:, -1])),
            }
        )
    return out


def table(problem: Problem, rows: list[dict[str, float]], show: Sequence[int]) -> list[str]:
    md = [
        f"### {problem.name}",
        "",
        "| step | rho (step, final) | top 10 % kept by a median rule | rho within the top 10 % "
        "| cost share |",
        "|---|---|---|---|---|",
    ]
    for j, step in enumerate(problem.steps):
        if step in show or j == len(problem.steps) - 1:
            r = rows[j]
            md.append(
                f"| {step} | {r['rho']:.2f} | {r['kept']:.2f} | {r['rho_top']:.2f} "
                f"| {report.fmt(r['cost_share'])} |"
            )
    return [*md, ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--n", type=int, default=300, help="random configurations per problem")
    parser.add_argument("--steps", type=int, nargs="+", default=[1, 3, 9, 27], help="shown")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    from benchmarks.problems import stepped

    start = time.perf_counter()
    md = [
        "# Do early steps foretell the final value? (issue 24)",
        "",
        f"`python -m benchmarks.curve_crossing --problems {' '.join(args.problems)} "
        f"--n {args.n}`: {args.n} random configurations per problem (unit box, seed 0), each run "
        "to its last step (see the script's docstring for the columns).",
        "",
    ]
    for name in args.problems:
        problem = stepped.get_problem(name)
        values, costs = curves(problem, args.n)
        md += table(problem, crossing(values, costs), args.steps)
    md.append(report.versions_line(time.perf_counter() - start))
    text = "\n".join(md) + "\n"
    if args.out is None:
        print(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
