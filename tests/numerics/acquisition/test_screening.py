"""One screen shared by the maximizers (``screening.py``, ``optimize.maximize``) against
the plain path: each maximizer screening its own points, one acquisition at a time."""

from __future__ import annotations

from _maximize import maximize_exponents
from _maximize import maximize_one
import numpy as np
import pytest

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.screening import screen
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.param_specs import Param
from optuna_costbo._numerics.search_space import BoxCodec


_CONTINUOUS: list[Param] = [NumericParam(0.0, 1.0)] * 3
_MIXED: list[Param] = [
    NumericParam(0.0, 1.0),
    NumericParam(1, 8, integer=True),
    CategoricalParam(3),
    NumericParam(1e-3, 1.0, log=True),
]


def _context(params: list[Param], seed: int, n: int = 20) -> AcquisitionContext:
    """A fitted objective and log-cost GP on n points of a smooth problem."""
    codec = BoxCodec(params)
    rng = np.random.default_rng(seed)
    X = codec.random_points(n, rng)  # (n, D)
    y = np.sin(5.0 * X[:, 0]) + (X[:, -1] - 0.4) ** 2 + 0.3 * X.sum(axis=1)  # (n,)
    log_c = 1.5 * X[:, 0] - X[:, -1]  # (n,)
    model = fit_gp(X, y, rng=rng)
    cost = FittedLogCost(fit_gp(X, log_c, rng=rng, min_noise_var=1e-4))
    return AcquisitionContext(
        codec, model, float(y.min()), cost, np.random.default_rng(seed + 100), 5.0, 10.0,
        X[np.argsort(y)[:3]], evaluated=X,
    )  # fmt: skip


@pytest.mark.parametrize("params", [_CONTINUOUS, _MIXED])
def test_screen_values_are_those_of_the_acquisitions(params: list[Param]) -> None:
    ctx = _context(params, 0)
    pool = ctx.screen(256)
    assert ctx.cost is not None and pool.points.shape == (256, ctx.codec.dim)
    np.testing.assert_array_equal(ctx.codec.project(pool.points), pool.points)  # legal
    for e in (0.0, 0.3, 1.0):
        acq = LogEIPerCost(ctx.model, ctx.best, cost_model=ctx.cost, cost_exponent=e)
        np.testing.assert_allclose(pool.values(e), acq(pool.points), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pool.cost(), ctx.cost.cost(pool.points), rtol=1e-12)
    no_cost = screen(pool.points, ctx.model, ctx.best, None)
    np.testing.assert_array_equal(no_cost.values(1.0), no_cost.log_ei)
    with pytest.raises(ValueError, match="without a cost model"):
        no_cost.cost()


@pytest.mark.parametrize("params", [_CONTINUOUS, _MIXED])
def test_a_screened_maximization_is_the_plain_one_on_the_same_points(
    params: list[Param],
) -> None:
    # The plain path draws its Latin hypercube from the rng; given those points and their
    # values, the screened path makes the same search.
    ctx = _context(params, 1)
    acq = LogEIPerCost(ctx.model, ctx.best, cost_model=ctx.cost, cost_exponent=0.7)
    plain = maximize_one(
        acq.value_and_grad, ctx.codec, np.random.default_rng(5), n_candidates=300, fun=acq
    )
    points = ctx.codec.latin_hypercube_points(300, np.random.default_rng(5))
    screened = maximize_one(
        acq.value_and_grad, ctx.codec, np.random.default_rng(99), fun=acq,
        screened=(points, acq(points)),
    )  # fmt: skip
    np.testing.assert_array_equal(screened[0], plain[0])
    assert screened[1] == plain[1]


