"""The hard budget's probability of fitting, against Monte Carlo of the cost model's
predictive distribution and finite differences; the exact rule of a known cost; the quantile
rule agreeing with the probability; its place among the feasibility factors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from optuna_costbo._numerics.budget_fit import BudgetFit
from optuna_costbo._numerics.budget_fit import loo_widening
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel


def _fitted(noise: float = 0.05) -> FittedLogCost:
    """A GP on log costs that grow to the right, observed with noise."""
    rng = np.random.default_rng(0)
    X = rng.random((20, 2))
    log_c = np.log(1.0 + 9.0 * X[:, 0]) + noise * rng.standard_normal(20)
    return FittedLogCost(fit_gp(X, log_c, rng=rng))


def test_the_probability_of_fitting_is_the_monte_carlo_frequency_of_a_new_trial() -> None:
    cost = _fitted()
    fit = BudgetFit(cost, tau=4.0, risk=0.05)
    Z = np.random.default_rng(1).random((6, 2))
    mean, var = cost.model.predict(Z)
    noise = cost.model.hyper.noise_var * cost.model.y_std**2  # a new trial's own noise
    assert noise > 0.0
    rng = np.random.default_rng(2)
    draws = np.exp(mean + np.sqrt(var + noise) * rng.standard_normal((400_000, len(Z))))
    frequency = np.mean(draws <= 4.0, axis=0)  # (6,)
    np.testing.assert_allclose(fit.pf(Z), frequency, atol=3e-3)
    pf = fit.pf(Z)
    assert ((pf > 0.1) & (pf < 0.9)).any() and pf.max() > 0.95  # it spans the boundary


def test_an_overconfident_cost_model_is_widened_by_its_leave_one_out_errors() -> None:
    # Rough log costs under a long, nearly noiseless lengthscale: the GP is sure and wrong.
    rng = np.random.default_rng(5)
    X = rng.random((15, 1))
    log_c = 1.0 + np.sin(20.0 * X[:, 0])
    hyper = GPHyperparams(lengthscales=np.array([1.0]), signal_var=1.0, noise_var=1e-4, mean=0.0)
    model = GPModel(X, log_c, hyper)
    # The leave-one-out errors by brute force: each cost predicted from the others.
    noise = hyper.noise_var * model.y_std**2
    errors = []
    for i in range(len(X)):
        keep = np.arange(len(X)) != i
        rest = GPModel(X[keep], log_c[keep], hyper, y_mean=model.y_mean, y_std=model.y_std)
        mean_i, var_i = rest.predict(X[i : i + 1])
        errors.append((log_c[i] - mean_i[0]) / np.sqrt(var_i[0] + noise))
    # At risk 0.2 with 15 errors: the ceil(0.8 x 16) = 13th smallest, against z_0.8 = 0.8416.
    factor = np.sort(errors)[12] / norm.ppf(0.8)
    assert factor > 2.0  # far from calibrated
    fit = BudgetFit(FittedLogCost(model), tau=3.0, risk=0.2)
    Z = np.linspace(0.0, 1.0, 7)[:, None]
    mean, var = model.predict(Z)
    expected = norm.cdf((np.log(3.0) - mean) / (np.sqrt(var + noise) * factor))
    np.testing.assert_allclose(fit.pf(Z), expected, rtol=1e-6)


def test_the_conformal_widening_reads_the_right_order_statistic() -> None:
    scores = np.arange(1.0, 20.0)  # 19 scores: 1, 2, ..., 19
    # risk 0.2: the ceil(0.8 x 20) = 16th smallest; risk 0.01: past n, the largest.
    assert loo_widening(scores, 0.2) == pytest.approx(16.0 / norm.ppf(0.8))
    assert loo_widening(scores, 0.01) == pytest.approx(19.0 / norm.ppf(0.99))
    assert loo_widening(scores, 0.5) == 1.0  # the median is not in the upper tail
    assert loo_widening(-scores, 0.05) == 1.0  # costs always below the prediction: no widening


def test_the_gradient_of_log_pf_and_of_the_margin_match_finite_differences() -> None:
    fit = BudgetFit(_fitted(), tau=4.0, risk=0.1)
    Z = np.random.default_rng(3).random((40, 2)) * 0.8 + 0.1
    Z = Z[fit.log_pf(Z)[0] > -30.0][:10]
    assert len(Z) >= 6
    for function in (fit.log_pf, fit.margin):
        _, grad = function(Z, return_grad=True)
        h = 1e-6
        for d in range(2):
            up, down = Z.copy(), Z.copy()
            up[:, d] += h
            down[:, d] -= h
            fd = (function(up)[0] - function(down)[0]) / (2 * h)
            np.testing.assert_allclose(grad[:, d], fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("risk", [0.01, 0.05, 0.2, 0.5])
def test_a_point_fits_exactly_when_its_probability_reaches_one_minus_the_risk(risk: float) -> None:
    fit = BudgetFit(_fitted(), tau=4.0, risk=risk)
    Z = np.random.default_rng(4).random((2000, 2))
    pf = fit.pf(Z)
    fits = fit.fits(Z)
    clear = np.abs(pf - (1.0 - risk)) > 1e-9  # away from the boundary's rounding
    np.testing.assert_array_equal(fits[clear], pf[clear] >= 1.0 - risk)
    assert fits.any() and not fits.all()
    # A larger risk lets more points in.
    assert fits.sum() <= BudgetFit(_fitted(), tau=4.0, risk=min(0.99, risk + 0.3)).fits(Z).sum()


def test_a_known_cost_fits_exactly() -> None:
    cost = KnownCost(fn=lambda Z: 1.0 + 9.0 * Z[:, 0])
    fit = BudgetFit(cost, tau=4.0, risk=0.05)
    Z = np.array([[0.0, 0.5], [1.0 / 3.0 - 1e-9, 0.1], [1.0 / 3.0 + 1e-9, 0.9], [1.0, 0.0]])
    np.testing.assert_array_equal(fit.fits(Z), [True, True, False, False])
    np.testing.assert_array_equal(fit.pf(Z), [1.0, 1.0, 0.0, 0.0])
    log_pf, grad = fit.log_pf(Z, return_grad=True)
    assert np.isneginf(log_pf[2:]).all() and not grad.any()


def test_nothing_fits_a_budget_that_is_gone_and_pruning_checks_the_full_trial() -> None:
    cost = _fitted()
    Z = np.random.default_rng(5).random((50, 2))
    assert not BudgetFit(cost, tau=0.0, risk=0.05).fits(Z).any()
    assert not BudgetFit(cost, tau=-1.0, risk=0.05).fits(Z).any()
    # Under pruning the expected cost is lower, but a full trial must fit.
    pruned = PrunedCost(cost, cost.model, threshold=0.0, pruned_share=0.5, run_fraction=0.2)
    assert (pruned.cost(Z) < cost.cost(Z)).all()
    np.testing.assert_array_equal(
        BudgetFit(pruned, 4.0, 0.05).fits(Z), BudgetFit(cost, 4.0, 0.05).fits(Z)
    )
    with pytest.raises(ValueError, match="risk must be in"):
        BudgetFit(cost, 4.0, 1.0)


def test_the_budget_is_one_more_factor_of_the_probability_of_feasibility() -> None:
    fit = BudgetFit(_fitted(), tau=4.0, risk=0.05)
    Z = np.random.default_rng(6).random((20, 2))
    alone = Feasibility([], fit)
    np.testing.assert_allclose(alone.pf(Z), fit.pf(Z))
    rng = np.random.default_rng(7)
    X = rng.random((12, 2))
    constrained = Feasibility([fit_gp(X, X[:, 1] - 0.5, rng=rng)])
    both = constrained.with_budget(fit)
    np.testing.assert_allclose(both.pf(Z), constrained.pf(Z) * fit.pf(Z), rtol=1e-10)
    assert both.hypers == constrained.hypers


def test_a_fixed_price_observed_is_known_exactly() -> None:
    # Every observed cost 2.0: the GP's own deviation (its variance floors, about 1 % of the
    # cost) would refuse a trial of 2.0 with exactly 2.0 left; the price is known instead.
    rng = np.random.default_rng(8)
    X = rng.random((12, 2))
    cost = FittedLogCost(fit_gp(X, np.full(12, np.log(2.0)), rng=rng, min_noise_var=1e-4))
    Z = rng.random((50, 2))
    for tau, fits in ((2.0, True), (2.0 * (1.0 - 1e-6), False), (1.0, False), (7.0, True)):
        fit = BudgetFit(cost, tau=tau, risk=0.05)
        assert fit.exact
        np.testing.assert_array_equal(fit.fits(Z), np.full(50, fits))
        np.testing.assert_array_equal(fit.pf(Z), np.full(50, 1.0 if fits else 0.0))
    # Two observations tell nothing of the spread: the GP's deviation stays.
    two = FittedLogCost(fit_gp(X[:2], np.full(2, np.log(2.0)), rng=rng, min_noise_var=1e-4))
    assert not BudgetFit(two, tau=2.0, risk=0.05).exact


def test_a_nearly_fixed_price_is_predicted_within_its_spread() -> None:
    # Costs 1 +- 1e-6: the quantile stays within a few spreads of the largest cost, so a
    # budget left of 1.00001 takes one more trial, and 0.99 none.
    rng = np.random.default_rng(9)
    X = rng.random((30, 2))
    log_c = np.log(1.0 + 1e-6 * rng.uniform(-1.0, 1.0, 30))
    cost = FittedLogCost(fit_gp(X, log_c, rng=rng, min_noise_var=1e-4))
    Z = rng.random((50, 2))
    assert not BudgetFit(cost, tau=1.00001, risk=0.05).exact
    assert BudgetFit(cost, tau=1.00001, risk=0.05).fits(Z).all()
    assert not BudgetFit(cost, tau=0.99, risk=0.05).fits(Z).any()


def test_a_cost_equal_to_the_budget_left_fits_up_to_the_ledgers_rounding() -> None:
    cost = KnownCost(fn=lambda Z: np.full(len(Z), 0.1))
    left = 3.0 - sum([0.1] * 29)  # 0.09999999999999876: the sum's rounding
    assert left < 0.1
    assert BudgetFit(cost, tau=left, risk=0.05).fits(np.zeros((1, 1))).all()
    assert not BudgetFit(cost, tau=0.0999, risk=0.05).fits(np.zeros((1, 1))).any()


@pytest.mark.parametrize("seed", range(4))
def test_the_bounds_of_a_gp_hold_at_every_point_of_a_dense_sample(seed: int) -> None:
    # The bound on the posterior mean (Cauchy-Schwarz in the kernel's space) and on its variance
    # (the prior's), against the model's predictions at 20,000 points, its data included.
    rng = np.random.default_rng(seed)
    X = rng.random((25, 2))
    log_c = 3.0 * np.sin(6.0 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(25)
    ls = rng.uniform(0.05, 1.0, 2)
    hyper = GPHyperparams(lengthscales=ls, signal_var=rng.uniform(0.5, 3.0), noise_var=1e-3,
                          mean=rng.uniform(-0.5, 0.5))  # fmt: skip
    model = GPModel(X, log_c, hyper)
    top_mean, top_var = model.bounds()
    mean, var = model.predict(np.vstack([X, rng.random((20_000, 2))]))
    assert mean.max() <= top_mean and var.max() <= top_var * (1.0 + 1e-12)
    assert mean.max() > model.y_mean  # a bound above a mean that does rise


def test_a_budget_that_every_configuration_fits_is_left_out_and_one_that_binds_is_kept() -> None:
    cost = _fitted()  # costs from 1 to 10
    loose = BudgetFit(cost, tau=1e6, risk=0.05)
    assert not loose.binds
    Z = np.random.default_rng(3).random((5000, 2))
    assert loose.pf(Z).min() >= 1.0 - 1e-12  # what leaving it out changes: nothing
    assert BudgetFit(cost, tau=4.0, risk=0.05).binds
    assert BudgetFit(KnownCost(lambda Z: np.ones(len(Z))), tau=1e6, risk=0.05).binds  # exact
