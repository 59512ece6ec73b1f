"""End-to-end behaviour of CostRolloutSampler: budget, costs, determinism, pickling."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
import pickle
import re
import time

import numpy as np
import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import INVALID_COST_ATTR
from optuna_costbo._ledger.keys import REMAINING_ATTR
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._sampler import clash as _clash


optuna.logging.set_verbosity(optuna.logging.ERROR)


def synthetic(trial: optuna.Trial) -> float:
    """The paper's synthetic problem: the global minimum sits where cost is highest."""
    x = np.array([trial.suggest_float("x0", -1.0, 1.0), trial.suggest_float("x1", -1.0, 1.0)])
    r = float(np.linalg.norm(x))
    report_cost(trial, 10.0 - 5.0 * r)
    return 10.0 * r * math.sin(2.0 * math.pi * r)


@pytest.mark.parametrize("acquisition", ["ei", "eipu", "ei-cool"])
def test_synthetic_problem_stops_by_itself_at_the_budget(acquisition: str) -> None:
    # Soft (the hard default stops short of the budget: tests/sampler/test_hard_budget.py).
    sampler = CostRolloutSampler(budget=150.0, acquisition=acquisition, seed=1, overrun_risk=None)
    study = optuna.create_study(sampler=sampler)
    study.optimize(synthetic)  # neither n_trials nor timeout

    costs = [t.user_attrs["cost"] for t in study.trials]
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    assert sum(costs) >= 150.0  # it ran until the budget was spent ...
    assert sum(costs[:-1]) < 150.0  # ... and started no trial after that
    assert sampler.remaining_budget(study) == pytest.approx(max(150.0 - sum(costs), 0.0))
    assert sampler.ledger(study).overrun == pytest.approx(max(sum(costs) - 150.0, 0.0))
    attrs = study.user_attrs
    assert attrs[BUDGET_ATTR] == 150.0
    assert attrs[SPENT_ATTR] == pytest.approx(sum(costs))
    assert attrs[REMAINING_ATTR] == 0.0
    # The models did something: better than the best of the startup design alone.
    assert study.best_value < -3.0

    # Calling optimize again on a spent study runs no objective: the trial it had to create is
    # pruned at its first suggestion and costs nothing.
    calls = []

    def counting(trial: optuna.Trial) -> float:
        calls.append(1)
        return synthetic(trial)

    n_before = len(study.trials)
    study.optimize(counting)
    assert len(study.trials) == n_before + 1
    assert study.trials[-1].state == TrialState.PRUNED
    assert study.trials[-1].system_attrs[SKIPPED_ATTR] is True
    assert sampler.remaining_budget(study) == pytest.approx(max(150.0 - sum(costs), 0.0))
    assert sampler.ledger(study).overrun == pytest.approx(max(sum(costs) - 150.0, 0.0))
    # counting() entered, but its first suggestion raised before any cost was reported
    assert "cost" not in study.trials[-1].user_attrs


def test_wall_clock_costs_with_short_sleeps() -> None:
    budget = 0.6
    sampler = CostRolloutSampler(budget=budget, seed=0, n_startup_trials=3)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        time.sleep(0.02 + 0.04 * x)
        return (x - 0.3) ** 2

    study.optimize(objective)
    costs = np.array([t.user_attrs["cost"] for t in study.trials])
    sleeps = np.array([0.02 + 0.04 * t.params["x"] for t in study.trials])
    assert np.all(costs >= sleeps)  # measured time covers the objective's sleep
    assert np.all(costs < sleeps + 0.05)  # and excludes the sampler's own time
    assert all(t.system_attrs[COST_SOURCE_ATTR] == "wall_clock" for t in study.trials)
    # Wall-clock costs: by default the sampler's own time counts against the budget too.
    charged = costs + np.array([t.system_attrs[SAMPLER_SECONDS_ATTR] for t in study.trials])
    assert charged.sum() >= budget
    assert charged[:-1].sum() < budget


def test_default_does_not_charge_sampler_time_on_reported_costs() -> None:
    sampler = CostRolloutSampler(budget=1e6, seed=0, n_startup_trials=2)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0, 1)
        report_cost(trial, 1.0 + x)
        return x**2

    study.optimize(objective, n_trials=4)
    reported = sum(t.user_attrs["cost"] for t in study.trials)
    assert sum(t.system_attrs[SAMPLER_SECONDS_ATTR] for t in study.trials) > 0.0
    assert sampler.ledger(study).spent == pytest.approx(reported)


