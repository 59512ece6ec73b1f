"""The fast estimator of Lambda_h (``rollout_values``) against slow, plain references on
small problems (``tests/helpers/_rollout_reference.py``: the definition read literally with
continuous inner argmax and plain Monte Carlo, and the same definition on the estimator's own
action set one trajectory at a time), special cases of the definition, and the cost-aware
rate (per unit of budget, best prefix, cooled exponent, noise-free fantasies).
"""

from __future__ import annotations

import math
from typing import Any

from _rollout_reference import _DISC_ALLOWANCE
from _rollout_reference import _X_LAST
from _rollout_reference import _Z_TOL
from _rollout_reference import RefCost
from _rollout_reference import _assert_same_values
from _rollout_reference import _check_against_reference
from _rollout_reference import _discrete_reference
from _rollout_reference import _ei_ref
from _rollout_reference import _linear_cost
from _rollout_reference import _model_ei
from _rollout_reference import _pair
from _rollout_reference import _pair_case
from _rollout_reference import _pair_ref_cost
from _rollout_reference import _Problem
from _rollout_reference import _reference_lambda
from _rollout_reference import _second_reward_by_quadrature
from _rollout_reference import _state_free
from _rollout_reference import _two_steps_with_budget_to_spare
import numpy as np
import pytest

from optuna_costbo._numerics.acquisition.ei import ei as acq_ei
from optuna_costbo._numerics.acquisition.ei import ei as plain_ei
from optuna_costbo._numerics.acquisition.rollout_values import qmc_normals
from optuna_costbo._numerics.acquisition.rollout_values import rollout_values


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("tau", [3.0, 6.0])
@pytest.mark.parametrize("horizon", [2, 3, 4])
def test_matches_discrete_reference_with_the_same_normals(
    dim: int, tau: float, horizon: int, problem_1d: _Problem, problem_2d: _Problem
) -> None:
    # Same action set, same normals: the only differences left are rank-one updates versus full
    # solves and rounding, so the values must agree to ~1e-9 (measured: <= 1.2e-16).
    problem = problem_1d if dim == 1 else problem_2d
    mean, cov = problem.mean_cov()
    cost = _linear_cost(problem.points)
    B = len(problem.firsts)
    normals = qmc_normals(64, horizon, seed=5)
    fast = rollout_values(
        mean, cov, problem.noise_var, problem.best, B, cost, tau, horizon, normals
    )
    ref = _discrete_reference(
        mean, cov, problem.noise_var, problem.best, B, lambda i: cost, cost[:B], tau, horizon,
        normals,
    )  # fmt: skip
    _assert_same_values(fast, ref)
    if tau == 3.0:
        assert np.isneginf(fast).any()  # the expensive first action (cost > 3) is excluded
    assert np.isfinite(fast).sum() >= 2


def test_rollout_values_rejects_bad_arguments(problem_1d: _Problem) -> None:
    mean, cov = problem_1d.mean_cov()
    cost = _linear_cost(problem_1d.points)
    args = (mean, cov, problem_1d.noise_var, problem_1d.best, 4)
    normals = qmc_normals(16, 2, seed=0)
    with pytest.raises(ValueError, match="horizon"):
        rollout_values(*args, cost, 6.0, 0, normals)
    with pytest.raises(ValueError, match="exactly one"):
        rollout_values(*args, cost, 6.0, 2, normals, pair_cost=lambda r: np.ones((len(r), 404)))
    with pytest.raises(ValueError, match="exactly one"):
        rollout_values(*args, None, 6.0, 2, normals)
    with pytest.raises(ValueError, match="first_cost"):
        rollout_values(*args, None, 6.0, 2, normals, pair_cost=lambda r: np.ones((len(r), 404)))


