"""Warm starts: trials added to a study (``add_trials``, ``create_trial``) inform the models and
are not charged; trials the sampler starts (enqueued ones included) are (``_ledger.runs``)."""

from __future__ import annotations

import io
from pathlib import Path

import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostBudgetPruner
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import IMPORTED_ATTR
from optuna_costbo._ledger.keys import IMPORTED_TRIALS_ATTR
from optuna_costbo._ledger.keys import RUN_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.ledger import compute_ledger
from optuna_costbo._ledger.ledger import imported_rule
from optuna_costbo._ledger.ledger import storage_trials


optuna.logging.set_verbosity(optuna.logging.ERROR)

X = {"x": FloatDistribution(-1.0, 1.0)}


def _unit_cost(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -1.0, 1.0)
    report_cost(trial, 1.0)
    return (x - 0.3) ** 2


def _made(n: int) -> list[optuna.trial.FrozenTrial]:
    """``n`` trials made by hand, each of reported cost 1."""
    return [
        optuna.trial.create_trial(
            value=(x - 0.3) ** 2, params={"x": x}, distributions=X, user_attrs={"cost": 1.0}
        )
        for x in [-1.0 + 2.0 * i / max(n - 1, 1) for i in range(n)]
    ]


def test_ten_imported_trials_leave_a_budget_of_five_to_new_trials() -> None:
    # The case: 10 imported trials of cost 1 used to be charged 10 of a budget of 5.
    sampler = CostRolloutSampler(budget=5.0, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.add_trials(_made(10))
    study.optimize(_unit_cost, n_trials=20)
    ledger = sampler.ledger(study)
    assert len(study.trials) - 10 >= 5
    assert ledger.spent <= 6.0
    assert (ledger.n_finished, ledger.n_imported, ledger.imported_cost) == (5, 10, 10.0)
    attrs = study.user_attrs
    assert attrs[SPENT_ATTR] == ledger.spent
    assert (attrs[IMPORTED_ATTR], attrs[IMPORTED_TRIALS_ATTR]) == (10.0, 10)
    # The models took over at once (10 completed trials), near the imported trials' best.
    assert min(abs(t.params["x"] - 0.3) for t in study.trials[10:]) < 0.1


def test_trials_copied_from_a_study_in_another_file_with_the_same_ids(tmp_path: Path) -> None:
    # Yesterday's study, run by the sampler (its trials carry yesterday's tokens), in its own
    # file: today's trials get the same trial ids there. Neither counts as run today.
    old = optuna.create_study(
        storage=f"sqlite:///{tmp_path / 'old.db'}", sampler=CostRolloutSampler(budget=4.0, seed=1)
    )
    old.optimize(_unit_cost)
    sampler = CostRolloutSampler(budget=3.0, seed=2)
    new = optuna.create_study(storage=f"sqlite:///{tmp_path / 'new.db'}", sampler=sampler)
    new.add_trials(old.trials)
    assert [t._trial_id for t in new.trials] == [t._trial_id for t in old.trials]
    assert all(RUN_ATTR in t.system_attrs for t in new.trials)  # copied, not valid here
    new.optimize(_unit_cost)
    ledger = sampler.ledger(new)
    assert (ledger.spent, ledger.n_finished, ledger.n_imported) == (3.0, 3, 4)
    # Another process (a fresh storage object) agrees: today's tokens are read from the study.
    url = f"sqlite:///{tmp_path / 'new.db'}"
    again = optuna.load_study(study_name=new.study_name, storage=url)
    assert CostRolloutSampler(budget=3.0).ledger(again) == ledger


def test_enqueued_trials_are_charged_and_added_ones_are_not() -> None:
    sampler = CostRolloutSampler(budget=3.0, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.enqueue_trial({"x": 0.3})
    study.add_trials(_made(2))
    study.optimize(_unit_cost)
    ledger = sampler.ledger(study)
    enqueued = [t for t in study.trials if t.params["x"] == 0.3]
    assert enqueued and RUN_ATTR in enqueued[0].system_attrs
    assert (ledger.spent, ledger.n_finished, ledger.n_imported) == (3.0, 3, 2)


def test_a_study_the_sampler_never_ran_charges_every_trial_to_a_pruner() -> None:
    # CostBudgetPruner or CostProgressBar with another sampler: nothing marks runs there. The
    # sampler's own ledger charges only what it started: nothing.
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.add_trials(_made(3))
    study.optimize(_unit_cost, n_trials=2)
    ledger = charge_and_sum(study, storage_trials(study), 10.0, "cost")
    assert (ledger.spent, ledger.n_finished, ledger.n_imported) == (5.0, 5, 0)
    assert imported_rule(study, study.trials) is None
    ledger = CostRolloutSampler(budget=10.0).ledger(study)
    assert (ledger.spent, ledger.n_finished, ledger.n_imported) == (0.0, 0, 5)
    pruner_study = optuna.create_study(pruner=CostBudgetPruner(4.5))
    pruner_study.add_trials(_made(3))
    trial = pruner_study.ask()
    trial.set_user_attr("cost", 2.0)
    assert pruner_study.pruner.prune(pruner_study, pruner_study.trials[-1])


def test_the_incremental_ledger_counts_imports_as_the_full_sum() -> None:
    sampler = CostRolloutSampler(budget=100.0, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.add_trials(_made(2))
    sampler.ledger(study)  # cached before any run: nothing was imported yet
    study.optimize(_unit_cost, n_trials=3)
    study.add_trials(_made(3))
    study.optimize(_unit_cost, n_trials=2)
    trials = storage_trials(study)
    rule = imported_rule(study, trials)
    assert rule is not None
    full = compute_ledger(trials, 100.0, "cost", False, imported=rule)
    assert charge_and_sum(study, trials, 100.0, "cost", False) == full
    assert (full.spent, full.n_finished, full.n_imported, full.imported_cost) == (5.0, 5, 5, 5.0)


def test_the_progress_bar_shows_imported_trials() -> None:
    pytest.importorskip("tqdm")
    from optuna_costbo.progress import CostProgressBar

    out = io.StringIO()
    study = optuna.create_study(sampler=CostRolloutSampler(budget=2.0, seed=0))
    study.add_trials(_made(4))
    with CostProgressBar(file=out) as bar:
        study.optimize(_unit_cost, callbacks=[bar])
    assert "trials=2, imported=4" in out.getvalue()
    assert bar.spent == 2.0


def test_an_imported_failed_trial_is_not_charged_to_a_heartbeat() -> None:
    sampler = CostRolloutSampler(budget=2.0, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.add_trial(optuna.trial.create_trial(state=TrialState.FAIL, params={}, distributions={}))
    study.optimize(_unit_cost)
    assert "cost" not in study.trials[0].user_attrs
    assert sampler.ledger(study).n_imported == 1
