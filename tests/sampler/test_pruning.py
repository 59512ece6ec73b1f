"""Pruned trials inform the models; the expected cost counts on the pruner; running trials'
reports are pending information; with HyperbandPruner every bracket shares one model."""

from __future__ import annotations

import math
from typing import Any

from _studies import better_half_reversed
from _studies import read_request
from _studies import reporting_study
import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostBudgetPruner
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._sampler.space import SpaceBridge


X = FloatDistribution(0.0, 1.0)


def _add(study: optuna.Study, x: float, curve: list[float], cost: float, pruned: bool) -> None:
    study.add_trial(
        optuna.trial.create_trial(
            params={"x": x},
            distributions={"x": X},
            value=None if pruned else curve[-1],
            state=TrialState.PRUNED if pruned else TrialState.COMPLETE,
            intermediate_values=dict(enumerate(curve)),
            user_attrs={"cost": cost},
        )
    )


def _study() -> optuna.Study:
    study = optuna.create_study()
    _add(study, 0.1, [3.0, 2.0, 1.5, 1.0], 4.0, pruned=False)  # from step 0: -2.0
    _add(study, 0.2, [2.0, 1.5, 1.2, 0.9], 4.0, pruned=False)  # from step 0: -1.1
    _add(study, 0.8, [5.0], 1.0, pruned=True)  # stopped after 1 of 4 steps
    _add(study, 0.9, [4.0, 3.5], 2.0, pruned=True)  # after 2 of 4
    return study


def test_a_pruned_trial_is_an_observation_of_its_imputed_final_value_and_full_cost() -> None:
    study = _study()
    trials = study.get_trials(deepcopy=False)
    snap = read_request(trials, trials[-1], SpaceBridge({"x": X}))
    # Every trial with a value or reports is seen; the pruned ones at their imputed finals.
    assert len(snap.y) == 4
    np.testing.assert_allclose(snap.y[:2], [1.0, 0.9])
    assert snap.y[2] == pytest.approx(5.0 + np.median([-2.0, -1.1]))
    assert snap.y[3] == pytest.approx(3.5 + np.median([-1.0, -0.6]))
    # Their costs are full-trial estimates: 1 / (1/4) and 2 / (2/4).
    np.testing.assert_allclose(snap.cost_data.costs, [4.0, 4.0, 4.0, 4.0])
    assert snap.pruning is not None
    assert snap.pruning.pruned_share == pytest.approx(0.5)
    assert snap.pruning.run_fraction == pytest.approx((0.25 + 0.5) / 2)


def test_a_pruned_trials_bound_is_its_last_report_plus_the_largest_completed_move() -> None:
    study = _study()
    trials = study.get_trials(deepcopy=False)
    snap = read_request(trials, trials[-1], SpaceBridge({"x": X}))
    assert snap.y_lower is not None
    assert np.isnan(snap.y_lower[:2]).all()  # completed: exact
    np.testing.assert_allclose(snap.y_lower[2:], [5.0 - 2.0, 3.5 - 1.0])