def _params_of_run(seed: int, acquisition: str) -> list[dict[str, object]]:
    sampler = CostRolloutSampler(
        budget=1e9, acquisition=acquisition, seed=seed, n_startup_trials=4
    )
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", -2.0, 2.0)
        n = trial.suggest_int("n", 1, 64, log=True)
        kind = trial.suggest_categorical("kind", ["a", "b", None])
        report_cost(trial, 1.0 + n / 10.0)
        return (x - 1.0) ** 2 + abs(math.log(n) - 2.0) + (0.5 if kind == "a" else 0.0)

    study.optimize(objective, n_trials=12)
    return [t.params for t in study.trials]


@pytest.mark.parametrize("acquisition", ["ei", "eipu"])
def test_same_seed_same_suggestions(acquisition: str) -> None:
    first = _params_of_run(3, acquisition)
    assert first == _params_of_run(3, acquisition)
    assert first != _params_of_run(4, acquisition)


def test_maximize_direction() -> None:
    sampler = CostRolloutSampler(budget=1e9, seed=0, n_startup_trials=5)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(lambda t: -((t.suggest_float("x", -3, 3) - 1.2) ** 2), n_trials=20)
    assert study.best_params["x"] == pytest.approx(1.2, abs=0.05)


def test_sampler_pickles_and_keeps_working() -> None:
    sampler = CostRolloutSampler(budget=1e9, acquisition="eipu", seed=0, n_startup_trials=3)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: t.suggest_float("x", 0, 1) ** 2, n_trials=5)
    clone = pickle.loads(pickle.dumps(study.sampler))
    assert isinstance(clone, CostRolloutSampler)
    assert clone.budget == 1e9
    study.sampler = clone
    study.optimize(lambda t: t.suggest_float("x", 0, 1) ** 2, n_trials=2)
    assert len(study.trials) == 7


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": 0}, "budget must be a positive finite number"),
        ({"budget": -3.0}, "budget must be a positive finite number, got -3.0"),
        ({"budget": float("nan")}, "budget must be a positive finite number"),
        ({"budget": float("inf")}, "budget must be a positive finite number"),
        ({"budget": "100"}, "budget must be a positive finite number"),
        ({"budget": 1.0, "acquisition": "ucb"}, "acquisition must be one of"),
        ({"budget": 1.0, "n_startup_trials": -1}, "n_startup_trials must be"),
        ({"budget": 1.0, "cost_attr": ""}, "cost_attr must be"),
        ({"budget": 1.0, "seed": 1.5}, "seed must be"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CostRolloutSampler(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "expensive"])
def test_bad_reported_cost_fails_the_trial_with_a_warning_and_the_run_goes_on(
    bad: object, caplog: pytest.LogCaptureFixture
) -> None:
    sampler = CostRolloutSampler(budget=100.0, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: report_cost(t, 1.0) or t.suggest_float("x", 0, 1), n_trials=2)  # type: ignore[func-returns-value]

    def objective(trial: optuna.Trial) -> float:
        trial.set_user_attr("cost", bad)  # bypasses report_cost's own validation
        return trial.suggest_float("x", 0, 1)

    optuna.logging.enable_propagation()
    try:
        with caplog.at_level("WARNING", logger="optuna"):
            study.optimize(objective, n_trials=1)  # no exception: the run goes on
    finally:
        optuna.logging.disable_propagation()
    assert any(
        "failed because of its cost" in r.getMessage()
        and "must be a non-negative finite number" in r.getMessage()
        for r in caplog.records
    )
    last = study.trials[-1]
    assert last.state == TrialState.COMPLETE  # Optuna stores the state; the sampler cannot
    assert last.system_attrs[INVALID_COST_ATTR] == repr(bad)
    # Charged in the reported unit: the median reported cost so far, not its seconds.
    assert last.user_attrs["cost"] == 1.0
    assert last.system_attrs[COST_SOURCE_ATTR] == "estimated"
    spent = sampler.ledger(study).spent
    assert math.isfinite(spent)
    assert spent == pytest.approx(2.0 + last.user_attrs["cost"])
    # and the study goes on
    study.optimize(lambda t: report_cost(t, 1.0) or t.suggest_float("x", 0, 1), n_trials=1)  # type: ignore[func-returns-value]
    assert sampler.ledger(study).n_finished == 4
    # The models treat it as failed: its value is not among the observations they see.
    from _studies import read_request

    from optuna_costbo._sampler.space import SpaceBridge

    trials = study.get_trials(deepcopy=False)
    snap = read_request(
        trials, trials[-1], SpaceBridge({"x": optuna.distributions.FloatDistribution(0, 1)})
    )
    assert sorted(snap.y) == sorted(t.value for t in trials if t.number != last.number)


