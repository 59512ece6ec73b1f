"""The Pandora's-box Gittins index of the ``pbgi`` experiment (benchmarks/harness/gittins.py),
against a root finder on the closed form, Monte Carlo, finite differences and a brute-force
maximization; its tie to the stopping rule; the method runs and stops by itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from benchmarks.harness.gittins import GittinsIndex
from benchmarks.harness.gittins import PandoraGittins
from benchmarks.harness.gittins import gittins_index
from benchmarks.harness.gittins import gittins_u
from optuna_costbo._numerics.acquisition.ei import ei
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.models import fit_constraints
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.search_space import BoxCodec


def _brentq_index(mean: float, var: float, price: float) -> float:
    """The root of EI(g) = price by bracketing on the plain closed form (independent of the
    Newton iteration and of log space)."""
    sigma = math.sqrt(var)

    def excess(g: float) -> float:
        return float(ei(np.array([mean]), np.array([var]), g)[0]) - price

    lo, hi = mean - 40.0 * sigma, mean + price + 10.0 * sigma
    assert excess(lo) < 0.0 < excess(hi)
    return float(optimize.brentq(excess, lo, hi, xtol=1e-14 * (1 + abs(mean)), rtol=1e-14))


@pytest.mark.parametrize(
    ("mean", "var", "price"),
    [
        (0.0, 1.0, 0.1),
        (1.0, 4.0, 1e-6),  # cheap: the index far below the mean
        (-2.0, 1e-4, 3.0),  # certain: the index is the mean plus the price
        (5.0, 0.25, 0.2),
        (0.3, 9.0, 30.0),  # dear: the index above the mean
    ],
)
def test_index_is_the_root_of_ei_equals_price(mean: float, var: float, price: float) -> None:
    g = gittins_index(np.array([mean]), np.array([var]), math.log(price))[0]
    assert g == pytest.approx(_brentq_index(mean, var, price), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize(("mean", "var", "price"), [(0.0, 1.0, 0.05), (2.0, 0.5, 0.4)])
def test_expected_gain_at_the_index_is_the_price_by_monte_carlo(
    mean: float, var: float, price: float
) -> None:
    g = gittins_index(np.array([mean]), np.array([var]), math.log(price))[0]
    y = mean + math.sqrt(var) * np.random.default_rng(3).standard_normal(2_000_000)
    gain = np.maximum(g - y, 0.0)
    mc, se = gain.mean(), gain.std() / math.sqrt(len(y))
    assert abs(mc - price) < 4 * se
    assert se < 0.01 * price  # sharp enough to mean something


def test_extremes_are_finite_and_follow_the_asymptotes() -> None:
    t = np.array([-2000.0, -50.0, -1.0, 0.0, 3.0, 29.0, 31.0, 40.0, 600.0])  # log(price / sigma)
    u, Phi_over_h, phi_over_h = gittins_u(t)
    assert np.all(np.isfinite(u)) and np.all(np.diff(u) > 0)
    assert np.all(np.isfinite(Phi_over_h)) and np.all(np.isfinite(phi_over_h))
    # Far below: log h(u) ~ -u^2 / 2, so u ~ -sqrt(-2 t); far above: h(u) ~ u.
    assert u[0] == pytest.approx(-math.sqrt(4000.0), rel=0.01)
    assert u[-1] == pytest.approx(math.exp(600.0), rel=1e-12)
    # A nearly certain point: its index is its value plus its price.
    g = gittins_index(np.array([1.5]), np.array([1e-80]), math.log(2.0))
    assert g[0] == pytest.approx(3.5, rel=1e-12)
    with pytest.raises(ValueError, match="log_ratio must be finite"):
        gittins_u(np.array([0.0, math.nan]))


def test_index_falls_with_uncertainty_and_rises_with_price() -> None:
    var = np.geomspace(1e-2, 1e2, 50)
    g = gittins_index(np.zeros(50), var, math.log(0.01))
    assert np.all(np.diff(g) < 0)  # more uncertain points are worth more at one price
    price = np.geomspace(1e-8, 1e3, 50)
    g = gittins_index(np.zeros(50), np.ones(50), np.log(price))
    assert np.all(np.diff(g) > 0)


def test_index_below_the_incumbent_exactly_where_ei_beats_the_price() -> None:
    # The acquisition and the stopping rule agree: g(x) < best iff EI(x) > lam c(x).
    rng = np.random.default_rng(7)
    mean, var = rng.normal(size=2000), np.exp(rng.normal(size=2000))
    best, price = -0.5, np.exp(rng.normal(-1.0, 1.5, size=2000))
    g = gittins_index(mean, var, np.log(price))
    gains = ei(mean, var, best)
    clear = np.abs(gains - price) > 1e-9 * price  # leave out exact ties
    np.testing.assert_array_equal((g < best)[clear], (gains > price)[clear])
    assert 200 < np.sum(g < best) < 1800  # both sides are exercised


def _fitted(seed: int = 0) -> tuple[object, FittedLogCost, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((20, 2))  # (n, 2)
    y = np.sin(5 * X[:, 0]) + X[:, 1] ** 2
    model = fit_gp(X, y, rng=rng)
    cost = FittedLogCost(fit_gp(X, 1.0 + 2.0 * X[:, 0] - X[:, 1], rng=rng))
    return model, cost, X, y


def _fd_grad(f: GittinsIndex, Z: np.ndarray, h: float = 1e-6) -> np.ndarray:
    grad = np.empty_like(Z)  # (m, D)
    for d in range(Z.shape[1]):
        e = np.zeros(Z.shape[1])
        e[d] = h
        grad[:, d] = (f(Z + e) - f(Z - e)) / (2 * h)
    return grad


@pytest.mark.parametrize("variant", ["plain", "pruned", "constrained"])
@pytest.mark.parametrize("rate", [1e-3, 0.3])
def test_value_and_grad_match_finite_differences(variant: str, rate: float) -> None:
    model, cost, X, y = _fitted()
    feasibility = None
    cost_model: FittedLogCost | PrunedCost = cost
    if variant == "pruned":
        cost_model = PrunedCost(cost, model, float(np.median(y)), 0.4, 0.25)  # type: ignore[arg-type]
    if variant == "constrained":
        # A constraint its GP does not learn exactly: four of Z's points lie where PF is
        # between 0 and 1. (X[:, 0] - 0.6 was learnt to 1e-4, and a point 1e-4 from its
        # boundary sat on a step of PF too steep for finite differences.)
        feasibility = fit_constraints(
            X, (np.cos(9 * X[:, 0]) * X[:, 1])[:, None], np.random.default_rng(1)
        )  # (n, 1) constraint values
    acq = GittinsIndex(
        model,  # type: ignore[arg-type]
        float(y.min()),
        cost_model=cost_model,
        value_per_cost=rate,
        scale=0.7,
        feasibility=feasibility,
    )
    Z = np.vstack([np.random.default_rng(2).random((8, 2)), X[:2] + 1e-3])  # (10, 2)
    value, grad = acq.value_and_grad(Z)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(value, acq(Z), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, _fd_grad(acq, Z), rtol=1e-4, atol=1e-6)
    # The value is asinh((best - g) / scale), g priced at lam c / PF.
    mean, var = model.predict(Z)  # type: ignore[attr-defined]
    log_price = math.log(rate) + cost_model.log_cost(Z)
    if feasibility is not None:
        log_pf = feasibility.log_pf(Z)[0]  # (m,)
        assert np.sum((log_pf < -1e-3) & (log_pf > -30.0)) >= 3  # PF's gradient is exercised
        log_price = log_price - log_pf
    excess = (y.min() - gittins_index(mean, var, log_price)) / 0.7  # (m,)
    bounded = np.abs(excess) < 1e300  # an all but infeasible point's value is held at the bound
    np.testing.assert_allclose(value[bounded], np.arcsinh(excess[bounded]), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(value[~bounded], -np.arcsinh(1e300))


def test_the_strategy_chooses_the_best_index_of_a_dense_grid() -> None:
    model, cost, X, y = _fitted(5)
    codec = BoxCodec([NumericParam(0.0, 1.0)] * 2)
    ctx = AcquisitionContext(
        codec=codec,
        model=model,  # type: ignore[arg-type]
        best=float(y.min()),
        cost=cost,
        rng=np.random.default_rng(0),
        remaining=math.inf,
        budget=math.inf,
        starts=X[np.argsort(y)[:3]],
    )
    strategy = PandoraGittins(0.05)
    choice = strategy.choose(ctx)
    acq = GittinsIndex(
        model,  # type: ignore[arg-type]
        float(y.min()),
        cost_model=cost,
        value_per_cost=0.05,
        scale=float(model.y_std),  # type: ignore[attr-defined]
    )
    grid = np.stack(np.meshgrid(*[np.linspace(0, 1, 401)] * 2), axis=-1).reshape(-1, 2)
    assert choice.value == pytest.approx(float(acq(choice.z[None])[0]), rel=1e-12)
    assert choice.value >= float(acq(grid).max()) - 1e-6


def test_the_strategy_needs_a_rate() -> None:
    with pytest.raises(ValueError, match="value_per_cost must be positive and finite"):
        PandoraGittins(0.0)
    model, cost, _, _ = _fitted()
    with pytest.raises(ValueError, match="value_per_cost must be positive"):
        GittinsIndex(model, 0.0, cost_model=cost, value_per_cost=0.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="best must be a finite number"):
        GittinsIndex(model, math.inf, cost_model=cost, value_per_cost=1.0)  # type: ignore[arg-type]


def test_the_pbgi_method_chooses_by_the_index_and_stops_by_itself() -> None:
    import optuna

    from benchmarks.harness import methods
    from optuna_costbo import report_cost

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        report_cost(trial, 1.0 + 4.0 * x)
        return (x - 0.3) ** 2 + (y - 0.6) ** 2

    method = methods.resolve("pbgi:budget=none,value_per_cost=0.001")
    sampler = methods.make_sampler(method, math.inf, 0, {})
    assert isinstance(sampler._suggester.acquisition, PandoraGittins)
    assert sampler._suggester.acquisition.value_per_cost == 0.001
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=200)
    assert len(study.trials) < 200  # the rule ended it
    reason = sampler.stop_reason(study)
    assert reason is not None and "not worth its cost" in reason
    with pytest.raises(ValueError, match="the pbgi method needs value_per_cost"):
        methods.make_sampler(methods.resolve("pbgi"), 10.0, 0, {})
