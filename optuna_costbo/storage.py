"""An RDBStorage whose workers wait out a database outage; retrying is safe, as a call cut off
before its commit was rolled back and every call is idempotent or recognized as done."""

from __future__ import annotations

from collections.abc import Callable
import functools
import math
import threading
import time
from typing import Any
from typing import TypeVar

import optuna
from optuna.trial import TrialState

from optuna_costbo._logging import get_logger
from optuna_costbo._optuna_compat import UpdateFinishedTrialError
from optuna_costbo._optuna_compat import rdb_private_methods


__all__ = ["RetryingRDBStorage"]

_logger = get_logger(__name__)

_T = TypeVar("_T")

# NOTE: retry after 0.1 s, doubling up to once a second: quick once the server is back.
_FIRST_DELAY = 0.1
_MAX_DELAY = 1.0

# RDBStorage's methods that talk to the database, with the private ones _CachedStorage calls.
_RETRIED = (
    *"""create_new_study delete_study set_study_user_attr set_study_system_attr
    get_study_id_from_name get_study_name_from_id get_study_directions get_study_user_attrs
    get_study_system_attrs get_trial_user_attrs get_trial_system_attrs get_all_studies
    create_new_trial set_trial_param get_trial_param set_trial_intermediate_value
    set_trial_user_attr set_trial_system_attr get_trial_id_from_study_id_trial_number get_trial
    get_all_trials get_best_trial record_heartbeat""".split(),
    *rdb_private_methods(),
)


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` or an error in its cause/context chain is a lost database connection."""
    return _connection_error(exc) is not None


def _connection_error(exc: BaseException) -> BaseException | None:
    import sqlalchemy.exc

    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, sqlalchemy.exc.DBAPIError) and (
            isinstance(current, sqlalchemy.exc.OperationalError) or current.connection_invalidated
        ):
            return current.orig if isinstance(current.orig, BaseException) else current
        todo += [current.__cause__, current.__context__]
    return None


class RetryingRDBStorage(optuna.storages.RDBStorage):
    """An :class:`~optuna.storages.RDBStorage` that waits out database outages.

    Use it in every worker of a shared study. A storage call that fails because the database
    cannot be reached is retried (after 0.1 s, doubling up to once a second) until it succeeds
    or ``outage_timeout`` seconds have passed; then the error is raised. A warning is logged
    when a worker starts waiting and when the database is back.

    Args:
        url: The database URL, as for ``RDBStorage``.
        outage_timeout: Longest outage waited out, in seconds; a positive finite number.
        engine_kwargs: SQLAlchemy engine options; ``pool_pre_ping`` defaults to True.
        **kwargs: Passed to ``RDBStorage``. With heartbeats, give ``grace_period`` more seconds
            than the outages to wait out, or other workers may fail a trial that is alive.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo import CostRolloutSampler
            from optuna_costbo.storage import RetryingRDBStorage

            storage = RetryingRDBStorage("sqlite:///tune.db", outage_timeout=120.0)
            study = optuna.create_study(
                storage=storage, sampler=CostRolloutSampler(budget=60.0), load_if_exists=True
            )
            study.optimize(lambda trial: trial.suggest_float("x", 0.0, 1.0) ** 2, n_trials=5)
    """

    def __init__(
        self,
        url: str,
        *,
        outage_timeout: float = 60.0,
        engine_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if (
            isinstance(outage_timeout, bool)
            or not isinstance(outage_timeout, (int, float))
            or not (0.0 < outage_timeout and math.isfinite(outage_timeout))
        ):
            raise ValueError(
                f"outage_timeout must be a positive finite number, got {outage_timeout!r}"
            )
        self.outage_timeout = float(outage_timeout)
        self._retry_state = threading.local()
        self._outage_lock = threading.Lock()
        self._outage_since: float | None = None
        options = {"pool_pre_ping": True, **(engine_kwargs or {})}

        def connect() -> None:
            try:
                optuna.storages.RDBStorage.__init__(self, url, engine_kwargs=options, **kwargs)
            except Exception:
                engine = self.__dict__.pop("engine", None)
                if engine is not None:
                    engine.dispose()
                raise

        self.run_with_retries(connect)

    def __setstate__(self, state: dict[Any, Any]) -> None:
        self.__dict__.update(state)
        self._retry_state = threading.local()
        self._outage_lock = threading.Lock()
        self.run_with_retries(lambda: optuna.storages.RDBStorage.__setstate__(self, state))

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        state.pop("_retry_state", None)
        state.pop("_outage_lock", None)
        return state

    def run_with_retries(self, call: Callable[[], _T]) -> _T:
        """Run ``call``, retrying while the database is unreachable (outermost call only)."""
        if getattr(self._retry_state, "active", False):
            return call()
        self._retry_state.active = True
        try:
            deadline: float | None = None
            delay = _FIRST_DELAY
            while True:
                try:
                    result = call()
                except Exception as exc:
                    if not is_connection_error(exc):
                        raise
                    now = time.monotonic()
                    deadline = deadline if deadline is not None else now + self.outage_timeout
                    if now + delay > deadline:
                        _logger.error(
                            f"The study's database has been unreachable for "
                            f"{self.outage_timeout:g} s (outage_timeout); giving up: {exc}"
                        )
                        raise
                    self._note_outage(exc)
                    time.sleep(delay)
                    delay = min(2 * delay, _MAX_DELAY)
                    continue
                if deadline is not None:
                    self._note_back()
                return result
        finally:
            self._retry_state.active = False

    def set_trial_state_values(self, trial_id: int, state: TrialState, values: Any = None) -> bool:
        base = optuna.storages.RDBStorage
        failed_once: list[bool] = []

        def attempt() -> bool:
            try:
                return base.set_trial_state_values(self, trial_id, state, values)
            except UpdateFinishedTrialError:
                # the attempt that lost its connection may have committed the state
                if failed_once and base.get_trial(self, trial_id).state == state:
                    return True
                raise
            except Exception as exc:
                if is_connection_error(exc):
                    failed_once.append(True)
                raise

        return self.run_with_retries(attempt)

    def _note_outage(self, exc: BaseException) -> None:
        with self._outage_lock:
            if self._outage_since is not None:
                return
            self._outage_since = time.monotonic()
        cause = _connection_error(exc) or exc
        text = str(cause).strip().splitlines()
        _logger.warning(
            f"The study's database cannot be reached ({text[0] if text else repr(cause)}); "
            f"waiting up to {self.outage_timeout:g} s for it to come back."
        )

    def _note_back(self) -> None:
        with self._outage_lock:
            since, self._outage_since = self._outage_since, None
        if since is not None:
            _logger.warning(
                f"The study's database is back after {time.monotonic() - since:.1f} s."
            )


def _retried(name: str) -> Callable[..., Any]:
    method = getattr(optuna.storages.RDBStorage, name)

    @functools.wraps(method)
    def wrapper(self: RetryingRDBStorage, *args: Any, **kwargs: Any) -> Any:
        return self.run_with_retries(lambda: method(self, *args, **kwargs))

    return wrapper


for _name in _RETRIED:
    setattr(RetryingRDBStorage, _name, _retried(_name))
