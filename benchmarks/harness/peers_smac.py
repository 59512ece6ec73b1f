"""SMAC3 as an Optuna sampler: a benchmark-only peer beside :mod:`benchmarks.harness.peers`.

:class:`SMACSampler` runs SMAC3 2.3 (Lindauer et al., *SMAC3: A versatile Bayesian
optimization package for hyperparameter optimization*, JMLR 2022) through its
``HyperparameterOptimizationFacade`` with the facade's defaults, as a user of SMAC runs it for
hyperparameter optimization: a random forest on log-transformed values, log EI maximized by
local and random search, each configuration random with probability 0.2, a new forest
after every 8 configurations, and a scrambled Sobol initial design of ``min(10 d,
n_trials / 4)`` configurations. Cost-blind.

SMAC needs ConfigSpace >= 1.0 and ``pyrfr`` (built with SWIG), so it has its own environment
(``benchmarks/problems/README_yahpo.md``); it is imported only when a sampler is made.

The relative search space, its encoding (floats and log ints as they are, log scales kept;
other ints, stepped grids and categoricals as indices) and the independent sampler for the
rest are those of :mod:`benchmarks.harness.peers`. Unlike ``HEBOSampler``, SMAC's state (run
history, intensifier, the initial design's place) lives in the sampler object: one process per
study, one suggestion at a time (a lock). When the relative search space changes, SMAC is
started again on the new one and told every completed trial. SMAC never repeats a
configuration: once it finds no new one (a small discrete space), the trials are sampled by
the independent sampler.
"""

from __future__ import annotations

import functools
import math
import tempfile
import threading
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.samplers import BaseSampler
from optuna.search_space import IntersectionSearchSpace
from optuna.study import Study
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from benchmarks.harness.peers import IndependentFallback
from benchmarks.harness.peers import _check_single_objective
from benchmarks.harness.peers import _decode
from benchmarks.harness.peers import _encode
from benchmarks.harness.peers import _n_steps


SMAC_INSTALL = (
    "apt-get install swig, then in an environment with ConfigSpace>=1.0 (not the yahpo one): "
    "pip install smac==2.3.1 and pip install --no-deps yahpo-gym==1.0.2 "
    "(benchmarks/problems/README_yahpo.md)"
)

_logger = optuna.logging.get_logger("optuna.benchmarks.peers_smac")

# NOTE(seed of the runs): SMAC's intensifier keeps the target-function seeds it has seen; every
# trial is told with this one, so a deterministic problem has one seed and SMAC never asks to
# re-run a configuration on another.
_RUN_SEED = 0


def smac_unavailable() -> str | None:
    """None if SMAC3 imports here, else why not (with the install command)."""
    try:
        _import_smac()
    except ImportError as exc:
        return f"SMAC3 is not installed ({exc}); {SMAC_INSTALL}"
    return None


@functools.cache
def _import_smac() -> Any:
    import smac

    return smac


def _config_space(search_space: dict[str, BaseDistribution], seed: int) -> Any:
    """The ConfigSpace of the encoded relative search space (see the module docstring)."""
    from ConfigSpace import Categorical
    from ConfigSpace import ConfigurationSpace
    from ConfigSpace import Float
    from ConfigSpace import Integer

    space = ConfigurationSpace(seed=seed)
    for name, dist in search_space.items():
        if isinstance(dist, CategoricalDistribution):
            space.add(Categorical(name, list(range(len(dist.choices)))))
        elif isinstance(dist, FloatDistribution) and dist.step is None:
            space.add(Float(name, (dist.low, dist.high), log=dist.log))
        elif isinstance(dist, IntDistribution) and dist.log:
            space.add(Integer(name, (dist.low, dist.high), log=True))
        elif isinstance(dist, (FloatDistribution, IntDistribution)):
            space.add(Integer(name, (0, _n_steps(dist))))  # the grid's index
        else:
            raise NotImplementedError(f"SMACSampler does not support {dist!r} ({name})")
    return space


def _smac_value(value: Any, dist: BaseDistribution) -> Any:
    """An Optuna parameter value as the ConfigSpace value of its encoding."""
    encoded = _encode(value, dist)
    if isinstance(dist, FloatDistribution) and dist.step is None:
        return float(encoded)
    return round(encoded)


