"""The hard budget (``overrun_risk``): what is spent stays within the budget (always with a
known cost), the study stops and says why when nothing fits, the start-up design and the
rollout's trajectories obey it, the budget pruner stops a trial before it would cross, and
remaining, spent and overrun read the same through the API, the study attrs and the bar."""

from __future__ import annotations

import inspect
import io
import itertools
import math
from pathlib import Path
import subprocess
import sys
from typing import Any

import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostBudgetPruner
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import OVERRUN_ATTR
from optuna_costbo._ledger.keys import OVERRUN_CHANCE_ATTR
from optuna_costbo._ledger.keys import REMAINING_ATTR
from optuna_costbo._ledger.keys import RISK_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._sampler.options import overrun_risk
from optuna_costbo._sampler.snapshot import risk_left


optuna.logging.set_verbosity(optuna.logging.ERROR)


def _cost(params: dict[str, Any]) -> float:
    """From 0.2 (x = 0, y = 0) to 3.2."""
    return 0.2 + 2.0 * params["x"] ** 2 + params["y"]


def _objective(report: bool) -> Any:
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", -1.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        if report:
            report_cost(trial, _cost(trial.params))
        return (x - 0.5) ** 2 + (y - 0.3) ** 2

    return objective


def _run(budget: float, seed: int, report: bool, **options: Any) -> tuple[Any, optuna.Study]:
    if not report:
        options.setdefault("cost_fn", _cost)
    sampler = CostRolloutSampler(budget=budget, seed=seed, **options)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_objective(report), n_trials=300)
    return sampler, study


@pytest.mark.parametrize("acquisition", ["rollout", "rollout-paper", "eipu", "ei-cool", "ei"])
def test_a_known_cost_never_overruns_and_the_study_says_why_it_stopped(acquisition: str) -> None:
    for seed in range(3):
        sampler, study = _run(6.0, seed, report=False, acquisition=acquisition, overrun_risk=0.05)
        ledger = sampler.ledger(study)
        assert ledger.spent <= 6.0 and ledger.overrun == 0.0
        # It stopped because nothing fit, not because the trials ran out, and close to the
        # end: what is left buys no trial (the cheapest costs 0.2).
        reason = sampler.stop_reason(study)
        assert reason is not None and "fits the budget left" in reason
        assert ledger.remaining < 0.25
        assert len(study.trials) < 300
        last = study.trials[-1]  # the trial that would have overrun: pruned before it ran
        assert last.state == TrialState.PRUNED and last.system_attrs.get(SKIPPED_ATTR)


def test_soft_budget_overruns_where_the_hard_one_does_not() -> None:
    overruns = []
    for seed in range(4):
        sampler, study = _run(6.0, seed, report=False, overrun_risk=None)
        overruns.append(sampler.ledger(study).overrun)
        assert sampler.ledger(study).spent >= 6.0  # soft: it runs until the budget is spent
        assert sampler.ledger(study).overrun <= 3.2  # by at most one trial's cost
    assert max(overruns) > 0.0


def test_reported_costs_keep_within_the_budget_most_of_the_time() -> None:
    within = 0
    for seed in range(6):
        sampler, study = _run(8.0, seed, report=True, overrun_risk=0.05)
        ledger = sampler.ledger(study)
        within += ledger.spent <= 8.0
        assert ledger.overrun < 3.2  # never more than one trial
    assert within >= 5


def test_the_study_shares_one_overrun_risk_among_its_trials() -> None:
    for seed in range(3):
        _, study = _run(8.0, seed, report=True, overrun_risk=0.05)
        chances = [float(t.system_attrs.get(OVERRUN_CHANCE_ATTR, 0.0)) for t in study.trials]
        assert any(c > 0.0 for c in chances)  # the model's proposals record theirs
        # Each proposal gets what its predecessors left (at least a thousandth of the risk).
        taken = 0.0
        for trial, chance in zip(study.trials, chances, strict=True):
            allowed = max(0.05 - taken, 0.05e-3)
            assert chance <= allowed * (1.0 + 1e-6), (trial.number, chance, allowed)
            taken += chance
    trials = study.trials
    assert risk_left(0.05, trials, trials[-1]) == pytest.approx(
        max(0.05 - sum(chances[:-1]), 0.05e-3)
    )