@pytest.mark.parametrize("params", [_CONTINUOUS, _MIXED])
@pytest.mark.parametrize("seed", range(3))
def test_maximizing_each_exponent_at_once_finds_the_separate_maximizers(
    params: list[Param], seed: int
) -> None:
    # One L-BFGS-B problem for the runs of all three acquisitions against three separate
    # maximizations from the same screen: the same maximizers and values.
    ctx = _context(params, seed)
    exponents = (0.0, 1.0, 0.35)
    pool = ctx.screen()
    together, values = maximize_exponents(ctx, exponents, pool)
    assert together.shape == (3, ctx.codec.dim)
    for k, e in enumerate(exponents):
        Z1, V1 = maximize_exponents(ctx, (e,), pool)
        z, value = Z1[0], V1[0]
        np.testing.assert_allclose(values[k], value, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(together[k], z, atol=2e-3)
        acq = LogEIPerCost(ctx.model, ctx.best, cost_model=ctx.cost, cost_exponent=e)
        np.testing.assert_allclose(acq(together[k][None])[0], values[k], rtol=1e-12)
        assert not ctx.excluded(together[k][None])[0]  # never an evaluated point


def test_the_shared_maximizers_beat_the_screen_and_every_start() -> None:
    ctx = _context(_CONTINUOUS, 4)
    pool = ctx.screen(512)
    Z, values = maximize_exponents(ctx, (0.0, 1.0), pool)
    for k, e in enumerate((0.0, 1.0)):
        assert values[k] >= pool.values(e).max()
        acq = LogEIPerCost(ctx.model, ctx.best, cost_model=ctx.cost, cost_exponent=e)
        assert values[k] >= acq(ctx.starts).max()
    # Different acquisitions, different maximizers: EI ignores the cost, EIpu does not.
    assert np.abs(Z[0] - Z[1]).max() > 1e-3


def test_per_row_cost_exponents_are_the_scalar_acquisitions_row_by_row() -> None:
    ctx = _context(_CONTINUOUS, 2)
    Z = np.random.default_rng(0).random((6, 3))
    each = np.array([0.0, 1.0, 0.4, 0.0, 0.4, 1.0])
    rows = LogEIPerCost(ctx.model, ctx.best, cost_model=ctx.cost, cost_exponent=each)
    value, grad = rows.value_and_grad(Z)
    for i, e in enumerate(each):
        one = LogEIPerCost(ctx.model, ctx.best, cost_model=ctx.cost, cost_exponent=e)
        v, g = one.value_and_grad(Z[i : i + 1])
        np.testing.assert_allclose(value[i], v[0], rtol=1e-12)
        np.testing.assert_allclose(grad[i], g[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rows(Z), value, rtol=1e-12)
    with pytest.raises(ValueError, match="finite and >= 0"):
        LogEIPerCost(ctx.model, ctx.best, cost_model=ctx.cost, cost_exponent=-each)
    with pytest.raises(ValueError, match="needs a cost_model"):
        LogEIPerCost(ctx.model, ctx.best, cost_exponent=each)


def test_equal_exponents_are_maximized_once() -> None:
    # Without a budget EI-cool's alpha is exactly 1: the rollout asks for (0, 1, 1). The
    # repeated exponent is one column of the L-BFGS-B problem, and its row is the same.
    ctx = _context(_CONTINUOUS, 3)
    pool = ctx.screen()
    search = ctx.search((0.0, 1.0, 1.0 + 1e-12), pool)
    assert search.screened is not None and search.screened[1].shape[1] == 2
    Z2, v2 = maximize_exponents(ctx, (0.0, 1.0), pool)
    Z3, v3 = maximize_exponents(_context(_CONTINUOUS, 3), (0.0, 1.0, 1.0 + 1e-12), pool)
    np.testing.assert_array_equal(Z3, np.vstack([Z2, Z2[1:]]))
    np.testing.assert_array_equal(v3, [*v2, v2[1]])
    # Exponents further apart than the tolerance stay separate maximizations.
    search = ctx.search((0.0, 1.0, 0.999), pool)
    assert search.screened is not None and search.screened[1].shape[1] == 3