def test_horizon_one_is_ei_on_affordable_points_and_minus_inf_elsewhere(
    problem_1d: _Problem,
) -> None:
    firsts = np.linspace(0.0, 1.0, 41)[:, None]  # includes x = 0.5, whose cost is exactly tau
    P = np.vstack([firsts, problem_1d.inner])
    mean, cov = problem_1d.mean_cov(P)
    cost = _linear_cost(P)
    tau = 2.5
    values = rollout_values(
        mean, cov, problem_1d.noise_var, problem_1d.best, 41, cost, tau, 1, qmc_normals(8, 1, 0)
    )
    var = problem_1d.model.predict(firsts)[1]
    affordable = cost[:41] <= tau
    assert affordable.sum() == 21 and affordable[20]  # x <= 0.5, the boundary included
    assert np.all(np.isneginf(values[~affordable]))
    expected = acq_ei(mean[:41], var, problem_1d.best)
    assert np.max(expected[affordable]) > 0.1  # not a vacuous comparison of zeros
    np.testing.assert_allclose(values[affordable], expected[affordable], rtol=1e-7, atol=1e-15)
    np.testing.assert_array_equal(
        values[affordable], plain_ei(mean[:41], var, problem_1d.best)[affordable]
    )


@pytest.mark.parametrize("horizon", [2, 3, 4])
def test_budget_for_exactly_one_more_step_gives_ei(problem_1d: _Problem, horizon: int) -> None:
    # tau = 2.5 and c(x) = 1 + 3 x >= 1: after a first action with c(x) > 1.5 no point of the
    # action set is affordable, so every trajectory stops after the first step.
    firsts = np.array([[0.2], [0.33], [0.45], [0.5], [0.1], [0.7]])
    P = np.vstack([firsts, problem_1d.inner])
    mean, cov = problem_1d.mean_cov(P)
    cost = _linear_cost(P)
    tau = 2.5
    assert np.all(tau - cost[:4] < cost.min())
    normals = qmc_normals(256, horizon, seed=11)
    values = rollout_values(
        mean, cov, problem_1d.noise_var, problem_1d.best, 6, cost, tau, horizon, normals
    )
    ei = plain_ei(mean, np.diag(cov), problem_1d.best)[:6]
    np.testing.assert_allclose(values[:4], ei[:4], rtol=1e-12, atol=0.0)
    assert ei[1] > 0.1
    # Controls: x = 0.7 (cost 3.1) is unaffordable; with a budget of 4.5 the same first actions
    # leave enough for the EI bump around x = 0.33 (cost ~2) and the rollout adds to EI.
    assert np.isneginf(values[5])
    more = rollout_values(
        mean, cov, problem_1d.noise_var, problem_1d.best, 6, cost, 4.5, horizon, normals
    )
    assert np.all(more[:4] > ei[:4]) and np.max(more[:4] - ei[:4]) > 0.05


@pytest.mark.parametrize("horizon", [3, 4])
def test_uniform_cost_base_policy_is_ei(problem_1d: _Problem, horizon: int) -> None:
    mean, cov = problem_1d.mean_cov()
    P, B = len(mean), len(problem_1d.firsts)
    normals = qmc_normals(128, horizon, seed=3)

    def run(c: float, tau: float) -> np.ndarray:
        return rollout_values(
            mean, cov, problem_1d.noise_var, problem_1d.best, B, np.full(P, c), tau, horizon,
            normals,
        )  # fmt: skip

    # Scaling every cost and the budget by the same constant changes nothing: EI / c has the
    # argmax of EI. tau = 2.5 c allows two steps, tau = 10 c all of them.
    for k in (2.5, 10.0):
        base = run(1.0, k)
        np.testing.assert_array_equal(base, run(4.0, 4.0 * k))
        np.testing.assert_allclose(base, run(0.37, 0.37 * k), rtol=1e-12)
        # ... and the inner choices are those of EI: the EI-only discrete reference agrees.
        ref = _discrete_reference(
            mean, cov, problem_1d.noise_var, problem_1d.best, B, lambda i: np.ones(P),
            np.ones(B), k, horizon, normals, base="ei",
        )  # fmt: skip
        _assert_same_values(base, ref)

    # Control: with the non-uniform cost the EIpu inner step matters (an EI-only reference
    # differs), so the comparison above can fail.
    cost = _linear_cost(problem_1d.points)
    eipu = rollout_values(
        mean, cov, problem_1d.noise_var, problem_1d.best, B, cost, 6.0, horizon, normals
    )
    ei_only = _discrete_reference(
        mean, cov, problem_1d.noise_var, problem_1d.best, B, lambda i: cost, cost[:B], 6.0,
        horizon, normals, base="ei",
    )  # fmt: skip
    assert np.max(np.abs(eipu - ei_only)) > 1e-3


