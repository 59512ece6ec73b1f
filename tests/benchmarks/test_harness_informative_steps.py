"""The informative-steps pruner experiment: its rank correlation against a plain reference,
and its veto, on studies whose curves are known."""

from __future__ import annotations

from _studies import better_half_reversed
from _studies import reporting_study
import numpy as np
import optuna
import pytest

from benchmarks.harness import methods
from benchmarks.harness.informative_steps import BetterHalfSteps
from benchmarks.harness.informative_steps import InformativeSteps
from benchmarks.harness.informative_steps import better_half_rank_correlation
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


def _ask_at(study: optuna.Study, step: int) -> optuna.trial.FrozenTrial:
    trial = study.ask()
    trial.report(0.5, step)
    return study._storage.get_trial(trial._trial_id)


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_the_better_half_correlation_is_spearmans_over_the_better_half(direction: str) -> None:
    rng = np.random.default_rng(2)
    curves = rng.random((11, 3))  # (n, S)
    study = reporting_study(curves, direction)
    trials = study.get_trials()
    rho, n = better_half_rank_correlation(trials, 1, study.direction)
    final = curves[:, 2]
    keep = np.argsort(final if direction == "minimize" else -final)[:5]  # (5,) the best 5 of 11
    ranks = np.argsort(np.argsort(curves[keep][:, [0, 2]], axis=0), axis=0)  # (5, 2)
    assert n == 5
    assert rho == pytest.approx(np.corrcoef(ranks[:, 0], ranks[:, 1])[0, 1])


def test_a_step_that_ranks_all_trials_but_not_the_better_half_is_vetoed() -> None:
    # Step 1 separates the worse half from the better one (so it ranks all 12 trials well),
    # but within the better half it is reversed: the check over all trials lets the prune
    # through, the better-half check does not.
    step1, final = better_half_reversed()  # (12,), (12,)
    curves = np.column_stack([step1, final])  # (12, 2)
    study = reporting_study(curves)
    trials = study.get_trials()
    rho_all, _ = step_rank_correlation(trials, 1)
    rho_half, n_half = better_half_rank_correlation(trials, 1)
    assert rho_all >= 0.5 and n_half == 6 and rho_half == pytest.approx(-1.0)
    assert InformativeSteps(_Always()).prune(study, _ask_at(study, 1)) is True
    pruner = BetterHalfSteps(_Always())
    assert pruner.prune(study, _ask_at(study, 1)) is False and pruner.vetoes == 1
    # Where the step ranks the better half too, the prune stands.
    ranked = reporting_study(np.column_stack([final + 0.1, final]))
    assert BetterHalfSteps(_Always()).prune(ranked, _ask_at(ranked, 1)) is True


def test_with_a_small_better_half_the_check_over_all_trials_decides() -> None:
    # 8 finished trials: a better half of 4, too few; step 1 is noise over all of them.
    rng = np.random.default_rng(1)
    final = rng.random(8)  # (n,)
    curves = np.column_stack([rng.random(8), final + 0.01, final])  # (8, 3)
    study = reporting_study(curves)
    assert better_half_rank_correlation(study.get_trials(), 1)[1] == 4
    for step in (1, 2):
        expected = InformativeSteps(_Always()).prune(study, _ask_at(study, step))
        assert BetterHalfSteps(_Always()).prune(study, _ask_at(study, step)) is expected
    assert BetterHalfSteps(_Always()).prune(study, _ask_at(study, 1)) is False


def test_the_better_half_variant_wraps_the_pruner_inside_the_budget_pruner() -> None:
    method = methods.resolve("rollout+median-betterhalf")
    assert method.label.endswith("(steps that rank the better half)")
    pruner = methods.make_pruner(method, 52)
    assert isinstance(pruner, CostBudgetPruner)
    inner = pruner._wrapped
    assert isinstance(inner, BetterHalfSteps)
    assert isinstance(inner.pruner, optuna.pruners.MedianPruner)
