"""The quick route: the last hyperparameters and one batched look at a candidate set."""

from __future__ import annotations

import numpy as np

from optuna_costbo._numerics.acquisition.ei import cool_exponent
from optuna_costbo._numerics.acquisition.ei import log_ei
from optuna_costbo._numerics.acquisition.rollout import PaperRollout
from optuna_costbo._numerics.acquisition.rollout import Rollout
from optuna_costbo._numerics.acquisition.strategies import EI
from optuna_costbo._numerics.acquisition.strategies import EICool
from optuna_costbo._numerics.acquisition.strategies import EIPerCost
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.policy import Plan
from optuna_costbo._numerics.policy import propose
from optuna_costbo._numerics.quick import QUEUE
from optuna_costbo._numerics.quick import candidates
from optuna_costbo._numerics.quick import quick_propose
from optuna_costbo._numerics.quick import ranked
from optuna_costbo._numerics.request import CostData
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import Route
from optuna_costbo._numerics.request import WarmStart
from optuna_costbo._numerics.search_space import BoxCodec
from optuna_costbo._numerics.search_space import rows_among


CODEC = BoxCodec([NumericParam(0.0, 1.0), NumericParam(1, 8, step=1), CategoricalParam(3)])
HYPER = GPHyperparams(np.array([0.3, 0.5, 1.0, 1.0, 1.0]), 1.0, 1e-4, 0.0)


def _request(evaluated: np.ndarray | None = None, **kw: object) -> ProposalRequest:
    rng = np.random.default_rng(0)
    X = CODEC.random_points(15, rng)  # (15, D)
    y = (X[:, 0] - 0.4) ** 2 + 0.1 * X[:, 1] + X[:, 2]  # (15,)
    return ProposalRequest(
        codec=CODEC,
        X=X,
        y=y,
        remaining=50.0,
        budget=100.0,
        warm=WarmStart(objective=HYPER, n_fits=7),
        evaluated=X if evaluated is None else evaluated,
        **kw,  # type: ignore[arg-type]
    )


def test_quick_route_takes_the_ei_argmax_of_its_candidates() -> None:
    request = _request()
    proposal = quick_propose(request, np.random.default_rng(3), needs_cost=False, exponent=0.0)
    # Brute force: the same candidates, the GP with the same hyperparameters, log EI.
    best_points = request.X[np.argsort(request.y)[:3]]
    Z = candidates(request, np.random.default_rng(3), best_points)  # (m, D)
    mean, var = GPModel(request.X, request.y, HYPER).predict(Z)
    values = log_ei(mean, var, float(request.y.min()))  # (m,)
    assert np.array_equal(proposal.z, Z[np.argmax(values)])
    assert np.array_equal(CODEC.project(proposal.z[None]), proposal.z[None])  # legal
    assert proposal.warm is request.warm  # the next full fit starts where the last one did


def test_quick_route_skips_evaluated_points() -> None:
    request = _request()
    best_points = request.X[np.argsort(request.y)[:3]]
    Z = candidates(request, np.random.default_rng(3), best_points)
    keep = len(Z) // 2
    taken = np.delete(Z, keep, axis=0)  # every candidate but one is evaluated
    proposal = quick_propose(
        _request(evaluated=taken), np.random.default_rng(3), needs_cost=False, exponent=0.0
    )
    assert np.array_equal(proposal.z, Z[keep])


def test_quick_route_divides_by_cost_while_budget_remains() -> None:
    rng = np.random.default_rng(1)
    X_cost = CODEC.random_points(15, rng)
    costs = np.exp(4.0 * X_cost[:, 0])  # expensive on the right
    cost_hyper = GPHyperparams(np.array([0.5, 1.0, 1.0, 1.0, 1.0]), 1.0, 1e-4, 0.0)
    request = _request(cost_data=CostData(X_cost, costs))
    request = ProposalRequest(**{**request.__dict__, "warm": WarmStart(HYPER, cost_hyper, 7)})
    plain = quick_propose(request, np.random.default_rng(3), needs_cost=False, exponent=0.0)
    aware = quick_propose(request, np.random.default_rng(3), needs_cost=True, exponent=0.5)
    assert plain.cost_model is None and aware.cost_model is not None
    assert aware.cost_model.cost(aware.z[None])[0] <= aware.cost_model.cost(plain.z[None])[0]


def test_quick_route_fits_once_without_a_warm_start() -> None:
    request = ProposalRequest(**{**_request().__dict__, "warm": None})
    proposal = quick_propose(request, np.random.default_rng(0), needs_cost=False, exponent=0.0)
    assert proposal.warm.objective is not None  # the quick fit is kept for next time
    assert np.isfinite(proposal.value)