def test_failed_and_pruned_trials_are_charged() -> None:
    sampler = CostRolloutSampler(budget=10.0, seed=0)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0, 1)
        report_cost(trial, 1.0)
        if trial.number % 3 == 1:
            raise RuntimeError("boom")
        if trial.number % 3 == 2:
            raise optuna.TrialPruned()
        return x

    study.optimize(objective, catch=(RuntimeError,))
    states = [t.state for t in study.trials]
    assert len(study.trials) == 10  # 10 trials of cost 1 spend a budget of 10, whatever the state
    assert TrialState.FAIL in states and TrialState.PRUNED in states
    assert sampler.remaining_budget(study) == pytest.approx(0.0)


def test_ask_and_tell_never_raises_and_exposes_the_budget() -> None:
    sampler = CostRolloutSampler(budget=3.0, seed=0, n_startup_trials=2)
    study = optuna.create_study(sampler=sampler)
    for _ in range(5):
        trial = study.ask()
        x = trial.suggest_float("x", 0, 1)
        report_cost(trial, 1.0)
        study.tell(trial, x)
    assert sampler.remaining_budget(study) == 0.0  # never negative: the overrun is apart
    assert sampler.ledger(study).overrun == pytest.approx(2.0)
    assert study.user_attrs[REMAINING_ATTR] == 0.0
    assert all(t.state == TrialState.COMPLETE for t in study.trials)


def test_reopened_study_continues_from_the_stored_ledger(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(
        study_name="s", storage=storage, sampler=CostRolloutSampler(budget=20.0, seed=0)
    )
    study.optimize(synthetic, n_trials=1)
    spent_first = sum(t.user_attrs["cost"] for t in study.trials)

    again = optuna.load_study(  # soft: it runs until the budget is spent
        study_name="s", storage=storage, sampler=CostRolloutSampler(budget=20.0, overrun_risk=None)
    )
    assert again.sampler.remaining_budget(again) == pytest.approx(max(20.0 - spent_first, 0.0))  # type: ignore[attr-defined]
    again.optimize(synthetic)
    costs = [t.user_attrs["cost"] for t in again.trials]
    assert sum(costs) >= 20.0 and sum(costs[:-1]) < 20.0


def test_conditional_parameters_are_modelled_with_the_rule_read_off_the_data(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A define-by-run space: ya only for branch "a", yb only for branch "b". The models see
    # all four parameters (the inactive ones at a fixed fill), the rule "ya iff branch = a"
    # comes from the completed trials, and a proposal leaves out what its branch does not ask.
    sampler = CostRolloutSampler(budget=1e9, seed=0, n_startup_trials=4, acquisition="ei")
    study = optuna.create_study(sampler=sampler)
    asked: list[set[str]] = []

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0, 1)
        branch = trial.suggest_categorical("branch", ["a", "b"])
        value = (x - 0.3) ** 2 + trial.suggest_float("ya", 0, 1) if branch == "a" else 0.0
        if branch == "b":
            value = (x - 0.3) ** 2 - 1.0 + 0.1 * (trial.suggest_int("yb", 0, 3) - 3) ** 2
        asked.append(set(trial.params))
        return value

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study.optimize(objective, n_trials=20)
    finally:
        optuna.logging.set_verbosity(optuna.logging.ERROR)
    last = study.trials[-1]
    assert set(sampler.infer_relative_search_space(study, last)) == {"x", "branch", "ya", "yb"}
    activity = sampler._suggester.reads.activity(last)
    assert activity.rules == {"ya": ("branch", frozenset({0})), "yb": ("branch", frozenset({1}))}
    # Once both branches have completed, no parameter goes to the independent sampler.
    both = next(
        i for i in range(len(study.trials)) if {"ya", "yb"} <= set().union(*asked[: i + 1])
    )
    late = [
        r
        for r in caplog.records
        if "sampled independently" in r.getMessage()
        and int(re.search(r"Trial#(\d+)", r.getMessage())[1]) > both + 1  # type: ignore[index]
    ]
    assert not late
    # The model found the better branch and the best yb, not a random one.
    model_trials = study.trials[8:]
    assert sum(t.params["branch"] == "b" for t in model_trials) >= 0.8 * len(model_trials)
    assert study.best_params["branch"] == "b" and study.best_params["yb"] == 3
    assert abs(study.best_params["x"] - 0.3) < 0.05


def test_a_parameter_whose_range_changes_still_goes_to_the_independent_sampler() -> None:
    sampler = CostRolloutSampler(budget=1e9, seed=0, n_startup_trials=2, acquisition="ei")
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0, 1)
        z = trial.suggest_float("z", 0, 1 + trial.number)  # a dynamic range
        return x + z

    study.optimize(objective, n_trials=6)
    assert set(sampler.infer_relative_search_space(study, study.trials[-1])) == {"x"}


