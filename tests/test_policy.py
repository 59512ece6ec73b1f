"""The policy: one suggestion from encoded data."""

from __future__ import annotations

import numpy as np
import pytest

from optuna_costbo.policy import KnownCost
from optuna_costbo.policy import propose
from optuna_costbo.search_space import BoxCodec
from optuna_costbo.search_space import NumericParam


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
    for seed in range(3):
        p = propose(
            CODEC,
            X,
            y,
            X[:0],
            np.empty(0),
            acquisition="rollout",
            rng=np.random.default_rng(seed),
            remaining=6.0,
            budget=100.0,
            known_cost=known,
            X_running=running,
        )
        assert 1.0 + 9.0 * p.z[0] <= 6.0 - 3.0 + 1e-9  # affordable after the reservation
        assert p.message is None


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