def _first_request(study: optuna.Study) -> tuple[Any, float]:
    """The request the sampler's full route gets for a new trial's ``x``, and the value."""
    import optuna_costbo._sampler.suggest as suggest_mod

    requests: list[Any] = []
    real = suggest_mod.propose

    def spy(request: Any, *args: Any, **kwargs: Any) -> Any:
        requests.append(request)
        return real(request, *args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(suggest_mod, "propose", spy)
        x = study.ask().suggest_float("x", 0.0, 1.0)
    return requests[0], x


def test_the_request_carries_the_censoring_bounds() -> None:
    sampler = CostRolloutSampler(budget=1e3, acquisition="eipu", seed=0, n_startup_trials=2)
    study = _study()
    study.sampler = sampler
    lower = _first_request(study)[0].y_lower
    np.testing.assert_allclose(lower[2:], [3.0, 2.5])


def test_a_region_the_pruner_always_stops_loses_its_acquisition_weight() -> None:
    from optuna_costbo._numerics.models import build_models

    # Trials below x = 0.5 are stopped at their first report (which looks good); above, they
    # complete. Only a completed trial can be the best, so the models weight proposals by the
    # probability of completing, and the incumbent is a completed trial's value.
    study = optuna.create_study()
    for x in np.linspace(0.02, 0.98, 17):
        final = 1.0 + (x - 0.7) ** 2
        if x < 0.5:
            _add(study, float(x), [0.2, 0.1], 2.0, pruned=True)
        else:
            _add(study, float(x), [final + 1.0, final + 0.5, final], 3.0, pruned=False)
    sampler = CostRolloutSampler(budget=1e3, acquisition="eipu", seed=0, n_startup_trials=2)
    study.sampler = sampler
    request, x = _first_request(study)
    assert x > 0.5  # not in the region that never completes
    np.testing.assert_array_equal(request.stopped, np.linspace(0.02, 0.98, 17) < 0.5)
    models = build_models(request, np.random.default_rng(0), needs_cost=True)
    assert models.feasibility is not None
    pf = models.feasibility.pf(np.array([[0.2], [0.85]]))
    assert pf[0] < 0.1 < 0.9 < pf[1]
    assert models.best == pytest.approx(1.0 + (0.74 - 0.7) ** 2, abs=0.01)


def test_without_pruned_trials_nothing_changes() -> None:
    study = _study()
    trials = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    snap = read_request(trials, trials[-1], SpaceBridge({"x": X}))
    assert snap.pruning is None and snap.y_running is None and snap.y_lower is None
    np.testing.assert_allclose(snap.y, [1.0, 0.9])


def test_a_running_trials_reports_are_its_pending_value() -> None:
    study = _study()
    running = study.ask({"x": X})
    running.report(2.5, 0)
    quiet = study.ask({"x": X})  # no report: its pending value is the model's mean
    me = study.ask()
    trials = study.get_trials(deepcopy=False)
    snap = read_request(trials, trials[me.number], SpaceBridge({"x": X}))
    assert snap.X_running is not None and len(snap.X_running) == 2
    assert snap.y_running is not None
    assert snap.y_running[0] == pytest.approx(2.5 + np.median([-2.0, -1.1]))
    assert math.isnan(snap.y_running[1])
    assert quiet.number == running.number + 1


def test_the_expected_cost_counts_on_the_pruner_in_a_proposal() -> None:
    sampler = CostRolloutSampler(budget=1e3, acquisition="eipu", seed=0, n_startup_trials=2)
    study = _study()
    study.sampler = sampler
    seen: list[Any] = []
    import optuna_costbo._sampler.suggest as suggest_mod

    real = suggest_mod.propose

    def spy(*args: Any, **kwargs: Any) -> Any:
        proposal = real(*args, **kwargs)
        seen.append(proposal.cost_model)
        return proposal

    with pytest.MonkeyPatch.context() as m:
        m.setattr(suggest_mod, "propose", spy)
        study.ask().suggest_float("x", 0.0, 1.0)
    assert isinstance(seen[0], PrunedCost)
    assert seen[0].pruned_share == pytest.approx(0.5)


def _learning_curve(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", 0.0, 1.0)
    final = (x - 0.3) ** 2
    spent = 0.0
    for step in range(9):
        spent += 0.1 + x
        trial.report(final + 1.0 / (step + 1), step)
        if trial.should_prune():
            report_cost(trial, spent)
            raise optuna.TrialPruned()
    report_cost(trial, spent)
    return final


@pytest.mark.parametrize("wrapped", [False, True])
def test_with_hyperband_every_bracket_shares_one_model_of_the_study(wrapped: bool) -> None:
    # HyperbandPruner hands the sampler one bracket's view of the study. The sampler models
    # the whole study: after the start-up trials (counted over all brackets) every trial's
    # point is the model's, whichever bracket it lands in.
    import optuna_costbo._sampler.suggest as suggest_mod

    real = suggest_mod.propose
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[0].y))
        return real(*args, **kwargs)

    pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=9, reduction_factor=3)
    sampler = CostRolloutSampler(budget=1e3, acquisition="ei", seed=0, n_startup_trials=4)
    # Optuna gives the sampler one bracket's view when the study's pruner is a HyperbandPruner
    # (optuna.pruners._filter_study); wrapped in CostBudgetPruner, the whole study.
    study = optuna.create_study(
        sampler=sampler, pruner=CostBudgetPruner(pruner) if wrapped else pruner
    )
    with pytest.MonkeyPatch.context() as m:
        m.setattr(suggest_mod, "propose", counted)
        study.optimize(_learning_curve, n_trials=24)
    assert max(calls) >= 18  # the model saw (almost) every trial, not one bracket's
    assert len(calls) >= 24 - 6  # all but the start-up (and a bracket's first few)
    assert any(t.state == TrialState.PRUNED for t in study.trials)


def _pruners() -> dict[str, Any]:
    p = optuna.pruners
    return {
        "median": lambda: p.MedianPruner(n_startup_trials=2),
        "percentile": lambda: p.PercentilePruner(25.0, n_startup_trials=2),
        "successive-halving": lambda: p.SuccessiveHalvingPruner(min_resource=1),
        "hyperband": lambda: p.HyperbandPruner(min_resource=1, max_resource=8, reduction_factor=2),
        "patient": lambda: p.PatientPruner(p.MedianPruner(n_startup_trials=2), patience=0),
        "threshold": lambda: p.ThresholdPruner(upper=1.2),
        "wilcoxon": lambda: p.WilcoxonPruner(p_threshold=0.5, n_startup_steps=1),
    }


