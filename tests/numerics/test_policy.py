"""The policy: one suggestion from encoded data."""

from __future__ import annotations

import dataclasses
from typing import Any

from _policy_helpers import propose
import numpy as np
import pytest

from optuna_costbo._numerics.cost_model import KnownCost
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.search_space import BoxCodec


CODEC = BoxCodec([NumericParam(0.0, 1.0), NumericParam(0.0, 1.0)])


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((12, 2))  # (n, 2)
    y = np.sum((X - 0.6) ** 2, axis=1) + 0.3 * np.sin(7 * X[:, 0])  # (n,)
    return X, y


@pytest.mark.parametrize("acquisition", ["ei", "eipu", "ei-cool", "rollout"])
def test_running_trials_are_pending_points(acquisition: str) -> None:
    X, y = _data()
    costs = 1.0 + X[:, 0]
    kwargs = dict(acquisition=acquisition, remaining=1e6, budget=1e6)
    first = propose(CODEC, X, y, X, costs, rng=np.random.default_rng(1), **kwargs)  # type: ignore[arg-type]
    again = propose(
        CODEC,
        X,
        y,
        X,
        costs,
        rng=np.random.default_rng(1),
        X_running=first.z[None, :],
        **kwargs,  # type: ignore[arg-type]
    )
    assert np.linalg.norm(again.z - first.z) > 1e-3  # a second worker goes elsewhere


def test_running_trials_reserve_their_predicted_cost() -> None:
    X, y = _data()
    known = KnownCost(fn=lambda Z: 1.0 + 9.0 * Z[:, 0])  # cost 1 .. 10 along x0
    running = np.array([[0.0, 0.5]] * 3)  # three running trials of cost 1 each

    def run(acquisition: str, seed: int, remaining: float) -> Any:
        return propose(
            CODEC,
            X,
            y,
            X[:0],
            np.empty(0),
            acquisition=acquisition,
            rng=np.random.default_rng(seed),
            remaining=remaining,
            budget=100.0,
            known_cost=known,
            X_running=running,
        )

    for seed in range(3):
        # The paper's rule: only points the budget left after the reservation covers.
        p = run("rollout-paper", seed, 6.0)
        assert 1.0 + 9.0 * p.z[0] <= 6.0 - 3.0 + 1e-9
        assert p.message is None
        # The study's rule ("rollout"): any point while budget is left after the reservation;
        # none when the running trials are predicted to spend what is left: the near-cheapest
        # point, with a message.
        assert run("rollout", seed, 6.0).message is None
        p = run("rollout", seed, 2.5)
        assert 1.0 + 9.0 * p.z[0] <= 1.25 + 1e-9
        assert p.message is not None and "no point is affordable" in p.message


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_values_do_not_break_the_fit(bad: float) -> None:
    X, y = _data()
    y = y.copy()
    y[3] = bad
    p = propose(
        CODEC,
        X,
        y,
        X,
        1.0 + X[:, 0],
        acquisition="ei",
        rng=np.random.default_rng(0),
        remaining=1.0,
        budget=1.0,
    )
    assert np.all(np.isfinite(p.z)) and np.isfinite(p.value)


def test_a_moving_cost_starts_the_search_at_the_current_point() -> None:
    # A state-dependent cost that only a small neighbourhood of the current point makes cheap
    # and that is flat elsewhere (6-D: the 1024-point screening almost never lands there, and
    # no gradient leads there from outside), as a snapped or discrete cost is. EIpu should
    # find a move into it when the policy knows where the current point is, and cannot when it
    # does not.
    codec = BoxCodec([NumericParam(0.0, 1.0)] * 6)
    rng = np.random.default_rng(0)
    X = rng.random((20, 6))  # (n, 6)
    y = np.sum((X - 0.5) ** 2, axis=1)  # (n,)
    # The current point is not one of the observed points the search starts from anyway
    # (e.g. the last trial failed), and it is promising: EI is high around it.
    here = np.full(6, 0.45)

    def moving(Z: np.ndarray) -> np.ndarray:  # (m, 6) -> (m,): flat 50.1 beyond ~0.1
        return 0.1 + 50.0 * (1.0 - np.exp(-np.sum((Z - here) ** 2, axis=1) / 1e-3))

    def cost_of_proposal(origin: np.ndarray | None) -> float:
        known = KnownCost(fn=moving, pair_fn=lambda A, B: moving(B)[None], origin=origin)
        p = propose(
            codec,
            X,
            y,
            X[:0],
            np.empty(0),
            acquisition="eipu",
            rng=np.random.default_rng(1),
            remaining=100.0,
            budget=100.0,
            known_cost=known,
        )
        return float(moving(p.z[None])[0])

    assert cost_of_proposal(here) < 2.0
    assert cost_of_proposal(None) > 10.0


