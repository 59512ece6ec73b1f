"""Optuna's own sampler contract tests, run for every acquisition."""

from __future__ import annotations

from collections.abc import Callable

import optuna
from optuna.samplers import BaseSampler
from optuna.testing.pytest_samplers import BasicSamplerTestCase
from optuna.testing.pytest_samplers import RelativeSamplerTestCase
from optuna.testing.pytest_samplers import SingleOnlySamplerTestCase
import pytest

from optuna_costbo import CostRolloutSampler


optuna.logging.set_verbosity(optuna.logging.ERROR)


def _factory(acquisition: str) -> Callable[[], BaseSampler]:
    # n_startup_trials=1 so that the models, not the startup design, answer almost every
    # suggestion of the contract tests.
    return lambda: CostRolloutSampler(
        budget=1e9, acquisition=acquisition, n_startup_trials=1, seed=0
    )


class TestEI(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return _factory("ei")


class TestEIpu(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return _factory("eipu")


class TestEICool(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return _factory("ei-cool")


class TestRollout(BasicSamplerTestCase, RelativeSamplerTestCase, SingleOnlySamplerTestCase):
    @pytest.fixture
    def sampler(self) -> Callable[[], BaseSampler]:
        return _factory("rollout")
