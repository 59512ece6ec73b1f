"""The effort rule (full or quick suggestion), the quick route, and the default charge."""

from __future__ import annotations

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.units import SamplerTimeCharge
from optuna_costbo._ledger.units import charges_sampler_time
from optuna_costbo._numerics.quick import QUEUE
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import Route
from optuna_costbo._sampler.effort import EffortRule


STUDY = 0
FULL, QUICK = Route(), Route(quick=True)


def _with_share(sampler: CostRolloutSampler, share: float) -> CostRolloutSampler:
    """``sampler`` with full suggestions allowed ``share`` of the wall clock (the package's
    share is fixed; tests move it to reach the quick route on trials of any length)."""
    sampler._suggester.effort = EffortRule(share)
    return sampler


def _rule_after(share: float, trial_seconds: float, full_seconds: float) -> EffortRule:
    """A rule that has seen one full suggestion of ``full_seconds`` and trials worth
    ``trial_seconds``: the fake clock is the numbers handed to it."""
    rule = EffortRule(share)
    assert rule.plan(STUDY, 0, remaining=1e9) == FULL  # nothing measured yet
    rule.record_suggestion(STUDY, FULL, full_seconds, 0)
    rule.add_trial_seconds(STUDY, trial_seconds)
    return rule


def test_quick_route_when_a_full_suggestion_costs_more_than_the_trials_paid_for() -> None:
    # share 0.25: full suggestions may take a third of the trials' seconds.
    rule = _rule_after(0.25, trial_seconds=0.3, full_seconds=0.2)
    assert rule.credit(STUDY) == pytest.approx(0.1 - 0.2)
    assert not rule.full_allowed(STUDY, remaining=1e9)
    # Cheap trials go on; once they have paid for another full suggestion, it is full again.
    for _ in range(4):
        rule.record_suggestion(STUDY, QUICK, 0.001, 0)  # quick ones are not charged to credit
        rule.add_trial_seconds(STUDY, 0.3)
    assert rule.credit(STUDY) == pytest.approx(0.5 - 0.2)
    assert rule.full_allowed(STUDY, remaining=1e9)
    assert rule.counts(STUDY) == {"full": 1, "quick": 4}


def test_full_route_when_trials_are_long_and_quick_when_the_budget_ends() -> None:
    rule = _rule_after(0.25, trial_seconds=30.0, full_seconds=0.2)
    assert rule.full_allowed(STUDY, remaining=100.0)
    # A full suggestion would take more than a quarter of what remains.
    assert not rule.full_allowed(STUDY, remaining=0.5)


def test_share_one_always_takes_the_full_route() -> None:
    rule = _rule_after(1.0, trial_seconds=0.0, full_seconds=10.0)
    assert rule.full_allowed(STUDY, remaining=1e-3)


def test_studies_are_accounted_apart() -> None:
    rule = _rule_after(0.25, trial_seconds=0.0, full_seconds=1.0)
    assert not rule.full_allowed(STUDY, remaining=1e9)
    assert rule.full_allowed(STUDY + 1, remaining=1e9)


def _finished(source: str | None) -> optuna.trial.FrozenTrial:
    attrs = {} if source is None else {COST_SOURCE_ATTR: source}
    return optuna.trial.create_trial(
        params={"x": 0.5},
        distributions={"x": FloatDistribution(0.0, 1.0)},
        value=1.0,
        system_attrs=attrs,
    )


def test_the_charge_follows_where_the_costs_come_from() -> None:
    wall, reported, known = _finished("wall_clock"), _finished("reported"), _finished("cost_fn")
    assert charges_sampler_time([_finished(None), wall]) is True
    assert charges_sampler_time([reported, wall]) is False  # the first priced trial decides
    assert charges_sampler_time([known]) is False
    assert SamplerTimeCharge(has_cost_fn=True).resolve(0, [wall]) is False  # a cost_fn is not
    assert charges_sampler_time([]) is True  # nothing priced yet: as measured


def _run(
    seed: int, share: float | None = None, **options: object
) -> tuple[CostRolloutSampler, optuna.Study]:
    sampler = CostRolloutSampler(budget=1e6, seed=seed, n_startup_trials=3, **options)  # type: ignore[arg-type]
    if share is not None:
        _with_share(sampler, share)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", -1.0, 1.0)
        n = trial.suggest_int("n", 1, 8)
        kind = trial.suggest_categorical("kind", ["a", "b"])
        return (x - 0.3) ** 2 + 0.1 * n + (0.5 if kind == "a" else 0.0)

    study.optimize(objective, n_trials=12)
    return sampler, study


def _counts(sampler: CostRolloutSampler, study: optuna.Study) -> dict[str, int]:
    return sampler._suggester.effort.counts(study._study_id)


def test_a_charged_sampler_on_instant_trials_takes_the_quick_route() -> None:
    # Trials of microseconds never pay for a full suggestion of milliseconds after the first.
    sampler, study = _run(0, share=1e-6)
    assert _counts(sampler, study) == {"full": 1, "quick": 8}
    params = [t.params for t in study.trials]
    assert len({tuple(sorted(p.items())) for p in params}) == len(params)  # no repeats
    for p in params:
        assert -1.0 <= p["x"] <= 1.0 and p["n"] in range(1, 9) and p["kind"] in ("a", "b")


def test_quick_route_is_deterministic_for_a_seed() -> None:
    # Measured costs differ from run to run, so the cost model does: use "ei" (no costs).
    runs = [_run(0, share=1e-6, acquisition="ei") for _ in range(2)]
    assert _counts(*runs[0]) == {"full": 1, "quick": 8}
    assert [t.params for t in runs[0][1].trials] == [t.params for t in runs[1][1].trials]