def test_hyperparameters_are_kept_between_refits_past_the_fit_subset() -> None:
    # Past max_fit_points observations the hyperparameters are optimized again only once the
    # data have grown by refit_growth; in between the kept ones condition a model on all data.
    from optuna_costbo._numerics import policy
    from optuna_costbo._numerics.acquisition.registry import make_acquisition
    from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
    from optuna_costbo._numerics.request import CostData
    from optuna_costbo._numerics.request import FitSchedule
    from optuna_costbo._numerics.request import ProposalRequest
    from optuna_costbo._numerics.request import WarmStart

    schedule = FitSchedule(max_fit_points=20, refit_from=20, refit_growth=0.25)
    rng = np.random.default_rng(0)
    X = rng.random((60, 2))
    y = np.sum((X - 0.6) ** 2, axis=1) + 0.3 * np.sin(7 * X[:, 0])
    costs = np.exp(X[:, 0])
    eipu = make_acquisition("eipu", AcquisitionOptions())
    warm = WarmStart()
    optimized_at, kept = [], []
    for n in range(18, 60, 3):
        request = ProposalRequest(
            codec=CODEC,
            X=X[:n],
            y=y[:n],
            remaining=100.0,
            budget=100.0,
            cost_data=CostData(X[:n], costs[:n]),
            warm=warm,
            schedule=schedule,
        )
        out = policy.propose(request, policy.Plan(eipu), np.random.default_rng(n))
        assert out.objective_model.n == n and out.cost_model.model.n == n  # type: ignore[union-attr]
        if out.warm.objective_n == n:
            optimized_at.append(n)
        else:
            assert warm.objective is not None
            np.testing.assert_array_equal(
                out.warm.objective.lengthscales,  # type: ignore[union-attr]
                warm.objective.lengthscales,
            )
            kept.append(n)
        assert out.warm.cost_n == out.warm.objective_n  # one schedule for both models
        warm = out.warm
    # Every fit up to 20 observations is optimized; past them one in every ~25% growth.
    assert optimized_at[:1] == [18]
    assert [n for n in optimized_at if n > 20] == [24, 30, 39, 51]  # n >= 1.25 x the last
    assert kept and all(n > 20 for n in kept)


def test_the_near_cheapest_fallback_never_proposes_an_evaluated_point() -> None:
    # Nothing affordable (tau < 0): the fallback is the best EI among the near-cheapest points.
    # Declared evaluated, that point must give way to the next best one.
    from optuna_costbo._numerics.acquisition.rollout import rollout_choice
    from optuna_costbo._numerics.acquisition.screening import screen
    from optuna_costbo._numerics.gp.fit import fit_gp
    from optuna_costbo._numerics.search_space import rows_among

    X, y = _data()
    model = fit_gp(X, y, rng=np.random.default_rng(0))
    known = KnownCost(fn=lambda Z: 1.0 + 9.0 * Z[:, 0])
    pool = screen(CODEC.sobol_points(1024, seed=1), model, float(y.min()), known)

    def choose(excluded: Any) -> Any:
        return rollout_choice(
            model, CODEC, np.random.default_rng(1), float(y.min()), -1.0, X[:2], known, pool,
            horizon=2, rate=False, last_overruns=False, excluded=excluded,
        )  # fmt: skip

    first = choose(None)
    assert first.message is not None and "no point is affordable" in first.message
    second = choose(lambda Z: rows_among(Z, first.z[None]))
    assert not np.array_equal(second.z, first.z)
    assert 1.0 + 9.0 * second.z[0] <= 1.25 * (1.0 + 9.0 * first.z[0]) + 1e-9


