"""Strong optimizers from outside Optuna, as Optuna samplers: benchmark-only peers.

- :class:`HEBOSampler`: HEBO (Cowen-Rivers et al., *HEBO: Pushing the limits of
  sample-efficient hyperparameter optimisation*, JAIR 2022; winner of the NeurIPS 2020 black-box
  optimisation challenge) with its default settings, as a user of the ``HEBO`` package runs it:
  a GP on power-transformed values (Box-Cox / Yeo-Johnson), the MACE acquisition (EI, PI and
  UCB as a multi-objective problem) maximized by an NSGA-II evolutionary search, and a
  scrambled Sobol start-up of ``1 + d`` points.

Nothing here is cost-aware: the peers are the strong cost-blind references of the real group.
``HEBO`` (with ``pymoo``, ``gpytorch``, ``torch``, ``pandas``) is imported only when a sampler
is made, and never by ``optuna_costbo``; set-up in ``benchmarks/problems/README_yahpo.md``.

Mapping Optuna's distributions to HEBO's design space (HEBO minimizes; a maximized study's
values are negated):

- ``FloatDistribution``: ``num`` (uniform), ``pow`` (``log=True``: HEBO searches log10 x);
  with a ``step``, an ``int`` over the grid's indices;
- ``IntDistribution``: ``int``, ``pow_int`` (``log=True``); with a ``step`` > 1, an ``int``
  over the grid's indices;
- ``CategoricalDistribution``: ``cat`` over the choices' indices (Optuna's internal
  representation), so any choice type works.

Define-by-run: the relative search space is the intersection of the completed trials' spaces
(without single-value distributions), as Optuna's GP and multivariate TPE samplers do;
parameters outside it (the first trial's, conditional ones) come from ``independent_sampler``
(``RandomSampler`` by default).
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
import functools
import io
import math
import threading
from typing import Any

import numpy as np
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


HEBO_INSTALL = (
    "pip install --no-deps HEBO==0.3.6 && pip install pymoo==0.6.0 gpytorch disjoint-set "
    "(benchmarks/problems/README_yahpo.md)"
)

_logger = optuna.logging.get_logger("optuna.benchmarks.peers")

# NOTE(fit failures): HEBO fits its GP by pSGLD, whose Langevin noise has variance
# 2 lr / sqrt(running mean squared gradient): a parameter whose gradient vanishes (e.g. a
# categorical's embedding) gets huge kicks, the kernel matrix turns NaN, and HEBO prints these
# lines, keeps the broken model and predicts N(0, 1) everywhere for that suggestion. Seen on
# yahpo-xgb-cond-4534 (the booster's embedding, 1 of 24 suggestions). HEBO's own behaviour,
# kept; each such suggestion logs a warning, which the runner counts (``Run.n_warnings``).
_FIT_FAILURES = ("give up fitting GP", "output random predictions")

# NOTE(lock): HEBO draws from numpy's and torch's global generators and the acquisition effort
# is set by swapping a module attribute; both are process-wide, so one suggestion at a time.
_HEBO_LOCK = threading.Lock()


def hebo_unavailable() -> str | None:
    """None if HEBO imports here, else why not (with the install command)."""
    try:
        _import_hebo()
    except ImportError as exc:
        return f"HEBO is not installed ({exc}); {HEBO_INSTALL}"
    return None


@functools.cache
def _import_hebo() -> Any:
    """The ``hebo.optimizers.hebo`` module, imported once: pymoo's warning that its compiled
    modules are missing is silenced, and the torch thread count that HEBO's import sets to 1
    for the process is put back (HEBO gets its one thread per suggestion, ``_hebo_globals``;
    other methods in the process keep theirs)."""
    import torch

    threads = torch.get_num_threads()
    try:
        from pymoo.config import Config

        Config.warnings["not_compiled"] = False
        import hebo.optimizers.hebo as hebo_module
    finally:
        torch.set_num_threads(threads)
    return hebo_module


def _hebo_param(name: str, dist: BaseDistribution) -> dict[str, Any]:
    """HEBO's design-space record of one Optuna distribution (see the module docstring)."""
    if isinstance(dist, CategoricalDistribution):
        return {"name": name, "type": "cat", "categories": list(range(len(dist.choices)))}
    if isinstance(dist, (FloatDistribution, IntDistribution)):
        if dist.log:
            kind = "pow" if isinstance(dist, FloatDistribution) else "pow_int"
            return {"name": name, "type": kind, "lb": dist.low, "ub": dist.high}
        if isinstance(dist, FloatDistribution) and dist.step is None:
            return {"name": name, "type": "num", "lb": dist.low, "ub": dist.high}
        return {"name": name, "type": "int", "lb": 0, "ub": _n_steps(dist)}
    raise NotImplementedError(f"HEBOSampler does not support {dist!r} ({name})")


