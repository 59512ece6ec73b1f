"""The box codec: legality, exact fixed points, round trips, equal shares, validation."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest

from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.param_specs import Param
from optuna_costbo._numerics.search_space import BoxCodec


# ---------------------------------------------------------------- strategies


@st.composite
def float_linear(draw: st.DrawFn) -> NumericParam:
    low = draw(st.floats(-1e6, 1e6))
    width = draw(st.sampled_from([0.0, 1e-9, 1e-3, 1.0, 37.5, 1e5]))
    return NumericParam(low, low + width * draw(st.floats(0.0, 1.0)))


@st.composite
def float_log(draw: st.DrawFn) -> NumericParam:
    low = 10.0 ** draw(st.floats(-12, 6))
    return NumericParam(low, low * 10.0 ** draw(st.floats(0.0, 8.0)), log=True)


@st.composite
def float_step(draw: st.DrawFn) -> NumericParam:
    low = draw(st.sampled_from([-3.0, 0.0, 0.1, 1.5, 1e3]))
    step = draw(st.sampled_from([0.1, 0.25, 1e-3, 0.5, 3.0]))
    n = draw(st.integers(0, 60))
    off_grid = draw(st.sampled_from([0.0, 0.0, 0.5]))  # high need not be on the grid
    high = low + (n + off_grid) * step
    if draw(st.booleans()):
        # As a user writes it (and Optuna snaps it, in decimal): 0.1 + 7 * 0.1 -> 0.8, one ulp
        # away from the float low + k * step; the codec must still treat it as the top value.
        high = round(high, 9)
    return NumericParam(low, high, step=step)


@st.composite
def int_linear(draw: st.DrawFn) -> NumericParam:
    low = draw(st.integers(-100, 100))
    step = draw(st.sampled_from([1, 1, 2, 3, 5]))
    high = low + draw(st.integers(0, 200))
    return NumericParam(float(low), float(high), step=float(step), integer=True)


@st.composite
def int_log(draw: st.DrawFn) -> NumericParam:
    low = draw(st.integers(1, 100))
    high = low + draw(st.integers(0, 5000))
    step = draw(st.sampled_from([None, 1.0]))
    return NumericParam(float(low), float(high), log=True, step=step, integer=True)


categorical = st.builds(CategoricalParam, st.integers(1, 10))
any_param = st.one_of(
    float_linear(), float_log(), float_step(), int_linear(), int_log(), categorical
)
param_lists = st.lists(any_param, min_size=1, max_size=6)


# ---------------------------------------------------------------- helpers


def _step(p: NumericParam) -> float | None:
    return p.step if p.step is not None else (1.0 if p.integer else None)


def _assert_legal(params: list[Param], values: np.ndarray) -> None:
    """Every row of values (n, P) is a legal assignment."""
    for i, p in enumerate(params):
        v = values[:, i]
        if isinstance(p, CategoricalParam):
            assert np.all(v == np.rint(v)), v
            assert np.all((v >= 0) & (v < p.n_choices)), v
            continue
        assert np.all((v >= p.low) & (v <= p.high)), (p, v)
        step = _step(p)
        if step is not None:
            k = (v - p.low) / step
            assert np.all(np.abs(k - np.rint(k)) < 1e-9), (p, v)
        if p.integer:
            assert np.all(v == np.rint(v)), (p, v)


def _legal_values(params: list[Param], rng: np.random.Generator, n: int) -> np.ndarray:
    """Legal values built from the specs (not from the codec): grid points, ends, uniforms."""
    out = np.empty((n, len(params)))
    for i, p in enumerate(params):
        if isinstance(p, CategoricalParam):
            out[:, i] = rng.integers(0, p.n_choices, n)
            continue
        step = _step(p)
        if step is None:
            if p.log:
                v = np.exp(rng.uniform(math.log(p.low), math.log(p.high), n))
            else:
                v = rng.uniform(p.low, p.high, n)
            v[:2] = [p.low, p.high][: len(v[:2])]
            out[:, i] = np.clip(v, p.low, p.high)
        else:
            ratio = (p.high - p.low) / step
            on_grid = abs(ratio - round(ratio)) < 1e-8
            n_steps = round(ratio) if on_grid else math.floor(ratio)
            k = rng.integers(0, n_steps + 1, n)
            k[:2] = [0, n_steps][: len(k[:2])]
            v = p.low + k * step
            # The top value is `high` itself when `high` is on the grid.
            out[:, i] = np.where(k == n_steps, p.high if on_grid else v, v)
    return out


# ---------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None)
@given(params=param_lists, seed=st.integers(0, 2**32 - 1))
def test_project_is_exact_fixed_point_and_decode_is_legal(params: list[Param], seed: int) -> None:
    codec = BoxCodec(params)
    rng = np.random.default_rng(seed)
    z = rng.random((64, codec.dim))
    z[:4] = np.array([0.0, 1.0, 0.5, 1.0 - 1e-16])[:, None]  # edges and centre
    values = codec.decode(z)
    _assert_legal(params, values)
    p = codec.project(z)
    assert p.shape == z.shape
    assert np.all((p >= 0.0) & (p <= 1.0))
    assert np.array_equal(codec.project(p), p)  # exact, not approximately
    assert np.array_equal(codec.decode(p), values)
    for block in codec.categorical_blocks:
        assert np.all(p[:, block].sum(axis=1) == 1.0)
        assert set(np.unique(p[:, block])) <= {0.0, 1.0}


@settings(max_examples=150, deadline=None)
@given(params=param_lists, seed=st.integers(0, 2**32 - 1))
def test_decode_encode_round_trip(params: list[Param], seed: int) -> None:
    codec = BoxCodec(params)
    v = _legal_values(params, np.random.default_rng(seed), 32)
    z = codec.encode(v)
    assert np.all((z >= 0.0) & (z <= 1.0))
    back = codec.decode(z)
    for i, p in enumerate(params):
        if isinstance(p, NumericParam) and _step(p) is None:
            # Continuous floats come back up to rounding (log/exp and the affine maps).
            scale = max(abs(p.low), abs(p.high)) if not p.log else np.abs(v[:, i])
            np.testing.assert_array_less(np.abs(back[:, i] - v[:, i]), 1e-12 * scale + 1e-300)
        else:
            # Grid values and choices come back exactly.
            np.testing.assert_array_equal(back[:, i], v[:, i])


@settings(max_examples=60, deadline=None)
@given(params=param_lists, seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40))
def test_generated_points_are_legal(params: list[Param], seed: int, n: int) -> None:
    codec = BoxCodec(params)
    rng = np.random.default_rng(seed)
    for pts in (
        codec.sobol_points(n, seed),
        codec.random_points(n, rng),
        codec.latin_hypercube_points(n, rng),
    ):
        assert pts.shape == (n, codec.dim)
        assert np.array_equal(codec.project(pts), pts)
        _assert_legal(params, codec.decode(pts))


def _neighbors_one_at_a_time(codec: BoxCodec, z: np.ndarray) -> np.ndarray:
    """The reference for discrete_neighbors_many: one point z (D,), one move at a time."""
    v = codec.decode(np.asarray(z, dtype=float).reshape(1, codec.dim))[0]  # (P,)
    rows: list[np.ndarray] = []
    for i, num in codec._numeric:
        if num.step is None or num.constant or np.isnan(v[i]):  # inactive: no neighbours
            continue
        k = round((v[i] - num.low) / num.step) if v[i] != num.top else num.n_steps
        for kk in (k - 1, k + 1):
            if 0 <= kk <= num.n_steps:
                row = v.copy()
                row[i] = num.top if kk == num.n_steps else num.low + kk * num.step
                rows.append(row)
    for i, cols in codec._categorical:
        if np.isnan(v[i]):
            continue
        for c in range(len(cols)):
            if c != v[i]:
                row = v.copy()
                row[i] = c
                rows.append(row)
    if not rows:
        return np.empty((0, codec.dim))
    return codec.encode(np.array(rows))


@settings(max_examples=60, deadline=None)
@given(params=param_lists, seed=st.integers(0, 2**32 - 1))
def test_discrete_neighbors_change_one_parameter(params: list[Param], seed: int) -> None:
    codec = BoxCodec(params)
    z = codec.random_points(1, np.random.default_rng(seed))[0]
    nbrs = _neighbors_one_at_a_time(codec, z)
    assert nbrs.shape[1] == codec.dim
    assert np.array_equal(codec.project(nbrs), nbrs)
    v0 = codec.decode(z[None, :])[0]
    expected = 0
    for i, p in enumerate(params):
        if isinstance(p, CategoricalParam):
            expected += p.n_choices - 1
        elif (step := _step(p)) is not None:
            n_steps = math.floor((p.high - p.low) / step + 1e-8)
            k = round((v0[i] - p.low) / step)
            expected += int(k > 0) + int(k < n_steps)  # one step down, one step up
    assert len(nbrs) == expected
    for row in codec.decode(nbrs):
        assert np.count_nonzero(row != v0) == 1


@settings(max_examples=40, deadline=None)
@given(params=param_lists, seed=st.integers(0, 2**32 - 1), n=st.integers(0, 6))
def test_neighbours_of_many_points_are_each_points_neighbours_in_order(
    params: list[Param], seed: int, n: int
) -> None:
    codec = BoxCodec(params)
    Z = codec.random_points(n, np.random.default_rng(seed))
    got, owner = codec.discrete_neighbors_many(Z)
    each = [_neighbors_one_at_a_time(codec, z) for z in Z]
    expected = np.vstack([np.zeros((0, codec.dim)), *each])
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(owner, np.repeat(np.arange(n), [len(e) for e in each]))


def test_equal_shares_for_linear_integers() -> None:
    for low, high, step in [(0, 9, 1), (-7, 5, 1), (3, 30, 3), (2, 2, 1), (0, 10, 4)]:
        codec = BoxCodec([NumericParam(low, high, step=step, integer=True)])
        u = (np.arange(200_000) + 0.5) / 200_000  # fine uniform grid of the column
        values, counts = np.unique(codec.decode(u[:, None])[:, 0], return_counts=True)
        n_legal = math.floor((high - low) / step) + 1
        np.testing.assert_array_equal(values, low + step * np.arange(n_legal))
        assert counts.max() - counts.min() <= 1, counts
        # Legal values sit at the centres of their shares.
        np.testing.assert_allclose(
            codec.encode(values[:, None])[:, 0], (np.arange(n_legal) + 0.5) / n_legal, atol=1e-15
        )


def test_log_integers_have_equal_shares_in_log_space() -> None:
    codec = BoxCodec([NumericParam(1, 100, log=True, integer=True)])
    z = codec.encode(np.arange(1.0, 101.0)[:, None])[:, 0]
    width = math.log(100.5) - math.log(0.5)
    np.testing.assert_allclose(z, (np.log(np.arange(1, 101)) - math.log(0.5)) / width, rtol=1e-13)
    assert np.array_equal(codec.decode(z[:, None])[:, 0], np.arange(1.0, 101.0))


def test_single_value_parameters_encode_to_half() -> None:
    params: list[Param] = [
        NumericParam(2.5, 2.5),
        NumericParam(3.0, 3.0, log=True),
        NumericParam(4, 4, integer=True),
        NumericParam(5, 5, log=True, integer=True),
        NumericParam(0.0, 0.05, step=0.1),  # only `low` is on the grid
        CategoricalParam(1),
    ]
    codec = BoxCodec(params)
    z = codec.encode(np.array([[2.5, 3.0, 4.0, 5.0, 0.0, 0.0]]))
    np.testing.assert_array_equal(z, [[0.5, 0.5, 0.5, 0.5, 0.5, 1.0]])
    np.testing.assert_array_equal(codec.constant_columns, [0, 1, 2, 3, 4])
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(
        codec.decode(rng.random((10, 6))), np.tile([2.5, 3.0, 4.0, 5.0, 0.0, 0.0], (10, 1))
    )


def test_stepped_float_top_is_exactly_high_and_values_on_grid() -> None:
    codec = BoxCodec([NumericParam(0.1, 0.3, step=0.1)])  # (0.3 - 0.1) / 0.1 = 1.99999...
    values = codec.decode(np.linspace(0, 1, 1001)[:, None])[:, 0]
    assert set(values.tolist()) == {0.1, 0.1 + 0.1, 0.3}
    codec = BoxCodec([NumericParam(0.0, 1.0, step=0.3)])  # high off the grid: top is 0.9
    assert codec.decode(np.ones((1, 1)))[0, 0] == 0.0 + 3 * 0.3
    # 0.1 + 3 * 0.3 is 0.9999999999999999 in floats, but the top value is exactly `high`.
    codec = BoxCodec([NumericParam(0.1, 1.0, step=0.3)])
    assert 0.1 + 3 * 0.3 < 1.0
    assert codec.decode(np.ones((1, 1)))[0, 0] == 1.0
    assert codec.decode(codec.encode(np.array([[1.0]])))[0, 0] == 1.0


def test_layout_and_categorical_ties() -> None:
    codec = BoxCodec([CategoricalParam(3), NumericParam(0, 1), CategoricalParam(2)])
    assert (codec.dim, codec.n_params) == (6, 3)
    np.testing.assert_array_equal(codec.continuous_columns, [3])
    assert [b.tolist() for b in codec.categorical_blocks] == [[0, 1, 2], [4, 5]]
    z = np.array([[0.7, 0.7, 0.2, 0.25, 0.5, 0.5]])
    np.testing.assert_array_equal(codec.decode(z), [[0.0, 0.25, 0.0]])  # ties -> lowest index
    np.testing.assert_array_equal(codec.project(z), [[1, 0, 0, 0.25, 1, 0]])


def test_encode_clips_and_rejects_bad_values() -> None:
    codec = BoxCodec([NumericParam(0, 1), CategoricalParam(3)])
    np.testing.assert_array_equal(codec.encode(np.array([[1.5, 2.0]])), [[1.0, 0, 0, 1]])
    with pytest.raises(ValueError, match="choice indices"):
        codec.encode(np.array([[0.5, 3.0]]))
    with pytest.raises(ValueError, match="choice indices"):
        codec.encode(np.array([[0.5, 0.5]]))
    with pytest.raises(ValueError, match="finite"):
        codec.encode(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        codec.encode(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="shape"):
        codec.decode(np.zeros((2, 3)))


def test_nan_and_out_of_box_coordinates_still_decode_legally() -> None:
    params: list[Param] = [NumericParam(1, 9, integer=True), CategoricalParam(3)]
    codec = BoxCodec(params)
    z = np.array([[np.nan, np.nan, 0.0, 2.0], [-3.0, 0.0, 5.0, 0.0], [7.0, -1, -1, -1]])
    values = codec.decode(z)
    _assert_legal(params, values)
    np.testing.assert_array_equal(values[:, 0], [5.0, 1.0, 9.0])


def test_sobol_points_are_deterministic_and_cover_choices() -> None:
    codec = BoxCodec([CategoricalParam(5), NumericParam(0, 3, integer=True)])
    a, b = codec.sobol_points(32, seed=7), codec.sobol_points(32, seed=7)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, codec.sobol_points(32, seed=8))
    values = codec.decode(a)
    assert set(values[:, 0].tolist()) == {0.0, 1.0, 2.0, 3.0, 4.0}
    assert set(values[:, 1].tolist()) == {0.0, 1.0, 2.0, 3.0}
    assert codec.sobol_points(0, seed=1).shape == (0, 6)


@pytest.mark.parametrize(
    ("param", "match"),
    [
        (NumericParam(2.0, 1.0), "low must be <= high"),
        (NumericParam(0.0, 1.0, log=True), "log=True needs low > 0"),
        (NumericParam(-1.0, 1.0, log=True), "log=True needs low > 0"),
        (NumericParam(0.0, 1.0, step=0.0), "step must be a positive"),
        (NumericParam(0.0, 1.0, step=-0.5), "step must be a positive"),
        (NumericParam(0.0, 1.0, step=math.nan), "step must be a positive"),
        (NumericParam(0.0, math.inf), "must be finite"),
        (NumericParam(math.nan, 1.0), "must be finite"),
        (NumericParam(0.5, 3.0, integer=True), "integral low"),
        (NumericParam(0.0, 3.0, step=0.5, integer=True), "integral step"),
        (NumericParam(1.0, 10.0, log=True, step=0.5), "log=True cannot be combined with step"),
        (NumericParam(1.0, 10.0, log=True, step=2.0, integer=True), "cannot be combined"),
        (CategoricalParam(0), "n_choices must be an integer >= 1"),
        (CategoricalParam(2.5), "n_choices must be an integer >= 1"),  # type: ignore[arg-type]
    ],
)
def test_invalid_specs_raise_clear_errors(param: Param, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        BoxCodec([NumericParam(0.0, 1.0), param])
    assert "params[1]" in str(info.value)  # the message says which parameter


def test_non_param_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expected NumericParam or CategoricalParam"):
        BoxCodec([(0.0, 1.0)])  # type: ignore[list-item]


# -- conditional parameters -----------------------------------------------------------------


def _conditional_codec() -> BoxCodec:
    # booster in {linear, tree, dart}; depth and eta for tree and dart; drop (and a nested
    # categorical "kind", itself under drop's parent) for dart only.
    from optuna_costbo._numerics.param_specs import Condition

    return BoxCodec(
        [
            CategoricalParam(3),  # 0 booster
            NumericParam(1, 12, integer=True),  # 1 depth
            NumericParam(1e-3, 1.0, log=True),  # 2 eta
            NumericParam(0.0, 1.0),  # 3 drop
            CategoricalParam(2),  # 4 kind
            NumericParam(0.0, 1.0),  # 5 always there
        ],
        conditions={
            1: Condition(0, frozenset({1, 2})),
            2: Condition(0, frozenset({1, 2})),
            3: Condition(0, frozenset({2})),
            4: Condition(0, frozenset({2})),
        },
    )


def test_inactive_parameters_decode_as_nan_and_encode_to_a_fixed_fill() -> None:
    codec = _conditional_codec()
    nan = np.nan
    values = np.array(
        [[0, nan, nan, nan, nan, 0.2], [1, 4, 0.01, nan, nan, 0.5], [2, 9, 0.1, 0.3, 1, 0.9]]
    )
    z = codec.encode(values)  # (3, D)
    np.testing.assert_array_equal(np.isnan(codec.decode(z)), np.isnan(values))
    np.testing.assert_allclose(
        np.nan_to_num(codec.decode(z), nan=-1), np.nan_to_num(values, nan=-1)
    )
    assert np.array_equal(codec.project(z), z)  # legal points are fixed points
    # Every configuration with booster = linear is one point, whatever the tree knobs say.
    other = codec.encode(np.array([[0, 11, 0.5, 0.9, 0, 0.2]]))
    np.testing.assert_array_equal(other, z[:1])
    # The fill of a numeric is its middle legal value, of a categorical a block of zeros.
    mask = codec.deactivate_with_mask(z)[1]
    assert mask[0].sum() == 1 + 1 + 1 + 2 and mask[1].sum() == 1 + 2 and not mask[2].any()
    depth_col = codec.continuous_columns[1]
    assert codec.decode(np.where(mask, 0.0, z))[1, 1] == 4  # active values untouched
    assert z[0, depth_col] == codec.project(np.full((1, codec.dim), 0.5))[0, depth_col]


@pytest.mark.parametrize("make", ["random", "sobol", "lhs"])
def test_generated_points_are_legal_with_conditions(make: str) -> None:
    codec = _conditional_codec()
    rng = np.random.default_rng(0)
    Z = {
        "random": lambda: codec.random_points(256, rng),
        "sobol": lambda: codec.sobol_points(256, seed=1),
        "lhs": lambda: codec.latin_hypercube_points(256, rng),
    }[make]()
    np.testing.assert_array_equal(codec.project(Z), Z)
    values = codec.decode(Z)
    booster = values[:, 0]
    np.testing.assert_array_equal(np.isnan(values[:, 1]), booster == 0)
    np.testing.assert_array_equal(np.isnan(values[:, 3]), booster != 2)
    np.testing.assert_array_equal(np.isnan(values[:, 4]), booster != 2)
    assert set(booster.tolist()) == {0.0, 1.0, 2.0}


def test_discrete_neighbours_switch_parents_and_stay_legal() -> None:
    codec = _conditional_codec()
    z = codec.encode(np.array([[1, 4, 0.01, np.nan, np.nan, 0.5]]))[0]
    nbrs = _neighbors_one_at_a_time(codec, z)
    np.testing.assert_array_equal(codec.project(nbrs), nbrs)
    values = codec.decode(nbrs)
    as_dart = values[values[:, 0] == 2]
    assert len(as_dart) == 1 and not np.isnan(as_dart[0]).any()  # dart switches drop on
    assert as_dart[0, 1] == 4  # and keeps the tree knobs
    assert np.isnan(values[values[:, 0] == 0][0, 1:5]).all()  # linear switches them off
    Z = codec.random_points(5, np.random.default_rng(3))  # with and without the tree knobs
    many, owner = codec.discrete_neighbors_many(Z)
    np.testing.assert_array_equal(many, np.vstack([_neighbors_one_at_a_time(codec, z) for z in Z]))
    assert set(owner.tolist()) == set(range(5))


def test_bad_conditions_are_refused_with_what_is_allowed() -> None:
    from optuna_costbo._numerics.param_specs import Condition

    params = [CategoricalParam(2), NumericParam(0.0, 1.0)]
    with pytest.raises(ValueError, match="categorical"):
        BoxCodec(params, conditions={0: Condition(1, frozenset({0}))})
    with pytest.raises(ValueError, match=r"choices must lie in \[0, 1\]"):
        BoxCodec(params, conditions={1: Condition(0, frozenset({2}))})
    with pytest.raises(ValueError, match="must be finite"):
        BoxCodec(params).encode(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="NaN only for conditional"):
        BoxCodec(params, conditions={1: Condition(0, frozenset({0}))}).encode(
            np.array([[np.nan, 0.5]])
        )


def test_the_optimizer_leaves_inactive_parameters_at_their_fill() -> None:
    # f rewards eta close to 1 and depth close to 12 strongly, but only a tree booster asks
    # them; a linear booster is best overall. The maximizer must be the legal linear point
    # (tree knobs at the fill), with f evaluated there, and match a brute-force search.
    from _maximize import maximize_one

    codec = _conditional_codec()
    target = codec.encode(np.array([[0, np.nan, np.nan, np.nan, np.nan, 0.7]]))[0]

    def f(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # (m, D) -> (m,), (m, D)
        w = np.ones(codec.dim)
        w[codec.continuous_columns[1:3]] = -0.5  # a pull towards large depth and eta
        diff = Z - target
        values = -(diff**2).sum(axis=1) + 0.1 * (Z @ np.where(w < 0, 1.0, 0.0))
        return values, -2 * diff + 0.1 * np.where(w < 0, 1.0, 0.0)

    z, value = maximize_one(f, codec, np.random.default_rng(0))
    np.testing.assert_array_equal(codec.project(z[None])[0], z)
    assert value == pytest.approx(float(f(z[None])[0][0]))
    brute = codec.random_points(20000, np.random.default_rng(1))
    assert value >= float(np.max(f(brute)[0])) - 1e-6
    assert codec.decode(z[None])[0, 0] == 0  # the linear booster


@pytest.mark.parametrize("pairs_at_once", [True, False])
def test_rows_among_is_exact_row_membership(
    monkeypatch: pytest.MonkeyPatch, pairs_at_once: bool
) -> None:
    # Both ways of comparing (every pair at once for small arrays, set membership past them).
    from optuna_costbo._numerics import search_space
    from optuna_costbo._numerics.search_space import rows_among

    monkeypatch.setattr(search_space, "_PAIRS_AT_ONCE", 10**9 if pairs_at_once else 0)

    rng = np.random.default_rng(0)
    points = rng.random((30, 4))  # (30, 4)
    Z = np.vstack([rng.random((50, 4)), points[[3, 7, 7]], points[:1] + 1e-16, -0.0 * points[:1]])
    Z[10] = points[20]
    brute = np.array([any(np.array_equal(z, p) for p in points) for z in Z])
    np.testing.assert_array_equal(rows_among(Z, points), brute)
    assert brute.sum() == 4  # rows 10, 50, 51, 52; a 1-ulp neighbour is another point
    assert rows_among(np.zeros((0, 4)), points).shape == (0,)
    assert not rows_among(Z, np.zeros((0, 4))).any()
    assert rows_among(np.zeros((2, 0)), np.zeros((1, 0))).all()  # no parameters: one point
    # -0.0 and 0.0 are the same configuration but not the same bytes: as before, not equal.
    assert not rows_among(np.array([[-0.0]]), np.array([[0.0]]))[0]
    # Bytes, not values: a NaN row is among the same NaN row.
    assert rows_among(np.array([[np.nan, 1.0]]), np.array([[0.5, 1.0], [np.nan, 1.0]]))[0]


def test_rows_among_gives_the_same_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    from optuna_costbo._numerics import search_space
    from optuna_costbo._numerics.search_space import rows_among

    rng = np.random.default_rng(1)
    for _ in range(50):
        D = int(rng.integers(1, 6))
        points = np.round(rng.random((int(rng.integers(1, 40)), D)), 1)  # (k, D), repeats
        Z = np.round(rng.random((int(rng.integers(1, 40)), D)), 1)  # (m, D)
        Z[rng.random(Z.shape) < 0.05] = -0.0
        monkeypatch.setattr(search_space, "_PAIRS_AT_ONCE", 10**9)
        small = rows_among(Z, points)
        monkeypatch.setattr(search_space, "_PAIRS_AT_ONCE", 0)
        np.testing.assert_array_equal(small, rows_among(Z, points))


def _one_at_a_time(codec: BoxCodec) -> BoxCodec:
    """A copy of ``codec`` that maps every numeric parameter on its own (the reference)."""
    import copy

    from optuna_costbo._numerics.param_specs import ContinuousBlock

    out = copy.copy(codec)
    out._block = ContinuousBlock([])
    out._block_params = np.zeros(0, dtype=np.intp)
    out._one_by_one = list(codec._numeric)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_continuous_parameters_together_map_as_one_at_a_time(seed: int) -> None:
    # encode, decode, project and the unit-cube points of the continuous block, bit for bit
    # those of the per-parameter maps: linear and log ranges (narrow, wide, far from 1) next
    # to integers, stepped floats, constants, categoricals and a conditional parameter.
    from optuna_costbo._numerics.param_specs import Condition

    rng = np.random.default_rng(seed)
    params = [
        NumericParam(-1.0, 1.0),
        NumericParam(1e-5, 1e2, log=True),
        NumericParam(1, 9, integer=True),
        NumericParam(0.3, 0.3),
        NumericParam(1e300, 1.000001e300, log=True),
        CategoricalParam(3),
        NumericParam(0.1, 0.9, step=0.2),
        NumericParam(-1e-300, 1e-300),
        NumericParam(2.0, 1e300, log=True),
        NumericParam(1e-7, 1.0),
    ]
    conditions = {9: Condition(parent=5, choices=frozenset({0, 2}))} if seed % 2 else None
    codec = BoxCodec(params, conditions=conditions)
    reference = _one_at_a_time(codec)
    z = rng.random((200, codec.dim))  # (n, D)
    z[:20] = np.round(z[:20])  # the box's faces
    z[20:30] = rng.uniform(-0.5, 1.5, size=(10, codec.dim))  # outside
    z[30, 0] = np.nan
    z[31] = -0.0
    for got, want in [
        (codec.decode(z), reference.decode(z)),
        (codec.project(z), reference.project(z)),
        (codec.encode(reference.decode(z)), reference.encode(reference.decode(z))),
        (codec.sobol_points(300, seed), reference.sobol_points(300, seed)),
    ]:
        assert got.tobytes() == want.tobytes()
    values = reference.decode(z)
    values[::7, 1] = rng.uniform(1e-9, 1e4, size=len(values[::7]))  # outside the range
    assert codec.encode(values).tobytes() == reference.encode(values).tobytes()
