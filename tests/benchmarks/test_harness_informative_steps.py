"""The informative-steps pruner experiment: its rank correlation against a plain reference,
and its veto, on studies whose curves are known."""

from __future__ import annotations

from _studies import reporting_study
import numpy as np
import optuna
import pytest

from benchmarks.harness import methods
from benchmarks.harness.informative_steps import InformativeSteps
from benchmarks.harness.informative_steps import step_rank_correlation
from optuna_costbo import CostBudgetPruner


optuna.logging.set_verbosity(optuna.logging.WARNING)


class _Always(optuna.pruners.BasePruner):
    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        return True


def test_the_rank_correlation_is_spearmans() -> None:
    rng = np.random.default_rng(0)
    curves = rng.random((12, 3))  # (n, S)
    curves[:, 1] = curves[:, 2] + 0.3 * rng.random(12)  # step 2 close to the final value
    study = reporting_study(curves)
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    for step in (1, 2):
        rho, n = step_rank_correlation(trials, step)
        ranks = np.argsort(np.argsort(curves[:, [step - 1, 2]], axis=0), axis=0)  # (n, 2)
        assert n == 12
        assert rho == pytest.approx(np.corrcoef(ranks[:, 0], ranks[:, 1])[0, 1])


def test_a_prune_stands_only_where_the_step_ranks_the_finished_trials() -> None:
    rng = np.random.default_rng(1)
    final = rng.random(8)  # (n,)
    curves = np.column_stack([rng.random(8), final + 0.01, final])  # step 1 noise, 2 informative
    study = reporting_study(curves)
    pruner = InformativeSteps(_Always())
    trial = study.ask()
    trial.report(0.5, 1)
    frozen = study._storage.get_trial(trial._trial_id)
    rho, _ = step_rank_correlation(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)), 1)
    assert rho < 0.5 and pruner.prune(study, frozen) is False and pruner.vetoes == 1
    trial.report(0.5, 2)
    frozen = study._storage.get_trial(trial._trial_id)
    assert pruner.prune(study, frozen) is True
    # Without evidence (fewer than 5 finished trials) the wrapped pruner decides.
    small = reporting_study(curves[:3])
    t = small.ask()
    t.report(0.5, 1)
    assert InformativeSteps(_Always()).prune(small, small._storage.get_trial(t._trial_id))


def test_the_method_variant_wraps_the_pruner_inside_the_budget_pruner() -> None:
    method = methods.resolve("rollout+hyperband-informative")
    pruner = methods.make_pruner(method, 27)
    assert isinstance(pruner, CostBudgetPruner)
    inner = pruner._wrapped
    assert isinstance(inner, InformativeSteps)
    assert isinstance(inner.pruner, optuna.pruners.HyperbandPruner)
