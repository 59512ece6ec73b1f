"""The stopping benchmark (benchmarks/stopping.py), stoppers and constraints in the harness,
and the constrained suite problems (benchmarks/problems/constrained.py)."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest

from benchmarks import stopping
from benchmarks.harness import methods
from benchmarks.harness import runner
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import Separate
from benchmarks.problems import constrained
from benchmarks.problems import synthetic


def _line(budget: float = 20.0, **extra: object) -> Problem:
    """f(x) = x on [0, 1], f* = 0, cost 1 + x."""
    return Problem(
        name="line",
        group="test",
        budget=budget,
        evaluator=Separate(lambda p: p["x"], lambda p: 1.0 + p["x"]),
        params=(Param("x", "float", 0.0, 1.0),),
        f_star=0.0,
        **extra,  # type: ignore[arg-type]
    )


def _x_below_half(params: dict) -> list[float]:
    return [params["x"] - 0.5]


def test_stopper_names() -> None:
    term = methods.resolve("rollout@terminator")
    assert (term.family, term.stopper, term.kwargs["acquisition"]) == (
        "ours",
        "terminator",
        "rollout",
    )
    tpe = methods.resolve("optuna-tpe@cost-aware=0.01")
    assert (tpe.kind, tpe.stopper) == ("tpe", "cost-aware=0.01")
    (callback,) = methods.make_callbacks(tpe)
    assert type(callback).__name__ == "CostAwareStopping"
    assert methods.make_callbacks(methods.resolve("rollout")) == []
    with pytest.raises(ValueError, match="positive number"):
        methods.resolve("optuna-tpe@cost-aware=-1")
    with pytest.raises(ValueError, match="BoTorch"):
        methods.resolve("botorch-logei@terminator")
    ours = methods.make_sampler(
        methods.resolve("rollout:budget=none,value_per_cost=0.1"), 5.0, 0, {}
    )
    assert math.isinf(ours._budget)


def test_a_rule_run_stops_by_itself_before_the_cap() -> None:
    # An exchange rate so high that no improvement is worth a trial once the models exist.
    problem = _line(budget=500.0)
    run = runner.run_one(problem, "eipu:budget=none,value_per_cost=10.0", 0)
    assert not run.error
    assert float(np.nansum(run.costs)) < problem.budget
    assert len(run.costs) < 20


def test_constraints_reach_the_samplers_and_the_record() -> None:
    problem = _line(budget=30.0, constraints_fn=_x_below_half, settings={"c": "x <= 0.5"})
    tpe = methods.make_sampler(
        methods.resolve("optuna-tpe"), 1.0, 0, {"constraints_func": runner.constraints_of_trial}
    )
    assert tpe._constraints_func is runner.constraints_of_trial
    for name in ("random", "eipu"):
        run = runner.run_one(problem, name, 0, probe=_probe)
        assert not run.error
        xs = run.meta["xs"]
        feasible = [x <= 0.5 for x in xs]
        # infeasible trials count as no value; feasible ones keep theirs (f = x); a last
        # trial ours skips at the end of a hard budget ran nothing: no value, no cost
        expect = [x if ok else math.nan for x, ok in zip(xs, feasible, strict=True)]
        skipped = len(run.values) - len(xs)
        assert skipped in ((0, 1) if name == "eipu" else (0,))
        np.testing.assert_array_equal(run.values, expect + [math.nan] * skipped)
        assert run.costs[len(xs) :] == [0.0] * skipped
        assert run.meta.get("n_infeasible", 0) == feasible.count(False)
        assert run.meta["attrs"] == [[x - 0.5] for x in xs]


def _probe(sampler: object, study: optuna.Study) -> dict:
    trials = [t for t in study.get_trials(deepcopy=False) if t.params]  # the trials that ran
    return {
        "xs": [t.params["x"] for t in trials],
        "attrs": [t.user_attrs[runner.CONSTRAINTS_ATTR] for t in trials],
    }


def test_reference_regret_matches_the_order_statistic() -> None:
    # f = x, x uniform on [0, 1], f* = 0: the best of n = 4 uniforms has median
    # 1 - 2^(-1/4) (P(min > m) = (1 - m)^4 = 1/2).
    problem = _line()
    assert problem.n_startup == 4
    r0 = stopping.random_regret(problem, n=4096)
    assert r0 == pytest.approx(1.0 - 2.0**-0.25, abs=0.02)


def test_cost_adjusted_regret_of_a_run() -> None:
    problem = _line(budget=10.0)
    stopping._SCALES[f"{problem.name}:{problem.fingerprint}"] = 0.5
    cap = problem.variant("cap3", budget=30.0)
    run = runner.Run("line", "m", 0, costs=[2.0, 3.0, math.nan], values=[0.4, 0.1, math.nan])
    entry = stopping.scaled_car(run, problem, cap, kappa=0.5)
    # regret 0.1 / R0 0.5 = 0.2; cost 5 / B 10 = 0.5 (the skipped trial costs nothing)
    assert entry["regret"] == pytest.approx(0.2)
    assert entry["cost"] == pytest.approx(0.5)
    assert entry["car"] == pytest.approx(0.2 + 0.5 * 0.5)
    assert not entry["at_cap"]
    labels = [p.label for p in stopping.policies(problem, [1.0, 0.1], 3.0)]
    assert labels.count("rule") == 2 and labels.count("Terminator") == 1
    assert stopping.rate(problem, 0.1) == pytest.approx(0.1 * 0.5 / 10.0)


def test_constrained_problems_optima() -> None:
    problems = constrained.constrained_problems()
    assert set(problems) == {"branin-expensive-c", "hartmann6-expensive-c", "size-expensive-c"}
    branin = problems["branin-expensive-c"]
    pi_min = {"x0": math.pi, "x1": 2.275}
    assert branin.constraints_fn is not None and branin.constraints_fn(pi_min)[0] <= 0
    assert branin.constraints_fn({"x0": -math.pi, "x1": 12.275})[0] > 0
    # Hartmann: a random feasible sample never beats f*, and the constraint binds.
    h = problems["hartmann6-expensive-c"]
    assert h.f_star is not None
    x = np.random.default_rng(1).random((200_000, 6))
    x = x[x.sum(axis=1) <= constrained.HARTMANN_L1]
    assert h.f_star <= synthetic.FUNCTIONS["hartmann6"].fn(x).min()
    assert h.f_star > synthetic.SUITE["hartmann6-expensive"].f_star + 0.05
    size = problems["size-expensive-c"]
    assert size.f_star is not None and size.f_star > synthetic.SUITE["size-expensive"].f_star
    assert size.fingerprint != synthetic.SUITE["size-expensive"].fingerprint


def test_botorch_references_refuse_constraints() -> None:
    problem = _line(constraints_fn=_x_below_half)
    run = runner.run_one(problem, "botorch-logei", 0)
    assert "take no constraints" in run.error