def test_the_rollout_is_the_default_acquisition() -> None:
    sampler = CostRolloutSampler(budget=1.0)
    assert sampler._suggester.acquisition.name == "rollout"
    eipu = CostRolloutSampler(budget=1.0, acquisition="eipu")
    assert eipu._suggester.acquisition.name == "eipu"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"horizon": 0}, "horizon must be an int >= 1"),
        ({"horizon": 2.5}, "horizon must be an int >= 1"),
        ({"cost_fn": 3.0}, "cost_fn must be callable"),
        ({"cost_fn": lambda a, b, c: 1.0}, "cost_fn must take"),
    ],
)
def test_bad_rollout_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CostRolloutSampler(budget=1.0, **kwargs)  # type: ignore[arg-type]


def test_known_cost_function_is_charged_and_no_cost_model_is_fitted() -> None:
    calls: list[dict[str, object]] = []

    def cost_fn(params: dict[str, float]) -> float:
        calls.append(params)
        return 1.0 + 4.0 * params["x"]

    sampler = CostRolloutSampler(
        budget=20.0,
        cost_fn=cost_fn,
        seed=0,
        n_startup_trials=3,
        overrun_risk=None,  # soft
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: (t.suggest_float("x", 0.0, 1.0) - 0.8) ** 2)
    costs = [t.user_attrs["cost"] for t in study.trials]
    assert costs == pytest.approx([1.0 + 4.0 * t.params["x"] for t in study.trials])
    assert all(t.system_attrs[COST_SOURCE_ATTR] == "cost_fn" for t in study.trials)
    assert sum(costs) >= 20.0 and sum(costs[:-1]) < 20.0
    assert len(calls) > len(study.trials)  # the acquisition used it too
    assert all(isinstance(p["x"], float) for p in calls)


def test_state_dependent_cost_is_charged_from_the_previous_trial() -> None:
    seen: list[tuple[float, float | None]] = []

    def moving_cost(params: dict[str, float], previous: dict[str, float] | None) -> float:
        start = 0.0 if previous is None else previous["x"]
        seen.append((params["x"], None if previous is None else previous["x"]))
        return 0.1 + abs(params["x"] - start)

    sampler = CostRolloutSampler(
        budget=3.0,
        cost_fn=moving_cost,
        seed=0,
        n_startup_trials=3,
        acquisition="rollout",
        overrun_risk=None,  # soft: every trial runs (the hard default skips the last)
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: (t.suggest_float("x", -1.0, 1.0) - 0.7) ** 2)
    xs = [t.params["x"] for t in study.trials]
    expected = [0.1 + abs(xs[0])] + [0.1 + abs(b_ - a) for a, b_ in itertools.pairwise(xs)]
    assert [t.user_attrs["cost"] for t in study.trials] == pytest.approx(expected)
    # the rollout asked for moves that start elsewhere than the last trial (its trajectories)
    assert any(prev is not None and prev not in xs for _, prev in seen)