@pytest.mark.parametrize("wrapped", [False, True])
@pytest.mark.parametrize("name", list(_pruners()))
def test_every_optuna_pruner_with_two_workers_keeps_the_ledger_and_informs_the_model(
    name: str, wrapped: bool
) -> None:
    # Every Optuna pruner, bare and inside CostBudgetPruner, with two workers at once: no
    # trial fails, the budget ledger is the sum of every finished trial's cost (pruned ones
    # at what they spent), the study stops at its budget, and once trials were pruned the
    # model's observations include them.
    import optuna_costbo._sampler.suggest as suggest_mod

    real = suggest_mod.propose
    # (observations, completed trials, pruned trials) at each full suggestion
    seen: list[tuple[int, int, int]] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        states = [t.state for t in study.get_trials(deepcopy=False)]
        n_pruned = states.count(TrialState.PRUNED)
        seen.append((len(args[0].y), states.count(TrialState.COMPLETE), n_pruned))
        return real(*args, **kwargs)

    pruner = _pruners()[name]()
    budget, cap = 80.0, 150
    sampler = CostRolloutSampler(  # soft: it runs until the budget is spent
        budget=budget, acquisition="eipu", seed=1, n_startup_trials=4, overrun_risk=None
    )
    # HyperbandPruner puts a trial in a bracket by a hash of the study's name: fixed here.
    study = optuna.create_study(
        sampler=sampler,
        pruner=CostBudgetPruner(pruner) if wrapped else pruner,
        study_name=f"pruners-{name}",
    )

    def objective(trial: optuna.Trial) -> float:  # WilcoxonPruner compares step by step
        x = trial.suggest_float("x", 0.0, 1.0)
        spent = 0.0
        for step in range(9):
            spent += 0.1 + x
            report_cost(trial, spent)
            # Learns for 4 steps, then wavers (PatientPruner sees no progress).
            value = (x - 0.3) ** 2 + 1.0 / (min(step, 3) + 1) + 0.01 * ((step * 7) % 3)
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return (x - 0.3) ** 2 + 0.1

    with pytest.MonkeyPatch.context() as m:
        m.setattr(suggest_mod, "propose", counted)
        study.optimize(objective, n_trials=cap, n_jobs=2)
    trials = study.get_trials(deepcopy=False)
    assert not [t for t in trials if t.state == TrialState.FAIL]
    charged = sum(float(t.user_attrs.get("cost", 0.0)) for t in trials if t.state.is_finished())
    spent = sampler.ledger(study).spent
    assert spent == pytest.approx(charged, rel=1e-9)
    assert spent >= budget  # it ran until the budget was spent, not out of trials
    assert len(trials) < cap
    pruned = [t for t in trials if t.state == TrialState.PRUNED and t.intermediate_values]
    assert pruned, f"{name} pruned nothing: the test does not exercise it"
    # Once trials were pruned, the model had more observations than completed trials.
    assert any(n_obs > n_complete for n_obs, n_complete, n_pruned in seen if n_pruned)


def test_the_censored_route_runs_a_pruned_study_and_finds_the_optimum() -> None:
    # The censored route end to end with MedianPruner: no trial fails, trials get pruned, and
    # the best completed trial lands near the optimum x = 0.3 of the learning-curve problem.
    sampler = CostRolloutSampler(budget=60.0, acquisition="eipu", seed=0, n_startup_trials=4)
    study = optuna.create_study(sampler=sampler, pruner=optuna.pruners.MedianPruner(2, 1))
    study.optimize(_learning_curve, n_trials=60)
    states = [t.state for t in study.trials]
    assert TrialState.FAIL not in states and TrialState.PRUNED in states
    assert abs(study.best_params["x"] - 0.3) < 0.02  # random search, same seed: 0.08 off


