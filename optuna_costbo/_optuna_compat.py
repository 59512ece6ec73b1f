"""Every use of Optuna's private API, so a release that changes one breaks only this module
(fallbacks beside; ``study._storage`` and ``_study_id`` are used as Optuna's samplers do)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial
from optuna.trial import TrialState


def heartbeat_thread(
    trial_id: int, storage: optuna.storages.BaseStorage
) -> AbstractContextManager[Any]:
    """A context that keeps ``trial_id``'s heartbeat beating (``get_heartbeat_thread``)."""
    from optuna.storages._heartbeat import get_heartbeat_thread

    thread: AbstractContextManager[Any] = get_heartbeat_thread(trial_id, storage)  # type: ignore[assignment]
    return thread


# raised when a finished trial is updated; a plain RuntimeError before Optuna 4.3
UpdateFinishedTrialError: type[RuntimeError] = getattr(
    optuna.exceptions, "UpdateFinishedTrialError", RuntimeError
)


# RDBStorage's private methods that _CachedStorage calls (some since Optuna 4.6 and 4.7).
_RDB_PRIVATE_METHODS = (
    "_create_new_trial",
    "_set_trial_param",
    "_get_trials",
    "_get_best_trial_id",
    "_get_stale_trial_ids",
)


def rdb_private_methods() -> tuple[str, ...]:
    """Those of :data:`_RDB_PRIVATE_METHODS` this Optuna's RDBStorage has."""
    rdb = optuna.storages.RDBStorage
    return tuple(name for name in _RDB_PRIVATE_METHODS if callable(getattr(rdb, name, None)))


# Optuna's words for a parameter sampled independently (as its samplers log it).
INDEPENDENT_SAMPLING_WARNING_TEMPLATE = (
    "The parameter `{param_name}` in Trial#{trial_number} is sampled independently "
    "using `{independent_sampler_name}` instead of `{sampler_name}`, potentially "
    "degrading the optimization performance. This fallback happened because "
    "{fallback_reason}. You can suppress this warning by setting "
    "`warn_independent_sampling` to `False` in the constructor of `{sampler_name}` if "
    "this independent sampling is intended behavior."
)


def root_study(study: optuna.Study) -> optuna.Study:
    """The user's study behind HyperbandPruner's ``_BracketStudy`` view of it."""
    while isinstance(getattr(study, "_study", None), optuna.Study):
        study = study._study  # type: ignore[attr-defined]
    return study


def in_optimize_loop(study: optuna.Study) -> bool:
    """Whether this thread runs ``study.optimize`` (``Study._thread_local``)."""
    return bool(root_study(study)._thread_local.in_optimize_loop)


def distribution_contains(dist: BaseDistribution, internal: float) -> bool:
    """Whether the internal value lies in ``dist`` (``BaseDistribution._contains``)."""
    return bool(dist._contains(internal))


def store_constraints(
    constraints_func: Callable[[FrozenTrial], Sequence[float]],
    study: optuna.Study,
    trial: FrozenTrial,
    state: TrialState,
) -> None:
    """Store ``constraints_func``'s values as Optuna's samplers do
    (``_process_constraints_after_trial``)."""
    from optuna.samplers._base import _process_constraints_after_trial

    _process_constraints_after_trial(constraints_func, study, trial, state)


def trial_constraints(trial: FrozenTrial) -> tuple[float, ...] | None:
    """The trial's constraint values in a fixed order (feasible: all <= 0), or None: Optuna 5's
    ``FrozenTrial.constraints`` dict, or Optuna 4's system attr ``constraints``."""
    values = getattr(trial, "constraints", None)
    if isinstance(values, dict):
        if not values:
            return None
        keys = sorted(values, key=lambda k: (0, int(k), "") if str(k).isdigit() else (1, 0, k))
        return tuple(float(values[k]) for k in keys)
    raw = trial.system_attrs.get("constraints")
    return None if raw is None else tuple(float(v) for v in raw)
