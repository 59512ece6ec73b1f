"""How the rollout's finalists are decided (``scoring.decide``): blocks of draws until the
leader is clear, the draw-free key among those it is not clear of; and the polish of several
acquisitions in one batch of L-BFGS-B runs against separate ones."""

from __future__ import annotations

import numpy as np
import pytest

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.scoring import decide
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.optimize import RowFunAndGrad
from optuna_costbo._numerics.optimize import lbfgsb_runs


class _Blocks:
    """Values of F finalists on a block of draws: ``means`` plus noise of size ``noise``
    that depends on the block only (common random numbers); counts the blocks scored."""

    def __init__(self, means: list[float], noise: float, seed: int = 0) -> None:
        self.means, self.noise = np.array(means), noise
        self.rng = np.random.default_rng(seed)
        self.calls = 0

    def __call__(self, normals: np.ndarray) -> np.ndarray:
        self.calls += 1
        own = self.noise * self.rng.normal(size=len(self.means))  # (F,)
        return self.means + float(normals.mean()) + own


_NORMALS = np.random.default_rng(1).normal(size=(512, 1))


def test_a_clear_leader_is_chosen_after_few_blocks() -> None:
    score = _Blocks([1.0, 0.5, 0.2, -np.inf], noise=0.01)
    i, value = decide(score, _NORMALS, 8, tie_key=np.array([0.0, 9.0, 9.0, 9.0]))
    assert i == 0 and abs(value - 1.0) < 0.2
    assert score.calls == 2  # the least: its margin is 30+ standard errors after 2 blocks
    closer = _Blocks([1.0, 0.9], noise=0.05, seed=1)  # clear only once more blocks are in
    assert decide(closer, _NORMALS, 8, tie_key=np.array([0.0, 9.0]))[0] == 0
    assert 2 < closer.calls < 8


def test_finalists_the_draws_cannot_tell_apart_go_to_the_tie_key() -> None:
    # 0 and 2 differ by far less than the block-to-block noise: all 8 blocks are scored and
    # the key decides between them (never the clearly worse 1, nor the -inf 3).
    picks = set()
    for seed in range(6):
        score = _Blocks([1.0, 0.2, 1.0 + 1e-4, -np.inf], noise=0.05, seed=seed)
        i, _ = decide(score, _NORMALS, 8, tie_key=np.array([0.1, 5.0, 0.3, 9.0]))
        assert score.calls == 8
        picks.add(i)
    assert picks == {2}


def test_finalists_as_good_as_the_leader_stop_the_scoring_early() -> None:
    # 0 and 2 are within 0.01% of each other and the draws say so after a few blocks (their
    # difference is steady): no more blocks are drawn, and the key decides.
    for seed in range(4):
        score = _Blocks([1.0, 0.5, 1.0 + 1e-4], noise=0.0005, seed=seed)
        i, _ = decide(score, _NORMALS, 8, tie_key=np.array([0.1, 5.0, 0.3]))
        assert i == 2 and score.calls < 8


def test_decide_never_chooses_minus_inf_and_handles_one_block() -> None:
    score = _Blocks([-np.inf, 0.3], noise=0.0)
    assert decide(score, _NORMALS, 1, tie_key=np.array([1.0, 0.0]))[0] == 1
    everything_out = _Blocks([-np.inf, -np.inf], noise=0.0)
    assert not np.isfinite(decide(everything_out, _NORMALS, 8, np.zeros(2))[1])


@pytest.mark.parametrize("seed", range(3))
def test_the_polish_of_two_acquisitions_at_once_is_the_separate_polish(seed: int) -> None:
    # A bowl with its minimum at the centre and a cost rising along x1: EI peaks near the
    # centre, EI per unit cost below it; starts near the centre, inside the trust regions.
    rng = np.random.default_rng(seed)
    X = rng.random((20, 2))  # (20, 2)
    y = (X[:, 0] - 0.5) ** 2 + (X[:, 1] - 0.5) ** 2
    model = fit_gp(X, y, rng=rng)
    cost = FittedLogCost(fit_gp(X, 3.0 * X[:, 1], rng=rng, min_noise_var=1e-4))
    starts = 0.5 + 0.05 * rng.standard_normal((3, 2))  # (3, 2)
    each = np.repeat([0.0, 1.0], 3)

    def joint(Z: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        acq = LogEIPerCost(model, float(y.min()), cost_model=cost, cost_exponent=each[runs])
        return acq.value_and_grad(Z)

    def polish(fun: RowFunAndGrad, Z0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        box = np.clip(np.stack([Z0 - 0.2, Z0 + 0.2], axis=-1), 0.0, 1.0)  # (R, 2, 2)
        return lbfgsb_runs(fun, Z0, fun(Z0, np.arange(len(Z0)))[0], np.arange(2), box)

    Z, V = polish(joint, np.tile(starts, (2, 1)))
    for k, e in enumerate((0.0, 1.0)):
        alone = LogEIPerCost(model, float(y.min()), cost_model=cost, cost_exponent=e)
        Zk, Vk = polish(lambda Z, _runs, alone=alone: alone.value_and_grad(Z), starts)
        # Each start is a run of its own: the same iterates, to the rounding of a batch.
        np.testing.assert_allclose(V[3 * k : 3 * k + 3], Vk, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(Z[3 * k : 3 * k + 3], Zk, atol=1e-7)
        assert np.all(np.abs(Zk - starts) <= 0.2 + 1e-12)  # inside the trust region
        assert np.all(Vk >= alone(starts) - 1e-12)  # never worse than the start
    assert np.abs(Z[:3] - Z[3:]).max() > 1e-2  # the two acquisitions polish differently


@pytest.mark.parametrize("n_blocks", [2, 8])
def test_decide_is_a_function_of_the_scores(n_blocks: int) -> None:
    a = decide(_Blocks([0.5, 0.49], 0.02, 3), _NORMALS, n_blocks, np.array([0.0, 1.0]))
    b = decide(_Blocks([0.5, 0.49], 0.02, 3), _NORMALS, n_blocks, np.array([0.0, 1.0]))
    assert a == b