def test_share_one_keeps_the_full_route() -> None:
    sampler, study = _run(1, share=1.0)
    assert _counts(sampler, study)["quick"] == 0


def test_a_known_cost_is_not_charged_sampler_time() -> None:
    sampler, study = _run(1, share=1e-6, cost_fn=lambda p: 1.0 + p["n"])
    assert _counts(sampler, study)["quick"] == 0
    assert sampler.ledger(study).spent == pytest.approx(
        sum(1.0 + t.params["n"] for t in study.trials)
    )


def test_reported_costs_are_not_charged_sampler_time() -> None:
    sampler = _with_share(CostRolloutSampler(budget=1e6, seed=0, n_startup_trials=2), 1e-6)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0 + x)
        return x

    study.optimize(objective, n_trials=6)
    assert _counts(sampler, study) == {"full": 4, "quick": 0}


def test_quick_suggestions_refit_when_the_data_grew_by_a_quarter() -> None:
    rule = EffortRule(0.1)
    rule.record_suggestion(STUDY, FULL, 0.2, n=20)
    assert not rule.refit_due(STUDY, 24)
    assert rule.refit_due(STUDY, 25)
    rule.record_suggestion(STUDY, Route(quick=True, refit=True), 0.01, n=25)
    assert not rule.refit_due(STUDY, 30)
    assert rule.refit_due(STUDY, 31)
    rule.record_suggestion(STUDY, QUICK, 0.01, n=31)  # no refit: the count stays
    assert rule.refit_due(STUDY, 31)


def test_a_plan_is_the_route_it_names() -> None:
    rule = EffortRule(0.25)
    assert rule.plan(STUDY, 10, remaining=None) == FULL  # the sampler's time is not charged
    rule.record_suggestion(STUDY, FULL, 1.0, n=10)
    rule.add_trial_seconds(STUDY, 0.1, sampler_seconds=0.5)
    plan = rule.plan(STUDY, 13, remaining=1e9)
    assert plan.quick and plan.refit and plan.overhead == pytest.approx(0.1)


def test_overhead_follows_recent_sampler_seconds_per_trial() -> None:
    rule = EffortRule(0.1)
    assert rule.overhead(STUDY) == 0.0
    for _ in range(60):
        rule.add_trial_seconds(STUDY, 0.05, sampler_seconds=0.01)
    assert rule.overhead(STUDY) == pytest.approx(0.01, rel=1e-3)


def _queued_proposal(n: int) -> Proposal:
    """A quick proposal at 0.0 whose queue holds the points 1.0 .. n (value -k)."""
    queue = tuple((np.array([float(k)]), -float(k)) for k in range(1, n + 1))
    return Proposal(
        z=np.array([0.0]), value=0.0, objective_model=None, cost_model=None, queue=queue
    )  # type: ignore[arg-type]


def _completed(*values: float) -> list[optuna.trial.FrozenTrial]:
    return [
        optuna.trial.create_trial(
            params={"x": 0.5}, distributions={"x": FloatDistribution(0.0, 1.0)}, value=v
        )
        for v in values
    ]


def test_one_quick_suggestion_serves_as_many_trials_as_its_seconds_need() -> None:
    # share 0.1: a trial's own second pays for 1/9 s of the sampler's.
    rule = _rule_after(0.1, trial_seconds=0.0, full_seconds=1.0)
    assert rule.batch(STUDY) == 1  # nothing measured yet
    for _ in range(10):
        rule.add_trial_seconds(STUDY, 0.009)  # 9 ms trials pay for 1 ms each
    rule.keep_queue(STUDY, "space", _queued_proposal(QUEUE - 1), 0.0025, 1.0)
    assert rule.batch(STUDY) == 3  # ceil(2.5 ms / 1 ms)
    trials = _completed(2.0, 1.0)
    taken = [rule.take_queued(STUDY, "space", trials, 1.0, 1e9) for _ in range(3)]
    assert [float(p.z[0]) for p in taken[:2] if p is not None] == [1.0, 2.0]
    assert taken[2] is None  # the batch is served: a fresh suggestion
    rule.keep_queue(STUDY, "space", _queued_proposal(QUEUE - 1), 1.0, 1.0)
    assert rule.batch(STUDY) == QUEUE  # at most QUEUE points from one fit
    assert rule.counts(STUDY) == {"full": 1, "quick": 2}


def test_the_queue_is_dropped_when_the_data_change() -> None:
    rule = _rule_after(0.1, trial_seconds=0.0, full_seconds=1.0)
    rule.add_trial_seconds(STUDY, 0.009)
    for change in ("better", "space", "full"):
        rule.keep_queue(STUDY, "space", _queued_proposal(QUEUE - 1), 1.0, 1.0)
        trials, key, remaining = _completed(1.0, 1.5), "space", 1e9
        if change == "better":
            trials = _completed(1.0, 0.5)  # a trial improved on the best value
        elif change == "space":
            key = "another space"
        else:
            rule.add_trial_seconds(STUDY, 100.0)  # the trials paid for a full suggestion
        assert rule.take_queued(STUDY, key, trials, 1.0, remaining) is None
        assert rule.take_queued(STUDY, "space", _completed(1.0), 1.0, remaining) is None  # dropped
    # Maximizing: the sign turns values around.
    rule = _rule_after(0.1, trial_seconds=0.0, full_seconds=1.0)
    rule.add_trial_seconds(STUDY, 0.009)
    rule.keep_queue(STUDY, "space", _queued_proposal(QUEUE - 1), 1.0, -2.0)
    assert rule.take_queued(STUDY, "space", _completed(2.0, 1.0), -1.0, 1e9) is not None
    assert rule.take_queued(STUDY, "space", _completed(3.0), -1.0, 1e9) is None