def test_a_moving_cost_tells_the_policy_where_the_last_trial_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import optuna_costbo._sampler.suggest as sampler_mod

    origins: list[np.ndarray | None] = []
    real_propose = sampler_mod.propose

    def spy(*args: object, **kwargs: object) -> object:
        known = args[0].known_cost  # type: ignore[attr-defined]
        origins.append(getattr(known, "origin", None))
        return real_propose(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sampler_mod, "propose", spy)
    sampler = CostRolloutSampler(
        budget=1e6,
        cost_fn=lambda p, prev: 1.0 + abs(p["x"] - (prev or {"x": 0.0})["x"]),
        acquisition="eipu",
        seed=0,
        n_startup_trials=3,
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: (t.suggest_float("x", 2.0, 6.0) - 4.7) ** 2, n_trials=5)
    assert len(origins) == 2  # the two model-based trials
    for origin, last in zip(origins, study.trials[2:4], strict=True):
        assert origin is not None
        assert 2.0 + 4.0 * origin[0] == pytest.approx(last.params["x"])  # its box point


def test_unaffordable_suggestion_is_logged_once_per_study_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Two trials of cost 6 leave 3 of a budget of 15: no point costs less than about 6, so
    # under the paper's rule (a step only where the budget left covers its cost) none is
    # affordable. (The default "rollout" would start one more trial: budget is left.)
    sampler = CostRolloutSampler(
        budget=15.0, seed=0, n_startup_trials=1, acquisition="rollout-paper"
    )
    study = optuna.create_study(sampler=sampler)
    for x in (0.1, 0.9):
        _run_enqueued(study, x, cost=6.0)
    optuna.logging.enable_propagation()
    try:
        with caplog.at_level("INFO", logger="optuna"):
            for _ in range(3):
                trial = study.ask()
                trial.suggest_float("x", 0, 1)
                trial.set_user_attr("cost", 1.0)
                study.tell(trial, 0.5)
    finally:
        optuna.logging.disable_propagation()
    said = [r for r in caplog.records if "buys no more trials" in r.getMessage()]
    said = list({id(r): r for r in said}.values())  # one record may reach two handlers
    assert len(said) == 1 and said[0].levelname == "INFO"
    assert said[0].name.startswith("optuna.")  # governed by optuna.logging
    assert "remaining budget, 3 of 15" in said[0].getMessage()


def _run_enqueued(study: optuna.Study, x: float, cost: float) -> None:
    """A trial at ``x`` of value ``x`` and cost ``cost``, run under the budget (an added
    trial would be imported, not charged)."""
    study.enqueue_trial({"x": x})
    trial = study.ask()
    trial.suggest_float("x", 0, 1)
    trial.set_user_attr("cost", cost)
    study.tell(trial, x)


def _package_records(caplog: pytest.LogCaptureFixture, verbosity: int) -> list[str]:
    """The package's log messages (under either logger namespace) of one suggestion that
    finds the budget buys no more trials (the paper's rule, 1 left), at ``verbosity``."""
    sampler = CostRolloutSampler(
        budget=15.0, seed=0, n_startup_trials=1, acquisition="rollout-paper"
    )
    study = optuna.create_study(sampler=sampler)
    _run_enqueued(study, 0.5, cost=14.0)
    optuna.logging.enable_propagation()
    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(verbosity)
    caplog.clear()
    try:
        with caplog.at_level("DEBUG"):
            trial = study.ask()
            trial.suggest_float("x", 0, 1)
    finally:
        optuna.logging.set_verbosity(before)
        optuna.logging.disable_propagation()
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith(("optuna.costbo", "optuna_costbo"))
    ]


def test_optuna_verbosity_silences_the_package(caplog: pytest.LogCaptureFixture) -> None:
    # At INFO the end-of-budget notice is logged, through optuna's logger tree ...
    assert any("buys no more trials" in m for m in _package_records(caplog, optuna.logging.INFO))
    # ... and optuna.logging.set_verbosity(ERROR) silences it.
    assert _package_records(caplog, optuna.logging.ERROR) == []