def test_a_wrapped_median_pruner_is_obeyed_only_at_informative_steps() -> None:
    from optuna_costbo.pruner import _step_informs

    rng = np.random.default_rng(2)
    final = rng.random(8)  # (n,)
    # Step 1 is noise, step 2 ranks the trials as their final values do.
    study = reporting_study(np.column_stack([rng.random(8), final + 0.01, final]))
    trial = study.ask()
    trial.report(1e9, 1)  # far worse than every trial at step 1: Median says prune
    frozen = study._storage.get_trial(trial._trial_id)
    assert optuna.pruners.MedianPruner().prune(study, frozen)
    assert not _step_informs(study, frozen, study.get_trials(deepcopy=False))
    assert not CostBudgetPruner(optuna.pruners.MedianPruner()).prune(study, frozen)
    assert CostBudgetPruner(optuna.pruners.MedianPruner(), informative_steps=False).prune(
        study, frozen
    )
    trial.report(1e9, 2)
    frozen = study._storage.get_trial(trial._trial_id)
    assert _step_informs(study, frozen, study.get_trials(deepcopy=False))
    assert CostBudgetPruner(optuna.pruners.MedianPruner()).prune(study, frozen)
    # Off by default for any other pruner; forced on, it guards that one too.
    trial2 = study.ask()
    trial2.report(1e9, 1)
    frozen2 = study._storage.get_trial(trial2._trial_id)
    threshold = optuna.pruners.ThresholdPruner(upper=1.0)
    assert CostBudgetPruner(threshold).prune(study, frozen2)
    assert not CostBudgetPruner(threshold, informative_steps=True).prune(study, frozen2)


def completed_rank_correlation(
    trials: Any, step: int, better_half_of: Any = None
) -> tuple[float, int]:
    """The pruner's correlation of the COMPLETE trials' values at ``step`` with their final
    values (over the better half with a direction), and how many trials it is over."""
    from optuna_costbo.pruner import _completed_pairs
    from optuna_costbo.pruner import _pairs_correlation

    return _pairs_correlation(*_completed_pairs(trials, step), better_half_of)


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_the_better_half_rank_correlation_against_a_brute_force_reference(direction: str) -> None:
    rng = np.random.default_rng(5)
    curves = rng.random((13, 3))  # (n, S)
    study = reporting_study(curves, direction)
    pruned = study.ask()  # a PRUNED trial is not a finished one
    pruned.report(-5.0, 1)
    study.tell(pruned, state=TrialState.PRUNED)
    final = curves[:, 2]
    better = np.argsort(final if direction == "minimize" else -final)[:6]  # (6,) best 6 of 13
    for step in (1, 2):
        rho, n = completed_rank_correlation(study.trials, step, better_half_of=study.direction)
        pair = curves[better][:, [step - 1, 2]]  # (6, 2)
        ranks = np.argsort(np.argsort(pair, axis=0), axis=0)  # (6, 2)
        assert n == 6
        assert rho == pytest.approx(np.corrcoef(ranks[:, 0], ranks[:, 1])[0, 1])
    assert completed_rank_correlation(study.trials, 1)[1] == 13


def test_a_step_that_ranks_the_worse_half_from_the_better_does_not_inform() -> None:
    from optuna_costbo.pruner import _step_informs

    # Step 1 puts the worse half of 12 trials behind the better half (rho >= 0.5 over all of
    # them) but ranks the better half backwards; step 2 ranks both.
    step1, final = better_half_reversed()  # (12,), (12,)
    study = reporting_study(np.column_stack([step1, final + 0.1, final]))
    assert completed_rank_correlation(study.trials, 1)[0] >= 0.5
    trial = study.ask()
    trial.report(1e9, 1)  # Median says prune
    frozen = study._storage.get_trial(trial._trial_id)
    assert optuna.pruners.MedianPruner().prune(study, frozen)
    assert not _step_informs(study, frozen, study.get_trials(deepcopy=False))
    assert not CostBudgetPruner(optuna.pruners.MedianPruner()).prune(study, frozen)
    trial.report(1e9, 2)
    frozen = study._storage.get_trial(trial._trial_id)
    assert _step_informs(study, frozen, study.get_trials(deepcopy=False))
    assert CostBudgetPruner(optuna.pruners.MedianPruner()).prune(study, frozen)


def test_without_five_finished_trials_the_median_pruner_decides_alone() -> None:
    rng = np.random.default_rng(4)
    study = reporting_study(rng.random((4, 2)))  # 4 finished trials: no evidence yet
    trial = study.ask()
    trial.report(1e9, 1)
    frozen = study._storage.get_trial(trial._trial_id)
    median = optuna.pruners.MedianPruner(n_startup_trials=1)
    assert median.prune(study, frozen)
    assert CostBudgetPruner(median).prune(study, frozen)


def test_informative_steps_must_be_none_or_a_bool() -> None:
    with pytest.raises(ValueError, match="informative_steps must be None, True or False"):
        CostBudgetPruner(optuna.pruners.MedianPruner(), informative_steps="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="informative_steps must be None, True or False"):
        CostBudgetPruner(optuna.pruners.MedianPruner(), informative_steps=1)  # type: ignore[arg-type]