def test_the_start_up_design_gives_way_to_the_model_when_its_point_does_not_fit() -> None:
    # A budget that buys a few of the ten start-up trials: a design point that would overrun
    # it is replaced by the model's proposal, which fits (or the study ends).
    import optuna_costbo._sampler.suggest as suggest_mod

    proposed: list[int] = []
    real = suggest_mod.propose

    def spy(request: Any, *args: Any, **kwargs: Any) -> Any:
        proposed.append(len(request.y))
        return real(request, *args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(suggest_mod, "propose", spy)
        sampler, study = _run(3.0, 0, report=False, overrun_risk=0.05, n_startup_trials=10)
    assert sampler.ledger(study).spent <= 3.0
    assert proposed and min(proposed) < 10  # the model proposed inside the start-up
    assert sampler.stop_reason(study) is not None


def test_the_rollout_plans_with_the_hard_rule() -> None:
    import optuna_costbo._numerics.acquisition.rollout as rollout_mod

    seen: list[bool] = []
    real = rollout_mod.rollout_choice

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["last_overruns"])
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(rollout_mod, "rollout_choice", spy)
        _run(12.0, 0, report=False, overrun_risk=0.05, n_startup_trials=3)
        hard = list(seen)
        seen.clear()
        _run(12.0, 0, report=False, overrun_risk=None, n_startup_trials=3)
    assert hard and not any(hard)  # every trajectory: a step only if the budget covers it
    assert seen and all(seen)  # the soft budget's rule: a step whenever budget is left


def test_auto_is_hard_for_costs_in_the_users_units_and_soft_for_the_wall_clock() -> None:
    assert overrun_risk("auto", measured=False) == 0.05
    assert overrun_risk("auto", measured=True) is None
    assert overrun_risk(None, measured=False) is None
    assert overrun_risk(0.2, measured=True) == 0.2
    _, study = _run(3.0, 0, report=True, overrun_risk="auto")
    assert study.user_attrs[RISK_ATTR] == 0.05
    measured = CostRolloutSampler(budget=0.05, seed=0, overrun_risk="auto")
    wall = optuna.create_study(sampler=measured)
    wall.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=50)
    assert wall.user_attrs[RISK_ATTR] is None


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, "hard", True, math.nan])
def test_a_bad_risk_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="overrun_risk must be 'auto', None"):
        CostRolloutSampler(budget=1.0, overrun_risk=bad)