def test_a_zero_cost_is_valid_and_the_cost_model_copes() -> None:
    sampler = CostRolloutSampler(budget=20.0, seed=0, n_startup_trials=3, acquisition="eipu")
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0, 1)
        report_cost(trial, 0.0 if trial.number % 2 else 1.0 + x)  # every other trial cached
        return (x - 0.3) ** 2

    study.optimize(objective, n_trials=8)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    costs = [t.user_attrs["cost"] for t in study.trials]
    assert costs.count(0.0) == 4
    assert sampler.ledger(study).spent == pytest.approx(sum(costs))


def test_choices_that_compare_equal_get_a_clear_error_at_the_first_suggest() -> None:
    study = optuna.create_study(sampler=CostRolloutSampler(budget=10.0, seed=0))
    trial = study.ask()
    with pytest.raises(ValueError, match=r"'flag' has choices that compare equal: 1 and True"):
        trial.suggest_categorical("flag", [1, True, "other"])
    ok = study.ask()
    assert ok.suggest_categorical("flag", [1, "1", "other"]) in (1, "1", "other")


def test_colliding_choices_are_caught_on_the_relative_path_too() -> None:
    # A trial added with the categorical already set never calls sample_independent for it;
    # the next trial meets the categorical in the relative search space first.
    dist = optuna.distributions.CategoricalDistribution([1, True, "other"])
    study = optuna.create_study(sampler=CostRolloutSampler(budget=10.0, seed=0))
    study.add_trial(
        optuna.create_trial(params={"flag": "other"}, distributions={"flag": dist}, value=1.0)
    )
    trial = study.ask()
    with pytest.raises(ValueError, match=r"'flag' has choices that compare equal: 1 and True"):
        trial.suggest_categorical("flag", [1, True, "other"])


def test_a_missing_dashboard_package_is_named_once_per_study(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "optuna_dashboard" else real(name, *a),
    )
    storage = f"sqlite:///{tmp_path / 'd.db'}"
    study = optuna.create_study(sampler=CostRolloutSampler(budget=3.0, seed=0), storage=storage)
    optuna.logging.enable_propagation()
    try:
        with caplog.at_level("INFO", logger="optuna"):
            study.optimize(lambda t: report_cost(t, 1.0) or t.suggest_float("x", 0, 1))  # type: ignore[func-returns-value]
    finally:
        optuna.logging.disable_propagation()
    said = [r for r in caplog.records if "optuna-dashboard not installed" in r.getMessage()]
    said = list({id(r): r for r in said}.values())  # one record may reach two handlers
    assert len(said) == 1 and said[0].levelname == "INFO"
    assert 'pip install "optuna-costbo[dashboard]"' in said[0].getMessage()


def test_hyperband_bracket_studies_still_stop_at_the_budget() -> None:
    # HyperbandPruner hands the sampler per-bracket study views without the optimize loop's
    # thread-local state: the budget must still end study.optimize.
    sampler = CostRolloutSampler(budget=5.0, seed=0, n_startup_trials=2, overrun_risk=None)
    pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=9)
    study = optuna.create_study(sampler=sampler, pruner=pruner)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0, 1)
        for step in range(9):
            trial.report((x - 0.3) ** 2 + 1.0 / (step + 1), step)
            if trial.should_prune():
                report_cost(trial, 0.1 * (step + 1))
                raise optuna.TrialPruned()
        report_cost(trial, 1.0)
        return (x - 0.3) ** 2

    # n_trials is only a guard: without the budget stop, this would run all 100 trials.
    study.optimize(objective, n_trials=100)
    costs = [t.user_attrs["cost"] for t in study.trials]
    assert sum(costs) >= 5.0 and sum(costs[:-1]) < 5.0


@pytest.mark.parametrize("acquisition", ["rollout", "ei", "eipu"])
def test_an_evaluated_configuration_is_not_proposed_again(acquisition: str) -> None:
    # A deterministic objective on 12 integer configurations whose optimum EI keeps returning
    # to: 12 trials must try 12 different configurations (the first 4 are the Sobol design).
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_int("x", 0, 11)
        report_cost(trial, 1.0 + 0.1 * x)
        return (x - 7) ** 2

    sampler = CostRolloutSampler(1e6, acquisition=acquisition, n_startup_trials=4, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=12)
    xs = [t.params["x"] for t in study.trials]
    assert sorted(xs) == list(range(12))
    # With every configuration tried, the next trial repeats one instead of failing.
    study.optimize(objective, n_trials=1)
    assert study.trials[-1].state == optuna.trial.TrialState.COMPLETE