def test_a_large_overhead_flattens_the_cost_to_plain_ei() -> None:
    rng = np.random.default_rng(1)
    X_cost = CODEC.random_points(15, rng)
    cost_hyper = GPHyperparams(np.array([0.5, 1.0, 1.0, 1.0, 1.0]), 1.0, 1e-4, 0.0)
    base = _request(cost_data=CostData(X_cost, np.exp(4.0 * X_cost[:, 0])))
    request = ProposalRequest(**{**base.__dict__, "warm": WarmStart(HYPER, cost_hyper, 7)})
    plain = quick_propose(request, np.random.default_rng(3), needs_cost=False, exponent=0.0)
    flat = quick_propose(
        request,
        np.random.default_rng(3),
        needs_cost=True,
        exponent=0.5,
        route=Route(quick=True, overhead=1e9),
    )
    assert np.array_equal(flat.z, plain.z)


def test_refit_moves_the_hyperparameters_from_the_warm_start() -> None:
    request = _request()
    proposal = quick_propose(
        request,
        np.random.default_rng(0),
        needs_cost=False,
        exponent=0.0,
        route=Route(quick=True, refit=True),
    )
    assert proposal.warm.objective is not None and proposal.fitted is not None
    assert proposal.warm.objective is proposal.fitted.hyper
    assert not np.allclose(proposal.warm.objective.lengthscales, HYPER.lengthscales)
    assert proposal.warm.n_fits == 7  # the full route's restart schedule is not shifted


def test_ranked_takes_the_best_values_spread_apart() -> None:
    rng = np.random.default_rng(5)
    Z = rng.uniform(size=(200, 2))  # (m, D)
    values = -np.sum((Z - 0.3) ** 2, axis=1)  # (m,)
    values[7] = np.nan
    rows = ranked(Z, values, 6, 0.1)
    # Brute force: walk the candidates from the best down, keep those far from every kept.
    order = sorted((i for i in range(200) if np.isfinite(values[i])), key=lambda i: -values[i])
    kept: list[int] = []
    for i in order:
        if len(kept) < 6 and all(np.linalg.norm(Z[i] - Z[j]) >= 0.1 for j in kept):
            kept.append(i)
    assert rows.tolist() == kept
    assert rows[0] == np.nanargmax(values) and 7 not in rows


def test_quick_route_queues_the_next_best_unevaluated_points() -> None:
    request = _request()
    proposal = quick_propose(request, np.random.default_rng(3), needs_cost=False, exponent=0.0)
    queued = np.array([z for z, _ in proposal.queue])  # (k, D)
    assert 1 <= len(queued) <= QUEUE - 1
    values = [proposal.value] + [v for _, v in proposal.queue]
    assert values == sorted(values, reverse=True)
    assert not rows_among(queued, request.X).any()  # none evaluated
    points = np.vstack([proposal.z, queued])
    gaps = np.linalg.norm(points[:, None] - points[None], axis=-1)[np.triu_indices(len(points), 1)]
    assert gaps.min() > 0.0  # distinct


def test_no_queue_with_constraints() -> None:
    request = _request(constraints=np.zeros((15, 1)))
    assert (
        quick_propose(request, np.random.default_rng(3), needs_cost=False, exponent=0.0).queue
        == ()
    )


def test_each_acquisition_gives_the_quick_route_its_own_cost_exponent() -> None:
    # EI ignores cost, EIpu divides by it to the end, EI-cool and the rollouts cool it.
    for acquisition, expected in [(EI(), 0.0), (EIPerCost(), 1.0), (EICool(), 0.3)]:
        assert acquisition.exponent(30.0, 100.0) == expected
    for rollout in (Rollout(), PaperRollout()):
        assert rollout.exponent(30.0, 100.0) == cool_exponent(30.0, 100.0) == 0.3


def test_the_policy_hands_the_plans_exponent_to_the_quick_route() -> None:
    rng = np.random.default_rng(1)
    X_cost = CODEC.random_points(15, rng)
    cost_hyper = GPHyperparams(np.array([0.5, 1.0, 1.0, 1.0, 1.0]), 1.0, 1e-4, 0.0)
    base = _request(cost_data=CostData(X_cost, np.exp(4.0 * X_cost[:, 0])))
    # The budget spent: EI-cool's exponent is 0, EIpu's still 1.
    request = ProposalRequest(
        **{**base.__dict__, "remaining": 0.0, "warm": WarmStart(HYPER, cost_hyper, 7)}
    )
    quick = Route(quick=True)
    made = {
        e: quick_propose(request, np.random.default_rng(3), needs_cost=True, exponent=e).z
        for e in (0.0, 1.0)
    }
    for acquisition, e in [(EICool(), 0.0), (Rollout(), 0.0), (EIPerCost(), 1.0)]:
        got = propose(request, Plan(acquisition, route=quick), np.random.default_rng(3))
        assert np.array_equal(got.z, made[e]), acquisition.name
    assert not np.array_equal(made[0.0], made[1.0])  # the exponent changes the choice here
