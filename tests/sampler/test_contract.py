"""Optuna's own sampler contract tests, run for every acquisition (multi-objective ones too:
the sampler takes studies of 2-4 objectives).

``optuna.testing.pytest_samplers`` first ships with Optuna 4.8: on an older Optuna (the lowest
declared one, in ``.ci/run``'s lowest-versions job) this module skips, as tests/SKIPS.md allows.
"""

from __future__ import annotations

from collections.abc import Callable

import optuna
from optuna.samplers import BaseSampler
import pytest

from optuna_costbo import CostRolloutSampler


_contract = pytest.importorskip(
    "optuna.testing.pytest_samplers",
    reason=f"Optuna {optuna.__version__} ships no optuna.testing.pytest_samplers (from 4.8 on)",
)
BasicSamplerTestCase = _contract.BasicSamplerTestCase
RelativeSamplerTestCase = _contract.RelativeSamplerTestCase
MultiObjectiveSamplerTestCase = _contract.MultiObjectiveSamplerTestCase


optuna.logging.set_verbosity(optuna.logging.ERROR)


def _factory(acquisition: str) -> Callable[[], BaseSampler]:
    # n_startup_trials=1 so that the models, not the startup design, answer almost every
    # suggestion of the contract tests.
    return lambda: CostRolloutSampler(
        budget=1e9, acquisition=acquisition, n_startup_trials=1, seed=0
    )


class TestEI(BasicSamplerTestCase, RelativeSamplerTestCase, MultiObjectiveSamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return _factory("ei")


class TestEIpu(BasicSamplerTestCase, RelativeSamplerTestCase, MultiObjectiveSamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return _factory("eipu")


class TestEICool(BasicSamplerTestCase, RelativeSamplerTestCase, MultiObjectiveSamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return _factory("ei-cool")


class TestRollout(BasicSamplerTestCase, RelativeSamplerTestCase, MultiObjectiveSamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return _factory("rollout")