class SMACSampler(IndependentFallback):
    """SMAC3's hyperparameter-optimization facade as an Optuna sampler (single objective;
    benchmark-only).

    Args:
        seed: The seed of SMAC's scenario (its random forest, initial design, random
            configurations) and of the independent sampler. Default None: SMAC draws one.
        n_trials: The scenario's ``n_trials``; SMAC sizes its initial design from it
            (``min(10 d, n_trials / 4)``) and otherwise keeps asking past it. Default 100,
            SMAC's.
        independent_sampler: Samples the parameters outside the relative search space.
            Default None: ``RandomSampler(seed=seed)``.

    Example:
        .. code-block:: python

            import optuna
            from benchmarks.harness.peers_smac import SMACSampler

            def objective(trial):
                x = trial.suggest_float("x", -5, 5)
                kind = trial.suggest_categorical("kind", ["a", "b"])
                return (x - 1) ** 2 + (kind == "b")

            study = optuna.create_study(sampler=SMACSampler(seed=0, n_trials=30))
            study.optimize(objective, n_trials=30)
    """

    def __init__(
        self,
        *,
        seed: int | None = None,
        n_trials: int = 100,
        independent_sampler: BaseSampler | None = None,
    ) -> None:
        _import_smac()
        if n_trials < 1:
            raise ValueError(f"n_trials must be a positive integer, got {n_trials}")
        self._seed = seed
        self._n_trials = n_trials
        self._independent_sampler = independent_sampler or optuna.samplers.RandomSampler(seed=seed)
        self._search_space = IntersectionSearchSpace()
        self._space: dict[str, BaseDistribution] = {}
        self._facade: Any = None
        self._config_space: Any = None
        self._told: set[int] = set()
        self._exhausted = False
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._lock = threading.Lock()

    def reseed_rng(self) -> None:
        self._seed = None
        self._facade = None  # started again, with a seed of SMAC's, at the next suggestion
        self._independent_sampler.reseed_rng()

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        _check_single_objective(study)
        if not search_space:
            return {}
        with self._lock:
            if self._facade is None or search_space != self._space:
                self._start(search_space)
            self._tell_completed(study)
            info = None if self._exhausted else self._ask()
        if info is None:
            return {
                n: self._independent_sampler.sample_independent(study, trial, n, d)
                for n, d in search_space.items()
            }
        return {n: _decode(info.config[n], d) for n, d in search_space.items()}

    def _ask(self) -> Any:
        """SMAC's next trial, or None once it finds no new configuration."""
        try:
            return self._facade.ask()
        except StopIteration:  # SMAC repeats no configuration: a small discrete space runs out
            _logger.warning(
                "SMAC found no new configuration (its space looks exhausted): the trials are "
                "sampled by the independent sampler from now on"
            )
            self._exhausted = True
            return None

    def _start(self, search_space: dict[str, BaseDistribution]) -> None:
        smac = _import_smac()
        self._space = dict(search_space)
        seed = -1 if self._seed is None else self._seed  # -1: SMAC draws a seed
        self._config_space = _config_space(search_space, max(seed, 0))
        self._folder = tempfile.TemporaryDirectory(prefix="costbo-smac-")
        scenario = smac.Scenario(
            self._config_space,
            deterministic=True,
            n_trials=self._n_trials,
            seed=seed,
            output_directory=self._folder.name,
        )
        self._facade = smac.HyperparameterOptimizationFacade(
            scenario, target_function=_never_called, overwrite=True, logging_level=False
        )
        self._told = set()
        self._exhausted = False

    def _tell_completed(self, study: Study) -> None:
        from ConfigSpace import Configuration
        from smac.runhistory.dataclasses import TrialInfo
        from smac.runhistory.dataclasses import TrialValue

        sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
        for t in study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True):
            if t.number in self._told or t.value is None or not math.isfinite(t.value):
                continue
            if any(t.distributions.get(n) != d for n, d in self._space.items()):
                continue
            values = {n: _smac_value(t.params[n], d) for n, d in self._space.items()}
            config = Configuration(self._config_space, values=values)
            self._facade.tell(
                TrialInfo(config, seed=_RUN_SEED), TrialValue(cost=sign * t.value), save=False
            )
            self._told.add(t.number)


def _never_called(config: Any, seed: int = 0) -> float:
    """SMAC's facade wants a target function; ask and tell never call it."""
    raise RuntimeError("SMACSampler runs SMAC by ask and tell")


__all__ = ["SMAC_INSTALL", "SMACSampler", "smac_unavailable"]
