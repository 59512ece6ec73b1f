"""benchmarks/hard_budget.py on constructed runs: the spend (a skipped trial costs nothing),
the overrun, the equal-spend reading and the registered rule."""

from __future__ import annotations

import math

from benchmarks import hard_budget as hb
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import Separate
from benchmarks.harness.runner import Run


def _problem(name: str = "p", budget: float = 10.0, f_star: float | None = 1.0) -> Problem:
    return Problem(
        name=name,
        group="g",
        budget=budget,
        evaluator=Separate(lambda p: p["x"], lambda p: 1.0 + p["x"]),
        params=(Param("x", "float"),),
        f_star=f_star,
    )


def _run(costs: list[float], values: list[float], seed: int = 0) -> Run:
    run = Run("p", "m", seed)
    run.costs, run.values = list(costs), list(values)
    return run


def test_a_skipped_trial_costs_nothing_and_the_overrun_is_relative_to_the_budget() -> None:
    # the last trial was skipped by the sampler (no cost recorded): it must not make the
    # spend nan, which would count the run neither within nor over the budget
    run = _run([4.0, 7.0, math.nan], [3.0, 2.0, math.nan])
    r = hb.run_stats(run, _problem(budget=10.0, f_star=1.0))
    assert r.spent == 11.0 and r.overran
    assert math.isclose(r.overrun, 0.1) and math.isclose(r.ratio, 1.1)
    assert r.final == 1.0  # best 2.0 minus f* 1.0
    assert r.left == 6.0 and r.last == 7.0  # the last charged trial, not the skipped one
    rows = hb.overran_rows({("g", "tuning", hb.HARD): [r], ("g", "tuning", hb.SOFT): [r]})
    assert rows == [["p", "tuning", f"`{hb.HARD}`", "0", "0.6000", "0.7000", "0.1"]]
    exact = hb.run_stats(_run([4.0, 6.0], [3.0, 2.0]), _problem(budget=10.0))
    assert not exact.overran and exact.overrun == 0.0  # spent == B is within the budget


def test_equal_spend_reads_both_runs_at_the_smaller_spend() -> None:
    nan = math.nan
    hard = _run([2.0, 3.0, nan], [5.0, 4.0, nan])  # spent 5, stopped: nothing fit
    soft = _run([2.0, 2.0, 2.0, 5.0], [6.0, 3.0, 2.5, 1.5])  # spent 11
    s, h, o = hb.equal_spend(hard, soft, f_star=1.0)
    assert s == 5.0
    assert h == 3.0  # 4.0 - 1.0: all of hard's trials
    assert o == 2.0  # 3.0 - 1.0: soft's first two trials end at 4; the third at 6 > 5
    # regrets are clamped at 0 (a value below the best known one)
    _, below, above = hb.equal_spend(_run([1.0], [0.5]), _run([1.0], [0.7]), f_star=0.6)
    assert below == 0.0 and math.isclose(above, 0.1)


def _comparison(
    problem: str, half: str, overran: list[bool], hard_eq: list[float], soft_eq: list[float]
) -> hb.Comparison:
    p = _problem(problem)
    hard = {
        s: _run([11.0 if o else 9.0], [1.0 + h], seed=s)
        for s, (o, h) in enumerate(zip(overran, hard_eq, strict=True))
    }
    soft = {s: _run([9.0], [1.0 + v], seed=s) for s, v in enumerate(soft_eq)}
    c = hb.compare(p, half, hb.HARD, hard, soft)
    assert c is not None
    return c