@pytest.mark.parametrize("dim", [1, 2])
def test_uniform_cost_horizon_two_is_at_least_ei(
    dim: int, problem_1d: _Problem, problem_2d: _Problem
) -> None:
    problem = problem_1d if dim == 1 else problem_2d
    firsts = np.random.default_rng(7).random((60, dim))
    P = np.vstack([firsts, problem.inner])
    mean, cov = problem.mean_cov(P)
    normals = qmc_normals(256, 2, seed=2)
    values = rollout_values(
        mean, cov, problem.noise_var, problem.best, 60, np.full(len(P), 1.5), 3.0, 2, normals
    )
    ei = plain_ei(mean[:60], np.diag(cov)[:60], problem.best)
    assert np.all(np.isfinite(values))
    assert np.all(values >= ei)  # the second reward is an EI, never negative
    assert np.min(values - ei) > 1e-3  # and here always positive: EI > 0 somewhere after x


@pytest.mark.parametrize(
    ("dim", "horizon", "n_ref"),
    [
        (1, 2, 300),
        (1, 3, 200),
        (2, 2, 200),
        pytest.param(1, 2, 3000, marks=pytest.mark.slow),
        pytest.param(1, 3, 3000, marks=pytest.mark.slow),
        pytest.param(2, 2, 3000, marks=pytest.mark.slow),
        pytest.param(2, 3, 3000, marks=pytest.mark.slow),
    ],
)
def test_agrees_with_continuous_monte_carlo_reference(
    dim: int, horizon: int, n_ref: int, problem_1d: _Problem, problem_2d: _Problem
) -> None:
    _check_against_reference(
        problem_1d if dim == 1 else problem_2d,
        horizon,
        n_ref,
        require_clear_pair=(dim, horizon) == (1, 2) or n_ref >= 3000,
    )


@pytest.mark.parametrize("n_ref", [200, pytest.param(3000, marks=pytest.mark.slow)])
def test_uniform_cost_agrees_with_ei_only_reference(problem_1d: _Problem, n_ref: int) -> None:
    # Uniform cost 2 and tau = 6: every step of a 3-step rollout is affordable, and the
    # reference's base policy is EI at every step (no cost anywhere in it).
    _check_against_reference(
        problem_1d, 3, n_ref, cost_fn=lambda Z: np.full(len(Z), 2.0), base="ei",
        require_clear_pair=n_ref >= 3000,
    )  # fmt: skip


@pytest.mark.parametrize("state_dependent", [False, True])
def test_horizon_two_second_reward_matches_quadrature(
    problem_1d: _Problem, state_dependent: bool
) -> None:
    # A sharper check of h = 2 than the Monte Carlo one: Lambda_2(x) - EI(x) = E[r_1] is a
    # one-dimensional integral over y_0. Measured: |difference| <= 4.5e-5 with cost 1 + 3 x and
    # <= 2.2e-4 with the state-dependent cost (200 nodes; 1.6e-5 and 2.2e-4 with 1000 nodes, so
    # what is left is the 400-point grid around the narrow reachable interval near x = 0.95).
    if state_dependent:
        firsts, P, first_cost, tau = _pair_case(problem_1d)
        mean, cov = problem_1d.mean_cov(P)
        fast = rollout_values(
            mean, cov, problem_1d.noise_var, problem_1d.best, len(firsts), None, tau, 2,
            qmc_normals(2048, 2, seed=1), pair_cost=lambda rows: _pair(P[rows], P),
            first_cost=first_cost,
        )  # fmt: skip
        cost: RefCost = _pair_ref_cost
    else:
        firsts, tau, cost = problem_1d.firsts, 6.0, _state_free(_linear_cost)
        fast = problem_1d.fast(tau, 2, _linear_cost, qmc_normals(2048, 2, seed=1))
    ei = _model_ei(problem_1d.model, firsts, problem_1d.best)
    for b, x in enumerate(firsts):
        quad = _second_reward_by_quadrature(problem_1d, x, tau, cost, 128)
        print(f"h=2 r_1 x={x} pair={state_dependent}: fast {fast[b] - ei[b]:.6f} quad {quad:.6f}")
        assert quad > 0.02  # not a comparison of zeros
        assert abs((fast[b] - ei[b]) - quad) <= _DISC_ALLOWANCE[1]


