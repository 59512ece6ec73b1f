"""Parameters outside the relative search space, sampled by ``independent_sampler``."""

from __future__ import annotations

from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.samplers import RandomSampler
from optuna.trial import FrozenTrial

from optuna_costbo._logging import get_logger
from optuna_costbo._optuna_compat import INDEPENDENT_SAMPLING_WARNING_TEMPLATE
from optuna_costbo._sampler.startup import StartupDesign


_logger = get_logger(__name__)


class IndependentSampling:
    """The independent route; before any trial completes, the default ``RandomSampler(seed)``
    yields to the start-up design so that seeded workers differ."""

    def __init__(
        self, sampler: BaseSampler | None, seed: int | None, design: StartupDesign
    ) -> None:
        self.sampler = sampler or RandomSampler(seed=seed)
        self._default = sampler is None
        self._design = design

    def sample(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        name: str,
        dist: BaseDistribution,
        n_complete: int,
        startup_count: int,
    ) -> Any:
        """One parameter of ``trial``; warns once the start-up trials are done."""
        if n_complete >= startup_count:
            _logger.warning(
                INDEPENDENT_SAMPLING_WARNING_TEMPLATE.format(
                    param_name=name,
                    trial_number=trial.number,
                    independent_sampler_name=type(self.sampler).__name__,
                    sampler_name="CostRolloutSampler",
                    fallback_reason="the parameter is not in the search space shared by "
                    "all completed trials (conditional or dynamic search space)",
                )
            )
        if self._default and n_complete == 0:
            return self._design.first_wave_value(name, dist, trial.number)
        return self.sampler.sample_independent(study, trial, name, dist)