def _n_steps(dist: FloatDistribution | IntDistribution) -> int:
    step = dist.step if dist.step is not None else 1
    return round((dist.high - dist.low) / step)


def _encode(value: Any, dist: BaseDistribution) -> float:
    """An Optuna parameter value as HEBO's column value."""
    if isinstance(dist, CategoricalDistribution):
        return dist.to_internal_repr(value)
    assert isinstance(dist, (FloatDistribution, IntDistribution))
    if dist.log or (isinstance(dist, FloatDistribution) and dist.step is None):
        return float(value)
    step = dist.step if dist.step is not None else 1
    return float(round((value - dist.low) / step))


def _decode(value: Any, dist: BaseDistribution) -> Any:
    """HEBO's column value as an Optuna parameter value of the distribution (Python types,
    inside the bounds: HEBO's float32 log transforms can land just outside)."""
    if isinstance(dist, CategoricalDistribution):
        return dist.choices[int(np.clip(round(float(value)), 0, len(dist.choices) - 1))]
    assert isinstance(dist, (FloatDistribution, IntDistribution))
    if dist.log or (isinstance(dist, FloatDistribution) and dist.step is None):
        x = float(np.clip(float(value), dist.low, dist.high))
        return round(x) if isinstance(dist, IntDistribution) else x
    k = int(np.clip(round(float(value)), 0, _n_steps(dist)))
    if isinstance(dist, IntDistribution):
        return int(dist.low + k * dist.step)
    assert dist.step is not None
    return float(min(dist.low + k * dist.step, dist.high))


@contextlib.contextmanager
def _hebo_globals(seed: int) -> Iterator[None]:
    """Inside: numpy's and torch's global generators seeded with ``seed`` and one torch thread
    (what HEBO's import sets for the whole process); all three restored after."""
    import torch

    # NOTE: numpy's legacy global generator on purpose: it is the one HEBO and pymoo draw from.
    np_state = np.random.get_state()  # noqa: NPY002
    torch_state = torch.get_rng_state()
    threads = torch.get_num_threads()
    np.random.seed(seed)  # noqa: NPY002
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    try:
        yield
    finally:
        np.random.set_state(np_state)  # noqa: NPY002
        torch.set_rng_state(torch_state)
        torch.set_num_threads(threads)


@contextlib.contextmanager
def _evolution_effort(hebo_module: Any, options: dict[str, Any] | None) -> Iterator[None]:
    """HEBO's acquisition optimizer (``EvolutionOpt``, made inside ``HEBO.suggest`` with
    ``pop=100, iters=100``) given ``options`` instead, for the duration (nothing if None)."""
    if not options:
        yield
        return
    original = hebo_module.EvolutionOpt

    def with_options(space: Any, acq: Any, **conf: Any) -> Any:
        return original(space, acq, **{**conf, **options})

    hebo_module.EvolutionOpt = with_options
    try:
        yield
    finally:
        hebo_module.EvolutionOpt = original


class IndependentFallback(BaseSampler):
    """A peer sampler's relative search space is the intersection of the trials' spaces
    (``self._search_space``); parameters outside it (conditional, dynamic) go to
    ``self._independent_sampler``, as Optuna's own samplers do."""

    _independent_sampler: BaseSampler
    _search_space: IntersectionSearchSpace

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        _check_single_objective(study)
        space = self._search_space.calculate(study)
        return {name: dist for name, dist in space.items() if not dist.single()}

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        _check_single_objective(study)
        return self._independent_sampler.sample_independent(
            study, trial, param_name, param_distribution
        )

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._independent_sampler.before_trial(study, trial)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._independent_sampler.after_trial(study, trial, state, values)