@pytest.mark.parametrize("horizon", [2, 3])
def test_state_dependent_cost_is_charged_from_the_previous_point(
    problem_1d: _Problem, horizon: int
) -> None:
    firsts, P, first_cost, tau = _pair_case(problem_1d)
    mean, cov = problem_1d.mean_cov(P)
    B = len(firsts)
    calls: list[np.ndarray] = []

    def pair_cost(rows: np.ndarray) -> np.ndarray:
        calls.append(np.array(rows))
        return _pair(P[rows], P)

    normals = qmc_normals(256, horizon, seed=9)
    args = (mean, cov, problem_1d.noise_var, problem_1d.best, B)
    fast = rollout_values(
        *args, None, tau, horizon, normals, pair_cost=pair_cost, first_cost=first_cost
    )
    # One pair_cost call per inner step; at step 1 the rows are the first actions.
    assert len(calls) == horizon - 1
    np.testing.assert_array_equal(np.sort(calls[0]), np.arange(B))
    choices: list[list[int]] = []
    ref = _discrete_reference(
        *args, lambda i: _pair(P[i : i + 1], P)[0], first_cost, tau, horizon, normals,
        choices=choices,
    )  # fmt: skip
    _assert_same_values(fast, ref)
    if horizon == 3:
        # At step 2 the rows are the points chosen at step 1 (every trajectory can afford its
        # own first action again at cost 0.25, so none stops at step 1).
        assert all(len(path) >= 1 for path in choices)
        assert set(calls[1].tolist()) == {path[0] for path in choices}
    # From x = 0.95 every step-1 choice lies within 0.05 of it.
    n = len(normals)
    reached = P[[path[0] for path in choices[2 * n : 3 * n]], 0]
    assert np.all(np.abs(reached - 0.95) <= 0.05 + 1e-12)

    # Control: charging from the last evaluated point instead changes the values.
    wrong = rollout_values(*args, _pair(_X_LAST[None], P)[0], tau, horizon, normals)
    assert abs(wrong[2] - fast[2]) > 0.01


@pytest.mark.parametrize(
    ("horizon", "n_ref"),
    [(2, 200), pytest.param(2, 3000, marks=pytest.mark.slow),
     pytest.param(3, 3000, marks=pytest.mark.slow)],
)  # fmt: skip
def test_state_dependent_cost_agrees_with_continuous_reference(
    problem_1d: _Problem, horizon: int, n_ref: int
) -> None:
    firsts, P, first_cost, tau = _pair_case(problem_1d)
    mean, cov = problem_1d.mean_cov(P)
    vals = np.array(
        [
            rollout_values(
                mean, cov, problem_1d.noise_var, problem_1d.best, len(firsts), None, tau,
                horizon, qmc_normals(512, horizon, seed=1000 + r),
                pair_cost=lambda rows: _pair(P[rows], P), first_cost=first_cost,
            )
            for r in range(4)
        ]
    )  # fmt: skip
    fast, fast_se = vals.mean(0), vals.std(0, ddof=1) / 2.0
    for b, x in enumerate(firsts):
        ref, ref_se = _reference_lambda(
            problem_1d.model, x, best=problem_1d.best, tau=tau, horizon=horizon,
            cost=_pair_ref_cost, n_samples=n_ref, seed=200 + 10 * horizon + b,
            grid=problem_1d.ref_grid, spacing=problem_1d.ref_spacing,
        )  # fmt: skip
        se = math.hypot(ref_se, fast_se[b])
        print(
            f"pair h={horizon} x={x} N={n_ref}: fast {fast[b]:.5f} (se {fast_se[b]:.1e}) "
            f"ref {ref:.5f} (se {ref_se:.1e}) z {(fast[b] - ref) / se:+.2f}"
        )
        assert se < 0.15 * ref
        assert abs(fast[b] - ref) <= _Z_TOL * se + _DISC_ALLOWANCE[1], (b, fast[b], ref, se)