def test_deterministic_objective_holds_the_noise_at_its_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import optuna_costbo._sampler.suggest as sampler_mod

    noises: list[float] = []
    real_propose = sampler_mod.propose

    def spy(*args: object, **kwargs: object) -> object:
        proposal = real_propose(*args, **kwargs)  # type: ignore[arg-type]
        noises.append(proposal.objective_model.hyper.noise_var)  # type: ignore[attr-defined]
        return proposal

    monkeypatch.setattr(sampler_mod, "propose", spy)
    for deterministic in (True, False):
        noises.clear()
        sampler = CostRolloutSampler(
            1e6,
            acquisition="ei",
            seed=0,
            n_startup_trials=5,
            deterministic_objective=deterministic,
        )
        study = optuna.create_study(sampler=sampler)
        noise = iter(np.random.default_rng(0).normal(0.0, 0.3, size=9))
        # A noisy objective: a fitted noise would rise well above the floor.
        study.optimize(lambda t, e=noise: t.suggest_float("x", 0, 1) + next(e), n_trials=9)
        if deterministic:
            assert noises and all(n == pytest.approx(1e-6) for n in noises)
        else:
            assert max(noises) > 1e-3


def test_startup_size_is_d_plus_one_unless_the_budget_buys_few_trials() -> None:
    from optuna_costbo._sampler.startup import startup_size

    assert startup_size(4) == 5  # no cost known yet: d + 1
    assert startup_size(1) == 4  # at least 4
    assert startup_size(9) == 10
    # 3 trials cost 3.0, 27.0 left: 30 trials predicted, a third (10) is more than d + 1.
    assert startup_size(4, 3, 3.0, 27.0) == 5
    # 12 trials predicted: a third, 4, is below the floor d + 1 = 5.
    assert startup_size(4, 3, 3.0, 9.0) == 5
    # d = 2: 9 trials predicted, a third is 3, the floor (at least 3), under the full 4.
    assert startup_size(2, 3, 3.0, 6.0) == 3
    assert startup_size(2, 3, 3.0, 30.0) == 4
    assert startup_size(1, 1, 1.0, 1.0) == 3
    # Overspent (negative remaining) counts as nothing left.
    assert startup_size(2, 5, 5.0, -1.0) == 3


def test_a_budget_that_buys_few_trials_gets_a_smaller_startup_design() -> None:
    def objective(trial: optuna.Trial) -> float:
        xs = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(2)]
        report_cost(trial, 1.0)
        return sum((x - 0.3) ** 2 for x in xs)

    def model_trials(budget: float) -> int:
        sampler = CostRolloutSampler(budget=budget, acquisition="ei", seed=0)
        study = optuna.create_study(sampler=sampler)
        study.optimize(objective)
        assert len(study.trials) == budget
        return sum(1 for t in study.trials if t.system_attrs.get(_clash.PROPOSED_ATTR))

    # 9 trials: the design stops at 3 (a third; the first trial is Optuna's random one);
    # 40 trials: the full d + 1, at least 4.
    assert model_trials(9.0) == 9 - 3
    assert model_trials(40.0) == 40 - 4


@pytest.mark.parametrize("acquisition", ["ei", "eipu", "ei-cool"])
def test_rollout_options_with_another_acquisition_warn_once(acquisition: str) -> None:
    with pytest.warns(
        UserWarning, match=rf"acquisition='{acquisition}' does not use horizon: it is ignored"
    ) as record:
        CostRolloutSampler(budget=1.0, acquisition=acquisition, horizon=3)
    assert len(record) == 1
    assert record[0].filename == __file__  # points at the caller's line


@pytest.mark.parametrize("acquisition", ["rollout", "rollout-paper", "eipu"])
def test_no_warning_when_the_options_apply_or_are_left_alone(acquisition: str) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CostRolloutSampler(budget=1.0, acquisition=acquisition)
        if acquisition.startswith("rollout"):
            CostRolloutSampler(budget=1.0, acquisition=acquisition, horizon=3)
