"""The two-step hypervolume rollout against a plain reference: every fantasy conditioned by
refitting the objectives' GPs on one more observation (GPModel.condition_on), the front and
its boxes rebuilt, the last step's argmax searched point by point."""

from __future__ import annotations

import numpy as np
import pytest

from optuna_costbo._numerics.acquisition.ehvi import ehvi
from optuna_costbo._numerics.acquisition.ehvi_rollout import hvi_rollout_values
from optuna_costbo._numerics.acquisition.ehvi_rollout import qmc_outcome_normals
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.pareto import non_dominated_boxes
from optuna_costbo._numerics.pareto import reference_point


def _models(rng: np.random.Generator, m: int) -> tuple[list[GPModel], np.ndarray]:
    X = rng.random((9, 2))  # (n, 2)
    Y = np.column_stack([np.sin(3.0 * X @ rng.standard_normal(2)) for _ in range(m)])  # (n, m)
    # A tiny noise: an observation then conditions the latent value almost exactly.
    hyper = GPHyperparams(np.array([0.4, 0.6]), signal_var=1.0, noise_var=1e-10, mean=0.0)
    return [GPModel(X, Y[:, j], hyper) for j in range(m)], Y


def _reference(
    models: list[GPModel], Y: np.ndarray, actions: np.ndarray, n_first: int,
    cost: np.ndarray, normals: np.ndarray, e: float, pf: np.ndarray,
) -> np.ndarray:  # fmt: skip
    ref = reference_point(Y)
    told = [g.predict(actions) for g in models]
    mu = np.column_stack([t[0] for t in told])  # (P, m)
    sd = np.sqrt(np.column_stack([t[1] for t in told]))  # (P, m)
    lo, up = non_dominated_boxes(Y, ref)
    out = []
    for a in range(n_first):
        later, paid = 0.0, 0.0
        for z in normals:
            y = mu[a] + sd[a] * z  # (m,)
            fantasy = [g.condition_on(actions[a], float(y[j])) for j, g in enumerate(models)]
            told2 = [g.predict(actions) for g in fantasy]
            mu2 = np.column_stack([t[0] for t in told2])
            sd2 = np.sqrt(np.maximum(np.column_stack([t[1] for t in told2]), 0.0))
            for joined, w in ((True, pf[a]), (False, 1.0 - pf[a])):
                boxes = non_dominated_boxes(np.vstack([Y, y]), ref) if joined else (lo, up)
                r = np.array([ehvi(mu2[[i]], sd2[[i]], *boxes)[0] * pf[i] for i in range(len(mu2))])
                i = int(np.argmax(r))
                later += w * r[i]
                paid += w * cost[i]
        later, paid = later / len(normals), paid / len(normals)
        r0 = ehvi(mu[[a]], sd[[a]], lo, up)[0] * pf[a]
        out.append(max(np.log(r0) - e * np.log(cost[a]), np.log(r0 + later) - e * np.log(cost[a] + paid)))
    return np.array(out)


@pytest.mark.parametrize("m", [2, 3])
def test_the_rank_one_rollout_matches_refitted_fantasies(m: int) -> None:
    rng = np.random.default_rng(m)
    models, Y = _models(rng, m)
    actions = rng.random((14, 2))  # (P, 2): 4 first actions, then the inner candidates
    means = np.stack([g.predict(actions)[0] for g in models])  # (m, P)
    covs = np.stack([g.posterior_cov(actions) for g in models])  # (m, P, P)
    cost = rng.uniform(1.0, 5.0, len(actions))  # (P,)
    pf = rng.uniform(0.5, 1.0, len(actions))  # (P,)
    normals = rng.standard_normal((12, m))
    for e in (0.0, 0.6, 1.0):
        got = hvi_rollout_values(means, covs, Y, reference_point(Y), 4, cost, normals, e, pf)
        want = _reference(models, Y, actions, 4, cost, normals, e, pf)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_the_value_is_at_least_the_first_steps_rate_and_grows_with_a_cheap_next_step() -> None:
    rng = np.random.default_rng(7)
    models, Y = _models(rng, 2)
    actions = rng.random((10, 2))
    means = np.stack([g.predict(actions)[0] for g in models])
    covs = np.stack([g.posterior_cov(actions) for g in models])
    normals = qmc_outcome_normals(32, 2, 0)
    ref = reference_point(Y)
    lo, up = non_dominated_boxes(Y, ref)
    sd = np.sqrt(np.stack([np.diag(c) for c in covs]))  # (m, P)
    one_step = np.log(ehvi(means.T, sd.T, lo, up)[:3]) - np.log(2.0)
    dear = hvi_rollout_values(means, covs, Y, ref, 3, np.full(10, 2.0), normals, 1.0)
    assert np.all(dear >= one_step - 1e-12)  # the best prefix
    cheap_next = np.concatenate([np.full(3, 2.0), np.full(7, 1e-3)])
    assert np.all(hvi_rollout_values(means, covs, Y, ref, 3, cheap_next, normals, 1.0) > dear)


def test_bad_shapes_are_refused_with_the_expected_shape() -> None:
    with pytest.raises(ValueError, match=r"covs must have shape \(2, 3, 3\)"):
        hvi_rollout_values(np.zeros((2, 3)), np.zeros((2, 3, 2)), np.ones((2, 2)),
                           np.full(2, 2.0), 1, np.ones(3), np.zeros((4, 2)), 1.0)  # fmt: skip
    with pytest.raises(ValueError, match="normals must be an"):
        hvi_rollout_values(np.zeros((2, 3)), np.zeros((2, 3, 3)), np.ones((2, 2)),
                           np.full(2, 2.0), 1, np.ones(3), np.zeros((4, 3)), 1.0)  # fmt: skip