def test_fixed_seed_gives_identical_values(problem_1d: _Problem) -> None:
    a, b, c = qmc_normals(256, 3, seed=7), qmc_normals(256, 3, seed=7), qmc_normals(256, 3, 8)
    assert a.shape == (256, 2) and qmc_normals(64, 1, seed=7).shape == (64, 1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.all(np.isfinite(a)) and abs(a.mean()) < 0.05 and abs(a.std() - 1.0) < 0.05
    first = problem_1d.fast(6.0, 3, _linear_cost, a)
    np.testing.assert_array_equal(first, problem_1d.fast(6.0, 3, _linear_cost, b))


def _ref_flags(rate: bool, last_overruns: bool, cost_exponent: float = 1.0) -> dict[str, Any]:
    """The reference's flags of ``rollout_values(rate=..., last_overruns=...)``."""
    return dict(
        noise_free=rate, per_unit_cost=rate, best_prefix=rate, last_overruns=last_overruns,
        cost_exponent=cost_exponent,
    )  # fmt: skip


def _whole_rate(args: tuple[Any, ...]) -> np.ndarray:
    """The reference's rate of the whole trajectory (no prefixes) for ``rollout_values`` args."""
    mean, cov, noise_var, best, B, cost, tau, horizon, normals = args
    return _discrete_reference(
        mean, cov, noise_var, best, B, lambda i: cost, cost[:B], tau, horizon, normals,
        noise_free=True, per_unit_cost=True, last_overruns=True,
    )  # fmt: skip


@pytest.mark.parametrize("tau", [3.0, 6.0, 40.0])
@pytest.mark.parametrize("horizon", [1, 2, 3])
@pytest.mark.parametrize(
    ("rate", "last_overruns", "cost_exponent"),
    [(False, False, 1.0), (False, True, 1.0), (True, False, 1.0), (True, True, 1.0),
     (True, True, 0.4), (True, False, 0.7)],
)  # fmt: skip
def test_the_values_match_the_discrete_reference(
    tau: float,
    horizon: int,
    rate: bool,
    last_overruns: bool,
    cost_exponent: float,
    problem_2d: _Problem,
) -> None:
    mean, cov = problem_2d.mean_cov()
    cost = _linear_cost(problem_2d.points)
    B = len(problem_2d.firsts)
    normals = qmc_normals(32, horizon, seed=3)
    fast = rollout_values(
        mean, cov, problem_2d.noise_var, problem_2d.best, B, cost, tau, horizon, normals,
        rate=rate, last_overruns=last_overruns, cost_exponent=cost_exponent,
    )  # fmt: skip
    ref = _discrete_reference(
        mean, cov, problem_2d.noise_var, problem_2d.best, B, lambda i: cost, cost[:B], tau,
        horizon, normals, **_ref_flags(rate, last_overruns, cost_exponent),
    )  # fmt: skip
    _assert_same_values(fast, ref, rtol=1e-8)


def test_the_rate_with_a_state_dependent_cost_matches_reference(problem_1d: _Problem) -> None:
    mean, cov = problem_1d.mean_cov()
    pts = problem_1d.points
    B = len(problem_1d.firsts)
    pair = _pair(pts, pts)  # (P, P): cost of moving from each point to each
    first_cost = _pair(_X_LAST[None], pts[:B])[0]
    normals = qmc_normals(32, 3, seed=4)
    for last_overruns, alpha in [(False, 1.0), (True, 1.0), (True, 0.3)]:
        fast = rollout_values(
            mean, cov, problem_1d.noise_var, problem_1d.best, B, None, 2.0, 3, normals,
            pair_cost=lambda rows: pair[rows], first_cost=first_cost, rate=True,
            last_overruns=last_overruns, cost_exponent=alpha,
        )  # fmt: skip
        ref = _discrete_reference(
            mean, cov, problem_1d.noise_var, problem_1d.best, B, lambda i: pair[i], first_cost,
            2.0, 3, normals, **_ref_flags(True, last_overruns, alpha),
        )  # fmt: skip
        _assert_same_values(fast, ref, rtol=1e-8)


def test_noise_free_fantasies_keep_the_total_variance() -> None:
    # First action a (cost 1.5), then only b (cost 0.5) is affordable: the second reward is
    # EI at b under the fantasy posterior, with the incumbent min(best, y_a). If the fantasy
    # posterior is the true conditional law of f_b given f_a (Var(m') + E[v'] = v), the tower
    # property makes its expectation the plain joint expectation
    # E[max(min(best, f_a) - f_b, 0)] over (f_a, f_b) ~ N(mean, cov), estimated here by brute
    # force. The paper's fantasy (a latent draw conditioned as a noisy observation) is not
    # that law (its mean moves too little, its variance shrinks too little): with noise as
    # large as the signal it misses the joint expectation by far more than the Monte Carlo
    # error. The rate's fantasies are the noise-free ones; at cost exponent 0 it is Lambda_h.
    mean = np.array([0.0, 0.2])
    cov = np.array([[1.0, 0.9], [0.9, 1.0]])
    cost = np.array([1.5, 0.5])
    best, noise = 0.0, 1.0
    rng = np.random.default_rng(0)
    f = rng.multivariate_normal(mean, cov, size=2_000_000)  # (S, 2)
    gain = np.maximum(np.minimum(best, f[:, 0]) - f[:, 1], 0.0)
    joint, se = float(gain.mean()), float(gain.std() / math.sqrt(len(gain)))
    normals = qmc_normals(4096, 2, seed=0)
    ei_a = float(_ei_ref(mean[0], cov[0, 0], best))

    def second_reward(rate: bool) -> float:
        lam = rollout_values(
            mean, cov, noise, best, 1, cost, 2.0, 2, normals, rate=rate, cost_exponent=0.0
        )
        return float(lam[0]) - ei_a

    assert abs(second_reward(True) - joint) < 4 * se + 2e-3 * joint
    assert abs(second_reward(False) - joint) > 0.5 * joint  # measured: 0.112 against 0.044
    # The same point observed exactly has nothing left to give: Lambda_2 = EI when the only
    # action is the first one again (the paper's fantasy still expects an improvement there).
    one = rollout_values(mean[:1], cov[:1, :1], noise, best, 1, np.ones(1), 10.0, 2, normals,
                         rate=True, cost_exponent=0.0)  # fmt: skip
    assert one[0] == pytest.approx(ei_a, rel=1e-6)
    paper = rollout_values(mean[:1], cov[:1, :1], noise, best, 1, np.ones(1), 10.0, 2, normals)
    assert paper[0] > 1.05 * ei_a


def test_best_prefix_is_the_larger_of_eipu_and_the_whole_rate(problem_2d: _Problem) -> None:
    # h = 2 with budget to spare: the prefixes are the first step alone (EI / c) and the whole
    # trajectory (Lambda_2 per unit consumed), so the value is the larger of the two plain
    # values; and it is never below either.
    args, (ei0, c0) = _two_steps_with_budget_to_spare(problem_2d, seed=2)
    eipu = ei0 / c0
    whole = _whole_rate(args)
    best = rollout_values(*args, rate=True, last_overruns=True)
    np.testing.assert_allclose(best, np.maximum(eipu, whole), rtol=1e-8)
    # Both prefixes win somewhere on this problem, or the check above would be one-sided.
    assert np.any(eipu > whole * (1 + 1e-6)) and np.any(whole > eipu * (1 + 1e-6))


def test_the_cost_exponent_moves_the_rate_from_eipu_to_lambda(problem_2d: _Problem) -> None:
    # Budget to spare, h = 2, best prefix: alpha = 1 is max(EI / c, the whole rate); alpha = 0
    # divides by 1, so the whole prefix is Lambda_2 itself (>= EI, the first prefix) and the
    # value is Lambda_2 (noise-free) on the same draws; in between, the first prefix is
    # EI-cool, EI / c^alpha.
    args, (ei0, c0) = _two_steps_with_budget_to_spare(problem_2d, seed=5)
    mean, cov, noise_var, best, B, cost, tau, horizon, normals = args
    lam = rollout_values(*args, rate=True, last_overruns=True, cost_exponent=0.0)
    ref_lam = _discrete_reference(
        mean, cov, noise_var, best, B, lambda i: cost, cost[:B], tau, horizon, normals,
        noise_free=True, last_overruns=True,
    )  # fmt: skip
    np.testing.assert_allclose(lam, ref_lam, rtol=1e-8)
    spent = lam / _whole_rate(args)  # the mean budget each first action's trajectories consume
    for alpha in (1.0, 0.5):
        got = rollout_values(*args, rate=True, last_overruns=True, cost_exponent=alpha)
        expected = np.maximum(ei0 / c0**alpha, lam / spent**alpha)
        np.testing.assert_allclose(got, expected, rtol=1e-8)


def test_the_rate_is_eipu_for_one_step_and_ei_at_the_last_step(problem_2d: _Problem) -> None:
    mean, cov = problem_2d.mean_cov()
    B = len(problem_2d.firsts)
    cost = _linear_cost(problem_2d.points)
    ei0 = _ei_ref(mean[:B], np.diag(cov)[:B], problem_2d.best)
    normals = qmc_normals(16, 1, seed=0)
    # h = 1 with budget to spare: EI / c.
    h1 = rollout_values(mean, cov, problem_2d.noise_var, problem_2d.best, B, cost, 100.0, 1,
                        normals, rate=True)  # fmt: skip
    np.testing.assert_allclose(h1, ei0 / cost[:B], rtol=1e-12)
    # Budget for one step only (every second step unaffordable): every trajectory strands the
    # rest, the divisor is tau for all, and the ranking is EI's.
    tau = float(cost[:B].min()) + 0.5 * float(cost.min())
    last = rollout_values(mean, cov, problem_2d.noise_var, problem_2d.best, B, cost, tau, 2,
                          qmc_normals(16, 2, seed=0), rate=True)  # fmt: skip
    ok = cost[:B] <= tau
    assert ok.any() and np.all(np.isneginf(last[~ok]))
    np.testing.assert_allclose(last[ok], ei0[ok] / tau, rtol=1e-12)


def test_under_the_overrun_rule_the_last_affordable_step_is_ei_whatever_its_cost(
    problem_2d: _Problem,
) -> None:
    # The study stops once its budget is spent, so a trial may start with any budget left. With
    # less budget left than the cheapest point costs, every first action ends the run and
    # consumes all of tau: every first action may be chosen, ranked by EI; with the paper's rule
    # none is affordable.
    mean, cov = problem_2d.mean_cov()
    B = len(problem_2d.firsts)
    cost = _linear_cost(problem_2d.points)
    ei0 = _ei_ref(mean[:B], np.diag(cov)[:B], problem_2d.best)
    tau = 0.5 * float(cost.min())
    normals = qmc_normals(16, 2, seed=0)
    args = (mean, cov, problem_2d.noise_var, problem_2d.best, B, cost, tau, 2, normals)
    np.testing.assert_allclose(
        rollout_values(*args, rate=True, last_overruns=True), ei0 / tau, rtol=1e-12
    )
    assert np.all(np.isneginf(rollout_values(*args, rate=True)))
    # Nothing left: nothing may start.
    none = rollout_values(mean, cov, problem_2d.noise_var, problem_2d.best, B, cost, 0.0, 2,
                          normals, rate=True, last_overruns=True)  # fmt: skip
    assert np.all(np.isneginf(none))


@pytest.mark.parametrize("per_cost", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_the_base_policy_step_is_the_plain_argmax_of_ei_over_every_point(
    per_cost: bool, seed: int
) -> None:
    # The bound-pruned step against the argmax of plain EI (per unit cost) over all points:
    # the same index and the same EI, bit for bit, in every trajectory; ties (duplicated
    # points), the far tail (z ~ -40, EI underflowing), zero costs and trajectories with
    # nothing affordable included.
    from optuna_costbo._numerics.acquisition.rollout_values import _base_policy
    from optuna_costbo._numerics.cost_model import COST_FLOOR

    rng = np.random.default_rng(seed)
    B, N, P = 4, 64, 40
    m = rng.normal(size=(B, N, P))  # (B, N, P)
    m[..., 5] = m[..., 3]  # a tie between two points
    m[:, :8] += 40.0  # far above the incumbent: EI underflows to 0 in these trajectories
    v = rng.uniform(0.01, 1.0, size=(B, 1, P))  # (B, 1, P)
    v[..., 5] = v[..., 3]
    ystar = rng.normal(size=(B, N)) - 1.0  # (B, N)
    cost = np.broadcast_to(rng.uniform(0.0, 3.0, size=(B, 1, P)), (B, N, P))
    afford = rng.random((B, N, P)) < 0.7  # (B, N, P)
    afford[0, :3] = False  # nothing affordable
    j, gain = _base_policy(m, v, ystar, cost if per_cost else None, afford)
    full = plain_ei(m, v, ystar[..., None])  # (B, N, P)
    score = full / np.maximum(cost, COST_FLOOR) if per_cost else full
    want = np.argmax(np.where(afford, score, -np.inf), axis=-1)  # (B, N)
    np.testing.assert_array_equal(j, want)
    some = afford.any(axis=-1)
    at_want = np.take_along_axis(full, want[..., None], axis=-1)[..., 0]  # (B, N)
    np.testing.assert_array_equal(gain[some], at_want[some])
    assert np.all(j[~some] == 0) and np.all(gain[~some] == 0.0)


def test_ei_is_exactly_zero_below_the_base_policys_zero_point() -> None:
    # _base_policy sets the points below _Z_ZERO to 0.0 without their erfc: plain EI must be
    # exactly 0.0 there (exp and ndtr underflow), down to the most negative finite z.
    from optuna_costbo._numerics.acquisition.rollout_values import _Z_ZERO

    z = -np.concatenate([np.geomspace(-_Z_ZERO, 1e150, 20_001), [np.nextafter(-_Z_ZERO, 50.0)]])
    for sd in (1e-150, 1e-3, 1.0, 1e3):
        out = plain_ei(np.zeros_like(z), np.full_like(z, sd * sd), z * sd)
        assert np.all(out == 0.0)


@pytest.mark.parametrize("per_cost", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_the_base_policy_step_without_any_improvement_is_the_plain_argmax(
    per_cost: bool, seed: int
) -> None:
    # Trajectories in which the incumbent lies far below every point (EI exactly 0, where the
    # step skips the erfc), mixed with a few points near z ~ -38 (EI subnormal or 0) and
    # z = -inf: the same index and EI as the argmax of plain EI over all points, bit for bit.
    from optuna_costbo._numerics.acquisition.rollout_values import _base_policy
    from optuna_costbo._numerics.cost_model import COST_FLOOR

    rng = np.random.default_rng(seed)
    B, N, P = 3, 32, 50
    v = rng.uniform(0.01, 1.0, size=(B, 1, P))  # (B, 1, P)
    ystar = rng.normal(size=(B, N))  # (B, N)
    z = rng.uniform(-300.0, -39.5, size=(B, N, P))  # (B, N, P) far below: EI is 0
    z[:, : N // 2, :3] = rng.uniform(-38.8, -37.0, size=(B, N // 2, 3))  # EI 0 or subnormal
    z[:, ::5, 7] = -39.0  # exactly at the zero point
    z[0, 3, 9] = -np.inf  # EI is NaN there: the plain argmax picks it
    z[1, 4, :] = -1.0  # a trajectory with ordinary EI
    m = ystar[..., None] - z * np.sqrt(v)  # (B, N, P)
    m[0, 3, 9] = np.inf
    cost = np.broadcast_to(rng.uniform(0.0, 3.0, size=(B, 1, P)), (B, N, P))
    afford = np.broadcast_to((rng.random((B, N)) < 0.8)[..., None], (B, N, P))
    with np.errstate(invalid="ignore"):
        j, gain = _base_policy(m, v, ystar, cost if per_cost else None, afford)
        full = plain_ei(m, v, ystar[..., None])  # (B, N, P)
    score = full / np.maximum(cost, COST_FLOOR) if per_cost else full
    want = np.argmax(np.where(afford, score, -np.inf), axis=-1)  # (B, N)
    some = afford[..., 0]
    np.testing.assert_array_equal(j[some], want[some])
    at_want = np.take_along_axis(full, want[..., None], axis=-1)[..., 0]  # (B, N)
    np.testing.assert_array_equal(gain[some], at_want[some])
    assert np.all(j[~some] == 0) and np.all(gain[~some] == 0.0)


def test_the_base_policy_step_gives_the_same_when_it_may_overwrite_the_means() -> None:
    # spare_m (the last step: the means are not needed after it) forms z in m's memory.
    from optuna_costbo._numerics.acquisition.rollout_values import _base_policy

    rng = np.random.default_rng(7)
    B, N, P = 3, 16, 30
    m = rng.normal(size=(B, N, P))  # (B, N, P)
    v = rng.uniform(0.01, 1.0, size=(B, 1, P))  # (B, 1, P)
    ystar = rng.normal(size=(B, N)) - 1.0  # (B, N)
    afford = np.ones((B, N, 1), dtype=bool)
    want = _base_policy(m, v, ystar, None, afford)
    got = _base_policy(m.copy(), v, ystar, None, afford, spare_m=True)
    for a, b in zip(want, got, strict=True):
        assert a.tobytes() == b.tobytes()
