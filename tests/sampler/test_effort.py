"""The effort rule (full or quick suggestion), the quick route, and the default charge."""

from __future__ import annotations

import optuna
from optuna.distributions import FloatDistribution
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.sampler_time import charges_sampler_time
from optuna_costbo._sampler.effort import EffortRule


STUDY = 0


def _rule_after(share: float, trial_seconds: float, full_seconds: float) -> EffortRule:
    """A rule that has seen one full suggestion of ``full_seconds`` and trials worth
    ``trial_seconds``: the fake clock is the numbers handed to it."""
    rule = EffortRule(share)
    assert rule.route(STUDY, remaining=1e9) == "full"  # nothing measured yet
    rule.record_suggestion(STUDY, "full", full_seconds)
    rule.add_trial_seconds(STUDY, trial_seconds)
    return rule


def test_quick_route_when_a_full_suggestion_costs_more_than_the_trials_paid_for() -> None:
    # share 0.25: full suggestions may take a third of the trials' seconds.
    rule = _rule_after(0.25, trial_seconds=0.3, full_seconds=0.2)
    assert rule.credit(STUDY) == pytest.approx(0.1 - 0.2)
    assert rule.route(STUDY, remaining=1e9) == "quick"
    # Cheap trials go on; once they have paid for another full suggestion, it is full again.
    for _ in range(4):
        rule.record_suggestion(STUDY, "quick", 0.001)  # quick ones are not charged to credit
        rule.add_trial_seconds(STUDY, 0.3)
    assert rule.credit(STUDY) == pytest.approx(0.5 - 0.2)
    assert rule.route(STUDY, remaining=1e9) == "full"
    assert rule.counts(STUDY) == {"full": 1, "quick": 4}


def test_full_route_when_trials_are_long_and_quick_when_the_budget_ends() -> None:
    rule = _rule_after(0.25, trial_seconds=30.0, full_seconds=0.2)
    assert rule.route(STUDY, remaining=100.0) == "full"
    # A full suggestion would take more than a quarter of what remains.
    assert rule.route(STUDY, remaining=0.5) == "quick"


def test_share_one_always_takes_the_full_route() -> None:
    rule = _rule_after(1.0, trial_seconds=0.0, full_seconds=10.0)
    assert rule.route(STUDY, remaining=1e-3) == "full"


def test_studies_are_accounted_apart() -> None:
    rule = _rule_after(0.25, trial_seconds=0.0, full_seconds=1.0)
    assert rule.route(STUDY, remaining=1e9) == "quick"
    assert rule.route(STUDY + 1, remaining=1e9) == "full"


@pytest.mark.parametrize("share", [0.0, -0.1, 1.5, float("nan"), "0.2"])
def test_bad_share_is_rejected(share: object) -> None:
    with pytest.raises(ValueError, match="max_sampler_share must be a number in \\(0, 1\\]"):
        CostRolloutSampler(budget=1.0, max_sampler_share=share)  # type: ignore[arg-type]


def test_bad_charge_option_is_rejected() -> None:
    with pytest.raises(ValueError, match="charge_sampler_time must be None, True or False"):
        CostRolloutSampler(budget=1.0, charge_sampler_time="yes")  # type: ignore[arg-type]


def _finished(source: str | None) -> optuna.trial.FrozenTrial:
    attrs = {} if source is None else {COST_SOURCE_ATTR: source}
    return optuna.trial.create_trial(
        params={"x": 0.5},
        distributions={"x": FloatDistribution(0.0, 1.0)},
        value=1.0,
        system_attrs=attrs,
    )


def test_default_charge_follows_where_the_costs_come_from() -> None:
    wall, reported = _finished("wall_clock"), _finished("reported")
    assert charges_sampler_time(None, False, [_finished(None), wall]) is True
    assert charges_sampler_time(None, False, [reported, wall]) is False
    assert charges_sampler_time(None, True, [wall]) is False  # a cost_fn is not wall-clock
    assert charges_sampler_time(None, False, []) is None
    assert charges_sampler_time(True, True, [reported]) is True
    assert charges_sampler_time(False, False, [wall]) is False


def _run(seed: int, **options: object) -> tuple[CostRolloutSampler, optuna.Study]:
    sampler = CostRolloutSampler(budget=1e6, seed=seed, n_startup_trials=3, **options)  # type: ignore[arg-type]
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", -1.0, 1.0)
        n = trial.suggest_int("n", 1, 8)
        kind = trial.suggest_categorical("kind", ["a", "b"])
        return (x - 0.3) ** 2 + 0.1 * n + (0.5 if kind == "a" else 0.0)

    study.optimize(objective, n_trials=12)
    return sampler, study


def test_a_charged_sampler_on_instant_trials_takes_the_quick_route() -> None:
    # Trials of microseconds never pay for a full suggestion of milliseconds after the first.
    sampler, study = _run(0, max_sampler_share=1e-6)
    assert sampler._effort.counts(study._study_id) == {"full": 1, "quick": 8}
    params = [t.params for t in study.trials]
    assert len({tuple(sorted(p.items())) for p in params}) == len(params)  # no repeats
    for p in params:
        assert -1.0 <= p["x"] <= 1.0 and p["n"] in range(1, 9) and p["kind"] in ("a", "b")


def test_quick_route_is_deterministic_for_a_seed() -> None:
    # Measured costs differ from run to run, so the cost model does: use "ei" (no costs).
    runs = [_run(0, max_sampler_share=1e-6, acquisition="ei") for _ in range(2)]
    assert runs[0][0]._effort.counts(runs[0][1]._study_id) == {"full": 1, "quick": 8}
    assert [t.params for t in runs[0][1].trials] == [t.params for t in runs[1][1].trials]


def test_uncharged_or_share_one_keeps_the_full_route() -> None:
    for options in ({"charge_sampler_time": False, "max_sampler_share": 1e-6}, {}):
        if not options:
            options = {"max_sampler_share": 1.0}
        sampler, study = _run(1, **options)
        assert sampler._effort.counts(study._study_id)["quick"] == 0


def test_reported_costs_are_not_charged_sampler_time_by_default() -> None:
    sampler = CostRolloutSampler(budget=1e6, seed=0, n_startup_trials=2, max_sampler_share=1e-6)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0 + x)
        return x

    study.optimize(objective, n_trials=6)
    assert sampler._effort.counts(study._study_id) == {"full": 4, "quick": 0}


def test_quick_suggestions_refit_when_the_data_grew_by_a_quarter() -> None:
    rule = EffortRule(0.1)
    rule.record_suggestion(STUDY, "full", 0.2, n=20)
    assert not rule.refit_due(STUDY, 24)
    assert rule.refit_due(STUDY, 25)
    rule.record_suggestion(STUDY, "quick", 0.01, n=25, refit=True)
    assert not rule.refit_due(STUDY, 30)
    assert rule.refit_due(STUDY, 31)
    rule.record_suggestion(STUDY, "quick", 0.01, n=31)  # no refit: the count stays
    assert rule.refit_due(STUDY, 31)


def test_overhead_follows_recent_sampler_seconds_per_trial() -> None:
    rule = EffortRule(0.1)
    assert rule.overhead(STUDY) == 0.0
    for _ in range(60):
        rule.add_trial_seconds(STUDY, 0.05, sampler_seconds=0.01)
    assert rule.overhead(STUDY) == pytest.approx(0.01, rel=1e-3)