class HEBOSampler(IndependentFallback):
    """HEBO as an Optuna sampler (single objective; benchmark-only).

    Each suggestion builds a fresh ``HEBO`` on the relative search space, observes every
    completed trial and asks for one point, so the state lives in the study's storage (as
    CMA-ES keeps it there) and several processes may share a study. The start-up is HEBO's own:
    while fewer than ``1 + d`` trials are observed, the scrambled Sobol sequence, fast-forwarded
    past the trials already started so that consecutive trials take consecutive points.

    Args:
        seed: Seeds the Sobol scrambling, the per-suggestion seeds of numpy's and torch's
            global generators (HEBO draws from both; they are restored after each suggestion)
            and the independent sampler. Default None: not reproducible.
        independent_sampler: Samples the parameters outside the relative search space.
            Default None: ``RandomSampler(seed=seed)``.
        hebo_options: Keyword arguments of ``hebo.optimizers.hebo.HEBO`` (``model_name``,
            ``rand_sample``, ``model_config``, ``acq_cls``, ``es``). Default None: HEBO's
            defaults (``gp``, ``1 + d`` start-up points, MACE, NSGA-II).
        evolution_options: Keyword arguments given to HEBO's acquisition optimizer
            (``EvolutionOpt``) instead of HEBO's ``pop=100, iters=100``, e.g.
            ``{"pop": 20, "iters": 10}``. Default None: HEBO's. For fast tests only: HEBO's
            own effort takes 4-8 s per suggestion here, most of it pymoo's pure-Python
            duplicate elimination.

    Example:
        .. code-block:: python

            import math

            import optuna
            from benchmarks.harness.peers import HEBOSampler

            def objective(trial):
                x = trial.suggest_float("x", -5, 5)
                lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
                return (x - 1) ** 2 + (math.log10(lr) + 2) ** 2

            study = optuna.create_study(sampler=HEBOSampler(seed=0))
            study.optimize(objective, n_trials=20)
    """

    def __init__(
        self,
        *,
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        hebo_options: dict[str, Any] | None = None,
        evolution_options: dict[str, Any] | None = None,
    ) -> None:
        self._hebo_module = _import_hebo()
        self._rng = np.random.RandomState(seed)
        self._scramble_seed = int(self._rng.randint(2**31 - 1))
        self._independent_sampler = independent_sampler or optuna.samplers.RandomSampler(seed=seed)
        self._hebo_options = dict(hebo_options or {})
        self._evolution_options = dict(evolution_options) if evolution_options else None
        self._search_space = IntersectionSearchSpace()

    def reseed_rng(self) -> None:
        self._rng = np.random.RandomState()
        self._scramble_seed = int(self._rng.randint(2**31 - 1))
        self._independent_sampler.reseed_rng()

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        _check_single_objective(study)
        if not search_space:
            return {}
        names = list(search_space)
        rows: list[list[float]] = []
        values: list[float] = []
        sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
        for t in study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True):
            if t.value is None or not math.isfinite(t.value):
                continue
            if any(n not in t.params or t.distributions[n] != search_space[n] for n in names):
                continue  # NOTE: the intersection space says every completed trial has them
            rows.append([_encode(t.params[n], search_space[n]) for n in names])
            values.append(sign * t.value)
        seed = int(self._rng.randint(2**31 - 1))
        with _HEBO_LOCK:
            suggestion = self._suggest(search_space, rows, values, trial.number, seed)
        return {n: _decode(suggestion[n], search_space[n]) for n in names}

    def _suggest(
        self,
        search_space: dict[str, BaseDistribution],
        rows: list[list[float]],  # (n_observed, d) HEBO column values
        values: list[float],  # (n_observed,) minimized
        n_before: int,  # trials started before this one
        seed: int,
    ) -> dict[str, Any]:
        import pandas as pd

        hebo_module = self._hebo_module
        space = hebo_module.DesignSpace().parse(
            [_hebo_param(n, d) for n, d in search_space.items()]
        )
        optimizer = hebo_module.HEBO(
            space, **{"scramble_seed": self._scramble_seed, **self._hebo_options}
        )
        if rows:
            frame = pd.DataFrame(rows, columns=list(search_space))
            for name, dist in search_space.items():
                if isinstance(dist, CategoricalDistribution) or _integral(dist):
                    frame[name] = frame[name].round().astype(int)
            optimizer.observe(frame, np.asarray(values, dtype=float).reshape(-1, 1))
        # NOTE(start-up): a live HEBO draws Sobol point k for its k-th suggestion; this one is
        # new at every trial, so its engine skips the points earlier trials took.
        optimizer.sobol.fast_forward(n_before)
        printed = io.StringIO()  # HEBO prints its GP fit's jitter retries
        with (
            _hebo_globals(seed),
            _evolution_effort(hebo_module, self._evolution_options),
            contextlib.redirect_stdout(printed),
        ):
            frame = optimizer.suggest(n_suggestions=1)
        failures = [f for f in _FIT_FAILURES if f in printed.getvalue()]
        if failures:
            _logger.warning(
                f"HEBO's GP fit failed ({'; '.join(failures)}): this suggestion maximized "
                "HEBO's fallback acquisition"
            )
        return {name: frame[name].to_numpy()[0] for name in search_space}


def _integral(dist: BaseDistribution) -> bool:
    """Whether HEBO's column for ``dist`` holds integers (``int``, ``pow_int``)."""
    if isinstance(dist, IntDistribution):
        return True
    return isinstance(dist, FloatDistribution) and dist.step is not None and not dist.log


def _check_single_objective(study: Study) -> None:
    if study._is_multi_objective():
        raise ValueError("HEBOSampler supports single-objective studies only")


__all__ = ["HEBO_INSTALL", "HEBOSampler", "hebo_unavailable"]