def test_models_are_conditioned_on_a_bounded_working_set() -> None:
    # Past max_model_points observations both models are conditioned on the working set (the
    # best, the newest, a random rest); a proposal repeated on the same data reuses its fits.
    from optuna_costbo._numerics import policy
    from optuna_costbo._numerics.acquisition.registry import make_acquisition
    from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
    from optuna_costbo._numerics.quick import quick_propose
    from optuna_costbo._numerics.request import CostData
    from optuna_costbo._numerics.request import FitSchedule
    from optuna_costbo._numerics.request import ProposalRequest

    rng = np.random.default_rng(0)
    X = rng.random((100, 2))
    y = np.sum((X - 0.6) ** 2, axis=1)
    costs = np.exp(X[:, 0])
    request = ProposalRequest(
        codec=CODEC,
        X=X,
        y=y,
        remaining=100.0,
        budget=100.0,
        cost_data=CostData(X, costs),
        schedule=FitSchedule(max_model_points=40),
    )
    eipu = make_acquisition("eipu", AcquisitionOptions())
    out = policy.propose(request, policy.Plan(eipu), np.random.default_rng(1))
    fitted = out.fitted
    assert fitted is not None and fitted.n == 40
    assert out.cost_model.model.n == 40  # type: ignore[union-attr]

    def rows(A: np.ndarray) -> set[tuple[float, ...]]:
        return {tuple(r) for r in A}

    best = np.argsort(y)[:10]
    assert rows(X[best]) <= rows(fitted.X)  # the best quarter
    assert rows(X[np.setdiff1d(np.arange(100), best)[-10:]]) <= rows(fitted.X)  # the newest
    assert float(np.min(fitted.y)) == float(np.min(y))
    again = policy.propose(request, policy.Plan(eipu), np.random.default_rng(2), reuse=out)
    assert again.fitted is fitted
    # The quick route keeps the same bound.
    quick = quick_propose(
        dataclasses.replace(request, warm=out.warm),
        np.random.default_rng(3),
        needs_cost=True,
        exponent=eipu.exponent(request.remaining, request.budget),
    )
    assert quick.fitted is not None and quick.fitted.n == 40
    assert quick.cost_model.model.n == 40  # type: ignore[union-attr]
    # Up to the bound, every observation.
    every = dataclasses.replace(request, schedule=FitSchedule(max_model_points=100))
    assert policy.propose(every, policy.Plan(eipu), np.random.default_rng(1)).fitted.n == 100  # type: ignore[union-attr]


@pytest.mark.parametrize("fraction", [1.0, 0.3])
def test_the_one_step_rollout_maximizes_ei_cool(fraction: float) -> None:
    # With h = 1 and budget to spare, the rollout's value of a point is EI / c^alpha with
    # alpha = remaining / budget (its plan is the point alone; the budget it consumes counts
    # to the power alpha), so its choice must reach the maximum of EI-cool, found here by brute
    # force on a grid under the proposal's own models (its costs are far below the budget left).
    from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
    from optuna_costbo._numerics.acquisition.rollout import Rollout

    rng = np.random.default_rng(3)
    X = rng.random((14, 2))
    # Two basins: the deeper one where evaluations are expensive.
    y = np.minimum(
        np.sum((X - [0.85, 0.3]) ** 2, axis=1) - 0.3, np.sum((X - [0.15, 0.7]) ** 2, axis=1)
    )
    costs = np.exp(8.0 * X[:, 0])
    settings = Rollout(horizon=1)
    out = propose(CODEC, X, y, X, costs, acquisition="rollout", rng=np.random.default_rng(0),
                  remaining=1e6 * fraction, budget=1e6, rollout=settings)  # fmt: skip
    assert out.cost_model is not None
    g = np.linspace(0.0, 1.0, 201)
    grid = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)  # (G, 2)

    def acq(alpha: float) -> LogEIPerCost:
        return LogEIPerCost(out.objective_model, float(y.min()), cost_model=out.cost_model,
                            cost_exponent=alpha)  # fmt: skip

    ours = acq(fraction)
    assert ours(out.z[None])[0] >= ours(grid).max() - 1e-3
    # The exponent matters here: at alpha = 0.3 the choice is not EIpu's maximizer.
    if fraction < 1.0:
        eipu = acq(1.0)
        assert eipu(out.z[None])[0] < eipu(grid).max() - 0.05
