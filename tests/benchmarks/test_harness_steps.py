"""Problems with steps in the harness (benchmarks/harness/{problem,methods,runner,cache}.py):
the runner reports every step, charges a pruned trial the cost it reached and a completed one
its full cost, keeps the budget rule, and builds each method's pruner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest

from benchmarks.harness import cache
from benchmarks.harness import methods
from benchmarks.harness import runner
from benchmarks.harness import stats
from benchmarks.harness.problem import LastStep
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from optuna_costbo import CostBudgetPruner


STEPS = (1, 2, 4, 8)


class CountingCurve:
    """value = x + 1 / step (x in [0, 1]); each step costs 1 + x; counts the steps it yields
    (to check that a pruned trial stops training)."""

    def __init__(self) -> None:
        self.yielded = 0

    def __call__(self, params: dict[str, Any]) -> Any:
        x = params["x"]
        for k, step in enumerate(STEPS, 1):
            self.yielded += 1
            yield step, x + 1.0 / step, k * (1.0 + x)


def _problem(curve: Any = None, budget: float = 40.0) -> Problem:
    curve = curve or CountingCurve()
    return Problem(
        name="toy-steps",
        group="test",
        budget=budget,
        evaluator=LastStep(curve),
        params=(Param("x", "float", 0.0, 1.0),),
        curve_fn=curve,
        steps=STEPS,
    )


def _intermediate(sampler: Any, study: optuna.Study) -> dict[str, Any]:
    trials = study.get_trials(deepcopy=False)
    return {
        "reported": [sorted(t.intermediate_values) for t in trials],
        "values_at": [[v for _, v in sorted(t.intermediate_values.items())] for t in trials],
        "cost_attr": [t.user_attrs.get("cost") for t in trials],
        "x": [t.params["x"] for t in trials],
    }


def test_a_pruned_trial_is_charged_the_cost_it_reached_and_every_step_is_reported() -> None:
    curve = CountingCurve()
    problem = _problem(curve)
    # MedianPruner (Optuna's defaults): after 5 COMPLETE trials, a trial worse than the median
    # at a step is pruned there; value = x + 1/step, so the pruned ones have large x.
    run = runner.run_one(problem, "random+median", 0, probe=_intermediate)
    assert not run.error
    states = run.states
    assert set(states) == {"complete", "pruned"} and states[:5] == ["complete"] * 5
    for k, (state, step, cost, value) in enumerate(
        zip(states, run.steps, run.costs, run.values, strict=True)
    ):
        x = run.meta["x"][k]
        reached = STEPS.index(step) + 1
        # every step up to the one reached was reported, with the curve's value
        assert run.meta["reported"][k] == list(STEPS[:reached])
        expected = [x + 1.0 / s for s in STEPS[:reached]]
        np.testing.assert_allclose(run.meta["values_at"][k], expected)
        # charged the cumulative cost at the step reached, in the cache and in the user attr
        assert cost == pytest.approx(reached * (1.0 + x))
        assert run.meta["cost_attr"][k] == pytest.approx(cost)
        if state == "complete":
            assert step == STEPS[-1] and value == pytest.approx(x + 1.0 / STEPS[-1])
        else:
            assert np.isnan(value)
    assert any(s == "pruned" and k < STEPS[-1] for s, k in zip(states, run.steps, strict=True))
    # a pruned trial stopped its curve: no step was computed beyond the ones reported
    assert curve.yielded == sum(STEPS.index(k) + 1 for k in run.steps)


@pytest.mark.parametrize(
    "method", ["random+hyperband", "optuna-tpe+median", "rollout+median", "rollout"]
)
def test_the_budget_rule_holds_with_pruned_trials(method: str) -> None:
    problem = _problem(budget=30.0)
    run = runner.run_one(problem, method, 1)
    assert not run.error and not run.capped
    # a trial starts only while the finished trials (pruned ones included) spent less
    assert stats.started_after_budget(run.costs, problem.budget) == 0
    spent = sum(run.costs)
    if method.startswith("rollout"):  # reported costs: ours keeps the hard budget ("auto")
        assert spent <= problem.budget < spent + max(run.costs)
    else:
        assert sum(run.costs[:-1]) < problem.budget <= spent
    if method == "rollout":  # NopPruner: nothing is pruned but a last trial skipped unrun
        ran = [s for s, k in zip(run.states, run.steps, strict=True) if k > 0]
        assert set(ran) == {"complete"} and len(ran) >= len(run.states) - 1


def test_methods_with_pruners_resolve_and_build_their_pruners() -> None:
    ours = methods.resolve("rollout+hyperband")
    assert (ours.family, ours.pruner, ours.kwargs["acquisition"]) == (
        "ours",
        "hyperband",
        "rollout",
    )
    assert ours.label == "ours rollout h=2 + Hyperband"
    wrapped = methods.make_pruner(ours, 52)
    assert isinstance(wrapped, CostBudgetPruner)
    inner = wrapped._wrapped
    assert isinstance(inner, optuna.pruners.HyperbandPruner)
    assert (inner._min_resource, inner._max_resource, inner._reduction_factor) == (1, 52, 3)
    bare = methods.make_pruner(methods.resolve("rollout+hyperband-bare"), 27)
    assert isinstance(bare, optuna.pruners.HyperbandPruner) and bare._max_resource == 27
    tpe = methods.resolve("optuna-tpe+hyperband")
    assert (tpe.family, tpe.kind) == ("optuna", "tpe")
    assert isinstance(methods.make_pruner(tpe, 9), optuna.pruners.HyperbandPruner)
    median = methods.make_pruner(methods.resolve("optuna-gp+median"), 9)
    assert isinstance(median, optuna.pruners.MedianPruner)
    assert isinstance(methods.make_pruner(methods.resolve("rollout+median"), 9), CostBudgetPruner)
    spec = methods.resolve("optuna-tpe:multivariate=true+median")
    assert (spec.kwargs, spec.pruner) == ({"multivariate": True}, "median")
    # without a pruner: NopPruner on a problem with steps, Optuna's default without steps
    assert isinstance(methods.make_pruner(methods.resolve("rollout"), 9), optuna.pruners.NopPruner)
    assert methods.make_pruner(methods.resolve("rollout"), 0) is None
    # The dropped "consult the sampler" variant still names its cached runs; the package no
    # longer takes the option, so it cannot run (docs/pruning.md, "Tried and dropped").
    consult = methods.resolve("rollout+hyperband-consult")
    assert consult.pruner == "hyperband-consult"
    assert consult.label == "ours rollout h=2 + Hyperband (consults the sampler)"
    assert "consult_sampler" in (methods.unavailable(consult) or "")
    # So does the dropped "no pruning in the last half" variant.
    finish = methods.resolve("rollout+median-finish50")
    assert finish.label == "ours rollout h=2 + Median (none in the last half)"
    assert "finish_share" in (methods.unavailable(finish) or "")
    assert methods.unavailable(ours) is None
    bad_names = (
        "optuna-tpe+median-bare",
        "optuna-tpe+median-consult",
        "optuna-tpe+median-finish50",
        "botorch-logei+median",
    )
    for bad in (*bad_names, "rollout+median+hyperband"):
        with pytest.raises(ValueError):
            methods.resolve(bad)
    with pytest.raises(ValueError, match="needs a problem with steps"):
        methods.make_pruner(tpe, 0)
    assert cache.method_dir("rollout+hyperband") == "rollout+hyperband"
    assert set(methods.PRUNING_REFERENCES) <= set(methods.PRUNING_METHODS)


def test_steps_and_states_round_trip_through_the_cache(tmp_path: Path) -> None:
    problem = _problem(budget=12.0)
    run = runner.run_one(problem, "random+hyperband", 2)
    assert run.states and len(run.states) == len(run.steps) == len(run.costs)
    cache.write_run(tmp_path, problem, run)
    back = cache.load_valid(tmp_path, problem, "random+hyperband", 2)
    assert back is not None
    assert (back.steps, back.states) == (run.steps, run.states)
    np.testing.assert_allclose(back.costs, run.costs)


def test_a_problem_with_steps_is_checked() -> None:
    curve = CountingCurve()
    base = _problem(curve)
    with pytest.raises(ValueError, match="both curve_fn and steps"):
        Problem(**{**base.__dict__, "steps": ()})
    with pytest.raises(ValueError, match="increasing positive integers"):
        Problem(**{**base.__dict__, "steps": (1, 4, 2)})
    with pytest.raises(ValueError, match="clock='reported'"):
        Problem(**{**base.__dict__, "clock": "wall"})
    assert base.max_step == 8 and base.has_steps
    assert base.evaluate({"x": 0.5}) == (pytest.approx(0.5 + 1 / 8), pytest.approx(6.0))
    # the steps are part of the definition
    assert Problem(**{**base.__dict__, "steps": (1, 2, 4, 9)}).fingerprint != base.fingerprint

    def short(params: dict[str, Any]) -> Any:
        yield 1, 0.0, 1.0
        yield 2, 0.0, 2.0

    def falling(params: dict[str, Any]) -> Any:
        yield 1, 0.0, 2.0
        yield 2, 0.0, 1.0

    for bad, match in ((short, "ended before step 4"), (falling, "is below")):
        problem = Problem(**{**base.__dict__, "curve_fn": bad})
        with pytest.raises(ValueError, match=match):
            list(problem.evaluate_curve({"x": 0.1}))


def test_a_run_with_hyperband_is_reproducible() -> None:
    # Hyperband's brackets hash the study's name: the runner names the study by problem and
    # seed, so a repeated run prunes the same trials.
    problem = _problem(budget=60.0)
    first = runner.run_one(problem, "random+hyperband", 4)
    again = runner.run_one(problem, "random+hyperband", 4)
    assert "pruned" in first.states
    assert (first.states, first.steps, first.costs) == (again.states, again.steps, again.costs)