def test_the_budget_pruner_stops_a_trial_before_it_would_cross_a_hard_budget() -> None:
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        spent = 0.0
        for step in range(10):
            spent += 0.3
            report_cost(trial, spent)
            trial.report((x - 0.4) ** 2 + 1.0 / (step + 1), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return (x - 0.4) ** 2

    for risk in (0.05, None):
        sampler = CostRolloutSampler(budget=10.0, seed=0, overrun_risk=risk, n_startup_trials=2)
        study = optuna.create_study(sampler=sampler, pruner=CostBudgetPruner())
        study.optimize(objective, n_trials=20)
        spent = sampler.ledger(study).spent
        if risk is None:
            assert spent > 10.0  # soft: pruned once it has crossed
        else:
            assert spent <= 10.0 + 1e-9  # hard: pruned before the step that would cross


def test_remaining_spent_and_overrun_agree_across_the_api_the_attrs_and_the_bar() -> None:
    from optuna_costbo.progress import CostProgressBar

    for risk in (None, 0.05):
        sampler = CostRolloutSampler(budget=5.0, seed=0, cost_fn=_cost, overrun_risk=risk)
        study = optuna.create_study(sampler=sampler)
        bar = CostProgressBar(file=io.StringIO())
        study.optimize(_objective(report=False), callbacks=[bar], n_trials=300)
        ledger = sampler.ledger(study)
        attrs = study.user_attrs
        assert sampler.remaining_budget(study) == ledger.remaining == attrs[REMAINING_ATTR]
        assert ledger.spent == attrs[SPENT_ATTR] == bar.spent
        assert ledger.overrun == attrs[OVERRUN_ATTR] == max(ledger.spent - 5.0, 0.0)
        assert ledger.remaining == max(5.0 - ledger.spent, 0.0)
        assert bar.closed  # spent, or stopped short of it
        if risk is None:
            assert ledger.overrun > 0.0 and ledger.remaining == 0.0
        else:
            assert ledger.overrun == 0.0


def test_the_default_is_auto_hard_where_costs_are_reported() -> None:
    assert inspect.signature(CostRolloutSampler).parameters["overrun_risk"].default == "auto"
    sampler = CostRolloutSampler(budget=3.0, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_objective(report=True), n_trials=300)
    assert study.user_attrs[RISK_ATTR] == 0.05


def _epochs(trial: optuna.Trial) -> float:
    epochs = trial.suggest_int("epochs", 1, 5)
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    report_cost(trial, float(epochs))  # priced in epochs
    return 1.0 / epochs + (math.log10(lr) + 2.5) ** 2


def test_an_epochs_priced_study_keeps_within_its_budget_by_default() -> None:
    within = {"auto": 0, None: 0}
    for risk in within:
        for seed in range(5):
            sampler = CostRolloutSampler(budget=10.0, seed=seed, overrun_risk=risk)
            study = optuna.create_study(sampler=sampler)
            study.optimize(_epochs, n_trials=100)
            within[risk] += sampler.ledger(study).spent <= 10.0
    assert within["auto"] >= 4
    assert within[None] <= 2  # the soft budget's last trial overruns it


@pytest.mark.parametrize("price", [1.0, 0.25])
def test_a_fixed_price_buys_every_trial_the_budget_pays_for(price: float) -> None:
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", -5.0, 5.0)
        report_cost(trial, price)
        return (x - 1.0) ** 2

    sampler = CostRolloutSampler(budget=30.0 * price, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=100)
    done = study.get_trials(states=[TrialState.COMPLETE])
    assert len(done) == 30
    assert sampler.ledger(study).spent == pytest.approx(30.0 * price, rel=1e-12)
    assert "the budget is spent" in str(sampler.stop_reason(study))


@pytest.mark.parametrize("example", ["ask_and_tell.py", "constraints.py"])
def test_the_examples_keep_within_a_small_budget(example: str, tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    storage = f"sqlite:///{tmp_path / 'x.db'}"
    subprocess.run(
        [sys.executable, str(repo / "examples" / example), "--budget", "5", "--storage", storage],
        check=True,
        capture_output=True,
        cwd=repo,
    )
    study = optuna.load_study(study_name=None, storage=storage)
    assert 0.0 < study.user_attrs[SPENT_ATTR] <= 5.0


def test_imported_trials_take_none_of_the_risk_and_unpriced_ones_no_cost() -> None:
    # Trials copied from a hard-budget study carry the overrun chances they took there, and a
    # trial added without a cost has none: neither may shape this study's budget.
    from optuna.distributions import FloatDistribution

    from optuna_costbo._ledger.keys import OVERRUN_CHANCE_ATTR
    from optuna_costbo._sampler.snapshot import risk_left

    dist = {"x": FloatDistribution(0.0, 1.0)}
    old = [
        optuna.trial.create_trial(
            params={"x": x},
            distributions=dist,
            value=(x - 0.3) ** 2,
            user_attrs={"cost": 1.0 + 0.5 * x},
            system_attrs={OVERRUN_CHANCE_ATTR: 0.05},
        )
        for x in (0.1, 0.5, 0.9)
    ]
    unpriced = optuna.trial.create_trial(params={"x": 0.7}, distributions=dist, value=0.16)
    sampler = CostRolloutSampler(budget=5.0, seed=0, overrun_risk=0.05)
    study = optuna.create_study(sampler=sampler)
    study.add_trials([*old, unpriced])

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0 + 0.5 * x)
        return (x - 0.3) ** 2

    study.optimize(objective)
    ran = [t for t in study.trials[4:] if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(ran) >= 3 and 4.0 <= sampler.ledger(study).spent <= 5.0
    frozen = study.trials
    assert risk_left(0.05, frozen[:4], frozen[-1]) == pytest.approx(0.05 * 1e-3)  # all taken
    imported = {t._trial_id for t in frozen[:4]}
    rule = lambda t: t._trial_id in imported  # noqa: E731
    assert risk_left(0.05, frozen[:4], frozen[-1], rule) == pytest.approx(0.05)


def test_parallel_threads_under_a_hard_budget_never_overrun_with_a_known_cost() -> None:
    # Each proposal reserves what the other thread's running trial is predicted to cost (exactly,
    # with cost_fn), so two workers together stay within the budget as one does.
    overlapped = 0
    for seed in range(8):
        sampler = CostRolloutSampler(budget=12.0, seed=seed, cost_fn=_cost, overrun_risk=0.05)
        study = optuna.create_study(sampler=sampler)
        study.optimize(_objective(False), n_trials=300, n_jobs=2)
        ledger = sampler.ledger(study)
        assert ledger.spent <= 12.0 and ledger.overrun == 0.0, (seed, ledger)
        assert ledger.n_finished >= 6 and sampler.stop_reason(study) is not None
        spans = sorted((t.datetime_start, t.datetime_complete) for t in study.trials)
        overlapped += sum(b[0] < a[1] for a, b in itertools.pairwise(spans))
    assert overlapped > 0  # the two threads did run trials at the same time