def test_the_rule_needs_95_percent_within_and_no_worse_problem_on_confirmation() -> None:
    n = 20
    same = [0.1 * (s + 1) for s in range(n)]
    fine = _comparison("a", "confirmation", [False] * n, same, same)
    assert fine.at_equal.verdict == "same"
    assert hb.decide([fine]).adopt
    # two overruns in 20 runs: 90 % < 95 %
    over = _comparison("a", "confirmation", [s < 2 for s in range(n)], same, same)
    v = hb.decide([over])
    assert not v.adopt and math.isclose(v.within, 0.9) and v.n_runs == n
    # one overrun: 95 % exactly passes
    one = _comparison("a", "confirmation", [s < 1 for s in range(n)], same, same)
    assert hb.decide([one]).adopt
    # worse at equal spend on one confirmation problem: not adopted, and it is named
    worse = _comparison("b", "confirmation", [False] * n, [x + 1.0 for x in same], same)
    assert worse.at_equal.verdict == "worse"
    v = hb.decide([fine, worse])
    assert not v.adopt and v.worse == ["b"]
    # the tuning half does not enter the rule
    tuned = _comparison("c", "tuning", [True] * n, [x + 1.0 for x in same], same)
    assert hb.decide([fine, tuned]).adopt
    assert not hb.decide([]).adopt  # no runs: nothing to adopt


def test_the_pool_scales_each_problem_by_its_soft_regret() -> None:
    n = 6
    # on a large-scale problem hard loses by 100 on every seed, on a small one it wins by 1e-3:
    # unscaled, the pool would be all about the large problem
    big = _comparison("big", "confirmation", [False] * n, [1100.0] * n, [1000.0] * n)
    small = _comparison("small", "confirmation", [False] * n, [0.0] * n, [0.01] * n)
    test = hb.pooled([big, small])
    assert test is not None and test.n == 2 * n
    assert test.wins == n and test.losses == n
    # scaled: +0.1 on big, -1.0 on small: the wins have the larger ranks
    assert test.w_minus > test.w_plus


def test_known_cost_hands_the_problems_cost_formula_to_ours_only_as_cost_fn() -> None:
    from benchmarks.harness import methods

    p = _problem()
    assert p.known_cost is not None and p.known_cost({"x": 0.5}) == 1.5
    opaque = Problem("q", "g", 1.0, evaluator=lambda params, prev: (0.0, 1.0), params=p.params)
    assert opaque.known_cost is None  # a surrogate's or a measured cost is not handed over
    method = methods.resolve("rollout:overrun_risk=0.05,known_cost=true")
    assert method.kwargs[methods.KNOWN_COST] is True
    assert methods.unavailable(method) is None  # the sampler never sees the option
    sampler = methods.make_sampler(method, 10.0, 0, {"cost_fn": p.known_cost})
    assert sampler.budget == 10.0


def test_a_verdict_on_fewer_runs_than_registered_says_it_is_provisional() -> None:
    n = 4
    c = _comparison("a", "confirmation", [False] * n, [0.1] * n, [0.1] * n)
    assert "PROVISIONAL" in hb.decide([c], registered=8).text()
    assert "4 of the 8" in hb.decide([c], registered=8).text()
    assert "PROVISIONAL" not in hb.decide([c], registered=4).text()
    # 2 of 4 runs overran: (1) fails even if the 4 missing runs all keep within B (6/8 < 95 %)
    over = _comparison("a", "confirmation", [True, True, False, False], [0.1] * n, [0.1] * n)
    settled = hb.decide([over], registered=8)
    assert settled.settled and not settled.adopt and "final" in settled.text()
    assert settled.rows()[2][3] == "final"
    assert hb.decide([c], registered=8).rows()[2][3] == "provisional"


def test_the_rules_table_names_the_worse_problems_and_the_outcome() -> None:
    n = 20
    same = [0.1 * (s + 1) for s in range(n)]
    worse = _comparison("b", "confirmation", [False] * n, [x + 1.0 for x in same], same)
    rows = hb.decide([worse], registered=n).rows()
    assert rows[0][1] == "100.0% of 20 runs (20 registered)" and rows[0][3] == "yes"
    assert rows[1][1] == "b" and rows[1][3] == "no"
    assert rows[2][1] == "the default stays `None`" and rows[2][3] == "final"
