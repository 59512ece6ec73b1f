"""Parameters outside the relative search space (conditional or dynamic ones).

They go to the user's ``independent_sampler`` (Optuna's ``RandomSampler`` by default), with
Optuna's usual warning once the start-up design is done. Before any trial completes there is
no relative search space at all, and workers that share a seed would draw the same random
points; with the default sampler, each parameter then takes its start-up design value at the
trial's number instead, so that every trial gets its own point.
"""

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


__all__ = ["IndependentSampling"]

_logger = get_logger(__name__)


class IndependentSampling:
    """The independent route of one sampler.

    Args:
        sampler: The user's sampler; ``None``: ``RandomSampler(seed)`` and the design's first
            wave.
        seed: Seed of the default sampler.
        design: The sampler's start-up design.
    """

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
        """One parameter of ``trial``, with ``n_complete`` trials completed and
        ``startup_count`` trials before the models start."""
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
