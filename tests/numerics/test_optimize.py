"""Acquisition maximization over mixed boxes, against known maximizers and brute force."""

from __future__ import annotations

import itertools

from _maximize import maximize_one
import numpy as np
import pytest

from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.param_specs import Param
from optuna_costbo._numerics.search_space import BoxCodec


class _Quadratic:
    """f(z) = -(z - c)' A (z - c) + b' z + sin(3 z_0), with its gradient; counts calls."""

    def __init__(self, dim: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.c = rng.random(dim)
        M = rng.normal(size=(dim, dim))
        self.A = M @ M.T / dim + np.eye(dim)
        self.b = 0.5 * rng.normal(size=dim)
        self.calls = 0

    def __call__(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        d = Z - self.c
        value = -np.einsum("md,de,me->m", d, self.A, d) + Z @ self.b + np.sin(3 * Z[:, 0])
        grad = -2 * d @ self.A + self.b
        grad[:, 0] += 3 * np.cos(3 * Z[:, 0])
        return value, grad


def _two_bumps(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A narrow global bump at (0.8, 0.25) and a wider, lower one at (0.2, 0.7), in log scale.

    The bumps are far enough apart (exp(-28) overlap) that the maximizer is (0.8, 0.25) to
    ~1e-12 and the maximum is log(1) = 0.
    """
    c1, c2 = np.array([0.8, 0.25]), np.array([0.2, 0.7])
    d1, d2 = Z - c1, Z - c2
    e1 = np.exp(-np.sum(d1**2, axis=1) / 0.01)
    e2 = 0.6 * np.exp(-np.sum(d2**2, axis=1) / 0.02)
    value = np.log(e1 + e2 + 1e-300)
    grad = (-2 * d1 / 0.01 * e1[:, None] - 2 * d2 / 0.02 * e2[:, None]) / (e1 + e2 + 1e-300)[
        :, None
    ]
    return value, grad


def test_finds_known_maximizer_of_smooth_functions() -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0), NumericParam(-5.0, 5.0)])
    z, value = maximize_one(_two_bumps, codec, np.random.default_rng(0))
    np.testing.assert_allclose(z, [0.8, 0.25], atol=1e-3)
    assert value == pytest.approx(0.0, abs=1e-6)

    # A concave quadratic with an interior maximizer z* = c + A^-1 b / 2, in 4-D.
    f = _Quadratic(4, seed=1)
    f.b *= 0.2
    z_star = f.c + np.linalg.solve(f.A, f.b) / 2
    assert np.all((z_star > 0) & (z_star < 1))

    def g(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = Z - f.c
        return -np.einsum("md,de,me->m", d, f.A, d) + Z @ f.b, -2 * d @ f.A + f.b

    codec = BoxCodec([NumericParam(0.0, 1.0)] * 4)
    z, _ = maximize_one(g, codec, np.random.default_rng(1))
    np.testing.assert_allclose(z, z_star, atol=1e-3)


def test_maximizer_on_the_boundary() -> None:
    codec = BoxCodec([NumericParam(1e-3, 1.0, log=True), NumericParam(0.0, 1.0)])
    target = np.array([1.3, 0.4])  # outside the box in the first column

    def f(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return -np.sum((Z - target) ** 2, axis=1), -2 * (Z - target)

    z, _ = maximize_one(f, codec, np.random.default_rng(2))
    np.testing.assert_allclose(z, [1.0, 0.4], atol=1e-3)
    assert codec.decode(z[None, :])[0, 0] == 1.0  # exactly the upper bound


@pytest.mark.parametrize("seed", range(6))
def test_mixed_space_matches_brute_force(seed: int) -> None:
    codec = BoxCodec(
        [
            NumericParam(0, 20, integer=True),
            NumericParam(-10, 10, step=2, integer=True),
            CategoricalParam(4),
            NumericParam(1, 64, log=True, integer=True),
        ]
    )
    grid_values = np.array(
        list(itertools.product(range(21), range(-10, 11, 2), range(4), range(1, 65))), float
    )
    grid = codec.encode(grid_values)  # (59136, D), every legal point
    f = _Quadratic(codec.dim, seed)
    best = f(grid)[0].max()
    z, value = maximize_one(f, codec, np.random.default_rng(seed))
    # Batched and single-row evaluations may differ in the last ulp.
    assert value == pytest.approx(f(z[None, :])[0][0], rel=1e-14)
    assert value == pytest.approx(best, rel=0, abs=1e-12)


def test_mixed_space_with_floats_beats_dense_random_search() -> None:
    codec = BoxCodec(
        [NumericParam(0.0, 1.0), NumericParam(0, 7, integer=True), CategoricalParam(3)]
    )
    f = _Quadratic(codec.dim, seed=11)
    _, value = maximize_one(f, codec, np.random.default_rng(3))
    dense = codec.random_points(200_000, np.random.default_rng(4))
    assert value >= f(dense)[0].max() - 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_result_is_a_legal_fixed_point_with_its_value(seed: int) -> None:
    rng = np.random.default_rng(seed)
    params: list[Param] = [
        NumericParam(1e-4, 1.0, log=True),
        NumericParam(0.0, 1.0, step=0.1),
        NumericParam(2, 2, integer=True),  # a single legal value
        NumericParam(1, 1000, log=True, integer=True),
        CategoricalParam(int(rng.integers(1, 6))),
        NumericParam(-3.0, 3.0),
    ]
    codec = BoxCodec(params)
    f = _Quadratic(codec.dim, seed + 100)
    z, value = maximize_one(f, codec, rng, n_candidates=50, n_restarts=3)
    assert z.shape == (codec.dim,)
    assert np.array_equal(codec.project(z[None, :])[0], z)
    assert np.isfinite(value)
    assert value == pytest.approx(f(z[None, :])[0][0], rel=1e-14)


def test_mostly_minus_inf_still_gives_a_finite_answer() -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0), NumericParam(0.0, 1.0), CategoricalParam(3)])
    centre = np.array([0.7, 0.3])

    def f(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = Z[:, :2] - centre
        r2 = np.sum(d**2, axis=1)
        value = np.where((r2 < 0.15**2) & (Z[:, 4] == 1.0), -r2, -np.inf)  # ~2% of the box
        grad = np.zeros_like(Z)
        grad[:, :2] = -2 * d
        return value, grad

    z, value = maximize_one(f, codec, np.random.default_rng(0))
    assert np.isfinite(value)
    np.testing.assert_allclose(z[:2], centre, atol=1e-3)
    assert codec.decode(z[None, :])[0, 2] == 2.0


@pytest.mark.parametrize("bad", [-np.inf, np.nan])
def test_no_finite_value_anywhere_returns_a_legal_point(bad: float) -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0), NumericParam(1, 5, integer=True)])

    def f(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(len(Z), bad), np.full(Z.shape, bad)

    z, value = maximize_one(f, codec, np.random.default_rng(0))
    assert value == -np.inf
    assert np.array_equal(codec.project(z[None, :])[0], z)


def test_nan_gradients_and_values_do_not_leak() -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0), NumericParam(0.0, 1.0)])

    def f(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        value = -np.sum((Z - 0.6) ** 2, axis=1)
        value[Z[:, 0] < 0.2] = np.nan
        grad = -2 * (Z - 0.6)
        grad[Z[:, 1] > 0.9] = np.nan
        return value, grad

    z, value = maximize_one(f, codec, np.random.default_rng(0))
    assert np.isfinite(value)
    np.testing.assert_allclose(z, [0.6, 0.6], atol=1e-3)


def test_deterministic_for_a_fixed_seed() -> None:
    codec = BoxCodec(
        [NumericParam(0.0, 1.0), NumericParam(0, 9, integer=True), CategoricalParam(3)]
    )
    f = _Quadratic(codec.dim, seed=5)
    runs = [maximize_one(f, codec, np.random.default_rng(42)) for _ in range(2)]
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]


def test_extra_starts_reach_a_peak_the_screening_misses() -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0)] * 3)
    peak = np.array([0.123, 0.456, 0.789])

    def f(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = Z - peak
        # Far too narrow for 1024 screened points: exactly 0 farther than ~0.03 from the peak.
        e = np.exp(-np.sum(d**2, axis=1) / 1e-6)
        return e, -2 * d / 1e-6 * e[:, None]

    _, without = maximize_one(f, codec, np.random.default_rng(0))
    z, value = maximize_one(
        f, codec, np.random.default_rng(0), extra_starts=(peak + 0.0005)[None, :]
    )
    assert without < 1e-3
    assert value == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(z, peak, atol=1e-3)


def test_extra_starts_start_a_run_even_when_screening_ranks_them_low() -> None:
    # A broad bump (height 0.5) that the screening sees and a narrow peak (height 1) that it
    # misses. The extra start sits on the peak's slope, with a value below dozens of screened
    # points near the bump, so only a run forced from it reaches the peak (as log EI at the
    # best observed point is low although a better point lies next to it).
    codec = BoxCodec([NumericParam(0.0, 1.0)] * 3)
    bump, peak = np.array([0.8, 0.8, 0.8]), np.array([0.2, 0.3, 0.25])

    def f(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        db, dp = Z - bump, Z - peak
        eb = 0.5 * np.exp(-np.sum(db**2, axis=1) / 0.02)
        ep = np.exp(-np.sum(dp**2, axis=1) / 1e-3)
        return eb + ep, -2 * db / 0.02 * eb[:, None] - 2 * dp / 1e-3 * ep[:, None]

    start = peak + 0.03
    screened = f(codec.latin_hypercube_points(1024, np.random.default_rng(0)))[0]
    assert f(start[None, :])[0][0] < np.sort(screened)[-20]
    _, without = maximize_one(f, codec, np.random.default_rng(0))
    z, value = maximize_one(f, codec, np.random.default_rng(0), extra_starts=start[None])
    assert without == pytest.approx(0.5, abs=1e-6)
    assert value == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(z, peak, atol=1e-3)


def test_value_only_function_gives_the_same_answer() -> None:
    codec = BoxCodec(
        [NumericParam(0.0, 1.0), NumericParam(0, 9, integer=True), CategoricalParam(3)]
    )
    f = _Quadratic(codec.dim, seed=8)
    a = maximize_one(f, codec, np.random.default_rng(1))
    calls = f.calls
    b = maximize_one(f, codec, np.random.default_rng(1), fun=lambda Z: f(Z)[0])
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert f.calls > calls


def test_with_real_gp_log_ei_beats_random_search() -> None:
    from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
    from optuna_costbo._numerics.gp import fit as gp

    rng = np.random.default_rng(0)
    codec = BoxCodec([NumericParam(0.0, 1.0)] * 4 + [CategoricalParam(2)])
    X = codec.random_points(40, rng)
    y = np.sin(5 * X[:, :4]).sum(axis=1) + X[:, 4]
    acq = LogEIPerCost(gp.fit_gp(X, y, rng=rng), float(y.min()))
    z, value = maximize_one(acq.value_and_grad, codec, rng, extra_starts=X[:3])
    assert value == pytest.approx(acq(z[None, :])[0], rel=1e-12)
    assert value >= acq(codec.random_points(20_000, rng)).max()


def test_invalid_arguments_raise() -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0)])
    f = _Quadratic(1, seed=0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_restarts must be >= 1"):
        maximize_one(f, codec, rng, n_restarts=0)
    with pytest.raises(ValueError, match="n_candidates must be >= 1"):
        maximize_one(f, codec, rng, n_candidates=0)
    with pytest.raises(ValueError, match=r"extra_starts must have shape \(k, 1\)"):
        maximize_one(f, codec, rng, extra_starts=np.zeros((2, 3)))


def test_max_evals_caps_the_gradient_evaluations() -> None:
    codec = BoxCodec([NumericParam(0.0, 1.0)] * 8)
    scales = np.logspace(0, 3, 8)  # an ill-conditioned bowl: L-BFGS-B needs many steps

    calls = {"n": 0}

    def f(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls["n"] += 1
        d = Z - 0.3
        return -np.sum(scales * d**2, axis=1), -2 * scales * d

    def values(Z: np.ndarray) -> np.ndarray:
        return -np.sum(scales * (Z - 0.3) ** 2, axis=1)

    maximize_one(f, codec, np.random.default_rng(0), fun=values)
    free = calls["n"]
    calls["n"] = 0
    maximize_one(f, codec, np.random.default_rng(0), fun=values, max_evals=5)
    assert free > 20
    assert calls["n"] <= 5 + 3  # the runs share calls; scipy checks the cap once per iteration
