"""benchmarks/pruning_equal_spend.py on constructed runs: each pair read at the smaller spend,
the benchmark's regret (clamped at 0), and the paired verdict."""

from __future__ import annotations

import math

from benchmarks import pruning_equal_spend as eq
from benchmarks.harness.runner import Run


def _run(costs: list[float], values: list[float], capped: bool = False) -> Run:
    run = Run("p", "m", 0)
    run.costs, run.values, run.capped = list(costs), list(values), capped
    return run


def test_a_pair_is_read_at_the_spend_of_the_run_that_spent_less() -> None:
    nan = math.nan
    pruned = _run([1.0, 0.1, 0.1, 1.0], [5.0, nan, nan, 2.0], capped=True)  # spent 2.2
    base = _run([1.0, 1.0, 1.0, 1.0], [4.0, 3.0, 1.0, 0.5])  # spent 4
    p = eq.pair(pruned, base, budget=4.0, seed=3)
    assert math.isclose(p.spend, 2.2) and math.isclose(p.share, 0.55)
    assert p.capped and p.seed == 3
    assert p.mine == 2.0  # all of its trials
    assert p.base == 3.0  # the first two: the third ends at 3 > 2.2
    # the other way round: the run without a pruner spent less
    q = eq.pair(base, pruned, budget=4.0, seed=0)
    assert q.spend == 2.2 and q.mine == 3.0 and q.base == 2.0


def test_a_pruned_trial_never_counts_however_good_its_report() -> None:
    run = _run([1.0, 0.5], [3.0, math.nan])
    assert eq.best_at(run, 10.0) == 3.0
    assert math.isnan(eq.best_at(_run([0.5], [math.nan]), 10.0))


def test_regret_is_the_benchmarks_clamped_at_zero() -> None:
    assert eq.regret(0.3, 0.1) == 0.3 - 0.1
    assert eq.regret(0.05, 0.1) == 0.0  # beat the best known value
    assert eq.regret(0.05, None) == 0.05  # unknown optimum: the raw value
    assert math.isnan(eq.regret(math.nan, 0.1))


def test_rows_count_wins_and_give_the_verdict_only_when_significant() -> None:
    better = [eq.Pair(s, 1.0, 0.5, s < 2, 1.0 + 0.01 * s, 2.0 + 0.02 * s) for s in range(10)]
    mixed = [eq.Pair(s, 1.0, 1.0, False, 1.0 + (-1) ** s, 1.0) for s in range(10)]
    rows = eq.table_rows(
        {("prob", "rollout+median"): better, ("prob", "random"): mixed}, {"prob": 0.5}
    )
    first, second = rows
    assert first[2:5] == ["10", "2", "0.50"]
    assert first[7] == "10/0/0" and first[9] == "better"
    assert float(first[5]) < float(first[6])
    # 5 at 2 (regret 1.5) and 5 at 0 (clamped to 0) against 1 (regret 0.5): no verdict
    assert second[7] == "5/0/5" and second[9] == ""
