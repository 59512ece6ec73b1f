"""The recipes of docs/architecture.md hold: an acquisition is one class plus its registration,
a cost model is one class chosen in ``models._cost_model``, on both routes of a suggestion
(the full policy and the quick route); nothing else changes."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import optuna
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._numerics import models as models_mod
from optuna_costbo._numerics.acquisition import registry
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.acquisition.strategies import Choice
from optuna_costbo._numerics.cost_model import BoxPairCost
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._sampler.effort import EffortRule


optuna.logging.set_verbosity(optuna.logging.WARNING)


class LowestMean:
    """A new acquisition, written as the recipe says: pure exploitation of the posterior mean
    over a grid of the box, skipping evaluated points."""

    name: ClassVar[str] = "lowest-mean"
    needs_cost: ClassVar[bool] = False
    chosen: ClassVar[list[np.ndarray]] = []

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> LowestMean:
        return cls()

    def choose(self, ctx: AcquisitionContext) -> Choice:
        grid = np.linspace(0.0, 1.0, 101)[:, None]  # (101, 1)
        mean = ctx.model.predict(grid)[0]  # (101,)
        mean = np.where(ctx.excluded(grid), np.inf, mean)
        z = grid[int(np.argmin(mean))]
        type(self).chosen.append(z.copy())
        return Choice(z=z, value=float(-np.min(mean)))


def _quadratic(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", 0.0, 1.0)
    report_cost(trial, 1.0)
    return (x - 0.3) ** 2


def test_a_registered_acquisition_is_what_the_sampler_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(registry.ACQUISITIONS, LowestMean.name, LowestMean)
    monkeypatch.setattr(LowestMean, "chosen", [])
    sampler = CostRolloutSampler(
        budget=10.0, acquisition="lowest-mean", seed=0, n_startup_trials=4
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(_quadratic)

    xs = [t.params["x"] for t in study.trials]
    n_model = len(LowestMean.chosen)
    assert n_model == len(xs) - 4  # every trial after the 4 start-up ones
    np.testing.assert_allclose(xs[4:], [float(z[0]) for z in LowestMean.chosen])
    assert abs(study.best_params["x"] - 0.3) <= 0.011  # the grid's resolution


def test_an_unregistered_name_lists_the_registered_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"'eipu'.*got 'lowest-mean'"):
        CostRolloutSampler(budget=1.0, acquisition="lowest-mean")
    monkeypatch.setitem(registry.ACQUISITIONS, LowestMean.name, LowestMean)
    CostRolloutSampler(budget=1.0, acquisition="lowest-mean")


class CheapRight:
    """A new cost model, written as the recipe says: cost 1 for x >= 0.8, 1e4 elsewhere
    (log cost piecewise constant)."""

    pair_cost: BoxPairCost | None = None
    origin: np.ndarray | None = None
    max_evals: int | None = None
    calls = 0

    def _log(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        type(self).calls += 1
        out: np.ndarray = np.where(Z[:, 0] >= 0.8, 0.0, np.log(1e4))
        return out

    def log_cost(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        return self._log(Z)

    def log_cost_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._log(Z), np.zeros_like(Z)

    def cost(self, Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
        out: np.ndarray = np.exp(self._log(Z))
        return out


def _first_model_point(seed: int) -> float:
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
        return (x - 0.7) ** 2

    sampler = CostRolloutSampler(budget=5.0, acquisition="eipu", seed=seed, n_startup_trials=4)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective)
    assert len(study.trials) == 5
    return float(study.trials[4].params["x"])


def test_a_cost_model_chosen_in_one_place_steers_eipu(monkeypatch: pytest.MonkeyPatch) -> None:
    seeds = range(6)
    # With the fitted cost model (every reported cost is 1) EIpu is EI: mostly near 0.7.
    default = [_first_model_point(seed) for seed in seeds]
    assert sum(x < 0.8 for x in default) >= 4, default
    model: CostModel = CheapRight()  # satisfies the protocol (mypy checks this line)

    def choose(request, warm, rng, route):  # type: ignore[no-untyped-def]
        return model, warm.cost_n

    monkeypatch.setattr(models_mod, "_cost_model", choose)
    monkeypatch.setattr(CheapRight, "calls", 0)
    # With the new model, a factor 1e4 in cost outweighs the EI of the optimum's basin, next
    # to the cheap region: every first model point is a cheap one.
    steered = [_first_model_point(seed) for seed in seeds]
    assert all(x >= 0.8 for x in steered), steered
    assert CheapRight.calls > 0


def test_the_quick_route_uses_the_cost_model_chosen_in_the_same_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The quick route (sampler time charged, trials of milliseconds) builds its models with
    # models.build_models too: the new cost model steers it as it steers the full route.
    from optuna_costbo._numerics.param_specs import NumericParam
    from optuna_costbo._numerics.quick import quick_propose
    from optuna_costbo._numerics.request import CostData
    from optuna_costbo._numerics.request import ProposalRequest
    from optuna_costbo._numerics.request import WarmStart
    from optuna_costbo._numerics.search_space import BoxCodec

    X = np.array([[0.05], [0.15], [0.3], [0.4], [0.5], [0.95], [1.0], [0.2]])  # (8, 1)
    y = (X[:, 0] - 0.7) ** 2
    request = ProposalRequest(
        codec=BoxCodec([NumericParam(0.0, 1.0)]),
        X=X,
        y=y,
        remaining=100.0,
        budget=100.0,
        cost_data=CostData(X, np.ones(8)),
        warm=WarmStart(),
    )
    # With the fitted cost model (every cost 1, no hyperparameters yet: no cost model), the
    # quick route is EI: near 0.7.
    plain = quick_propose(request, np.random.default_rng(1), needs_cost=True, exponent=1.0)
    assert plain.cost_model is None and abs(float(plain.z[0]) - 0.7) < 0.1
    model: CostModel = CheapRight()

    def choose(request, warm, rng, route):  # type: ignore[no-untyped-def]
        assert route.quick
        return model, warm.cost_n

    monkeypatch.setattr(models_mod, "_cost_model", choose)
    monkeypatch.setattr(CheapRight, "calls", 0)
    steered = quick_propose(request, np.random.default_rng(1), needs_cost=True, exponent=1.0)
    assert steered.cost_model is model and CheapRight.calls > 0
    assert float(steered.z[0]) >= 0.8
    monkeypatch.undo()

    # And in a study whose trials take milliseconds, where the sampler's time is charged:
    # the trials after the start-up go to the cheap region first (with the measured costs,
    # all alike, they go straight to the optimum's basin).
    def first_model_points(steer: bool) -> tuple[list[float], list[bool]]:
        routes: list[bool] = []

        def counted(request, warm, rng, route):  # type: ignore[no-untyped-def]
            routes.append(route.quick)
            return model, warm.cost_n

        with monkeypatch.context() as m:
            if steer:
                m.setattr(models_mod, "_cost_model", counted)

            def fast(trial: optuna.Trial) -> float:
                return (trial.suggest_float("x", 0.0, 1.0) - 0.7) ** 2

            sampler = CostRolloutSampler(
                budget=1e3, acquisition="eipu", seed=0, n_startup_trials=4
            )
            sampler._suggester.effort = EffortRule(0.01)  # the quick route on trials of ms
            study = optuna.create_study(sampler=sampler)
            study.optimize(fast, n_trials=12)
        return [t.params["x"] for t in study.trials[4:9]], routes

    steered_xs, routes = first_model_points(True)
    # A full suggestion, then quick ones (each may serve several trials: effort.batch).
    assert routes[0] is False and len(routes) > 1 and all(routes[1:])
    assert sum(x >= 0.8 for x in steered_xs) >= 4, steered_xs
    default_xs, _ = first_model_points(False)
    assert sum(x >= 0.8 for x in default_xs) <= 1, default_xs
