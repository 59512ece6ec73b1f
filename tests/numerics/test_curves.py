"""Learning curves of trials stopped early (imputed final values, run fractions) and the
expected cost of a proposal under pruning, against closed forms and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.screening import screen
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.cost_model import shares_objective
from optuna_costbo._numerics.curves import impute_finals
from optuna_costbo._numerics.curves import run_fractions
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.gp.model import GPModel


def _curve(steps: list[int], values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    return np.array(steps, dtype=float), np.array(values, dtype=float)


def test_the_final_value_is_the_last_report_plus_the_median_move_of_completed_curves() -> None:
    complete = [
        _curve([0, 1, 2, 3], [1.0, 0.6, 0.5, 0.4]),  # from step 1: -0.2
        _curve([0, 1, 2, 3], [2.0, 1.5, 1.4, 1.2]),  # from step 1: -0.3
        _curve([0, 2, 3], [3.0, 2.0, 1.0]),  # at step 1 its last report is step 0: -2.0
    ]
    stopped = [_curve([0, 1], [0.9, 0.7]), _curve([0], [5.0])]
    finals = impute_finals(complete, stopped)
    assert finals[0] == pytest.approx(0.7 + np.median([-0.2, -0.3, -2.0]))
    assert finals[1] == pytest.approx(5.0 + np.median([-0.6, -0.8, -2.0]))
    # Without completed curves, the last report.
    np.testing.assert_allclose(impute_finals([], stopped), [0.7, 5.0])


@pytest.mark.parametrize("first", [0, 1])
def test_run_fractions_count_the_steps_run_whatever_the_first_step(first: int) -> None:
    complete = [_curve(list(range(first, first + 52)), [1.0] * 52)]
    stopped = [_curve([first], [1.0]), _curve(list(range(first, first + 13)), [1.0] * 13)]
    np.testing.assert_allclose(run_fractions(complete, stopped), [1 / 52, 13 / 52])
    # Without completed curves the longest curve is taken as a full trial.
    np.testing.assert_allclose(run_fractions([], stopped), [1 / 13, 1.0])


def _pruned_cost() -> tuple[PrunedCost, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.random((14, 2))
    y = np.sin(4 * X[:, 0]) + X[:, 1] ** 2
    objective = fit_gp(X, y, rng=rng)
    base = FittedLogCost(fit_gp(X, 1.0 + X[:, 0], rng=rng, min_noise_var=1e-4))
    return PrunedCost(base, objective, threshold=0.5, pruned_share=0.4, run_fraction=0.25), X


def test_the_expected_cost_counts_on_the_chance_of_being_stopped() -> None:
    cost, _ = _pruned_cost()
    Z = np.random.default_rng(1).random((50, 2))
    mean, var = cost.objective.predict(Z)
    P = norm.cdf((mean - 0.5) / np.sqrt(var))  # the chance the value is worse than q
    expected = cost.base.cost(Z) * (1.0 - P * (1.0 - 0.25))
    np.testing.assert_allclose(cost.cost(Z), expected, rtol=1e-12)
    np.testing.assert_allclose(np.exp(cost.log_cost(Z)), expected, rtol=1e-12)
    assert np.all(expected <= cost.base.cost(Z)) and np.all(expected >= 0.25 * cost.base.cost(Z))


def test_the_gradient_of_the_expected_log_cost_matches_finite_differences() -> None:
    cost, _ = _pruned_cost()
    Z = np.random.default_rng(2).random((6, 2)) * 0.8 + 0.1
    mean, dmean = cost.log_cost_and_grad(Z)
    h = 1e-6
    for d in range(2):
        shifted = Z.copy()
        shifted[:, d] += h
        fd = (cost.log_cost(shifted) - mean) / h
        np.testing.assert_allclose(dmean[:, d], fd, rtol=1e-4, atol=1e-6)


def test_an_acquisition_hands_its_prediction_to_the_expected_cost_with_the_same_result() -> None:
    # With the very objective model of the PrunedCost, EIpu and the screen hand over the
    # prediction they just made; the values and gradients are those of a PrunedCost reading
    # an equal but separate model (which predicts again), bit for bit.
    cost, _ = _pruned_cost()
    twin = PrunedCost(
        cost.base,
        GPModel(cost.objective.X, cost.objective.y, cost.objective.hyper),
        cost.threshold,
        cost.pruned_share,
        cost.run_fraction,
    )
    assert shares_objective(cost, cost.objective) and not shares_objective(twin, cost.objective)
    Z = np.random.default_rng(3).random((40, 2))
    best = float(cost.objective.y.min())
    told = LogEIPerCost(cost.objective, best, cost_model=cost, cost_exponent=1.0)
    fresh = LogEIPerCost(cost.objective, best, cost_model=twin, cost_exponent=1.0)
    np.testing.assert_array_equal(told(Z), fresh(Z))
    for a, b in zip(told.value_and_grad(Z), fresh.value_and_grad(Z), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(
        screen(Z, cost.objective, best, cost).log_cost,
        screen(Z, cost.objective, best, twin).log_cost,
    )
    # ... and the shared model is predicted once per call, not twice.
    calls: list[int] = []
    predict = cost.objective.predict

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return predict(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(cost.objective, "predict", counted)
        told.value_and_grad(Z)
        told(Z)
        screen(Z, cost.objective, best, cost)
    assert len(calls) == 3


def test_step_rank_correlation_is_spearmans_rho_on_plain_ranks() -> None:
    from optuna_costbo._numerics.curves import step_rank_correlation

    rng = np.random.default_rng(3)
    early, final = rng.random(15), rng.random(15)  # (n,) each, no ties
    ranks = [np.argsort(np.argsort(a)).astype(float) for a in (early, final)]
    assert step_rank_correlation(early, final) == pytest.approx(
        np.corrcoef(ranks[0], ranks[1])[0, 1]
    )
    assert step_rank_correlation(final + 1.0, final) == pytest.approx(1.0)
    assert np.isnan(step_rank_correlation(early[:2], final[:2]))  # too few to rank
    assert np.isnan(step_rank_correlation(np.ones(5), final[:5]))  # no spread
