"""Trials whose worker died: charged from their start to their last recorded heartbeat.

A worker killed mid-trial never reaches ``after_trial``, so its trial carries no cost. It stays
RUNNING until another worker's optimize loop fails it by heartbeat
(``optuna.storages.fail_stale_trials``), and Optuna stamps its completion time then: when it
was *noticed*, at least the grace period after the worker died, often much later. Charging
start to completion would bill that wait. The last heartbeat is the last moment the trial is
known to have been running, so the ledger charges start to last heartbeat: at most what the
trial ran and at least that less one heartbeat interval (and the time a heartbeat takes to
write). Where the database stores heartbeats to the whole second (SQLite, MySQL), the stored
time is truncated by up to a second; the middle of that second is charged, so the error is
then at most half a second more either way.

The charge is written once on the trial itself, as its cost user attr (where optuna-dashboard
shows it) and ``costbo:cost_source = "heartbeat"``, by whichever worker charges it first; the
others read that value back, so every worker's ledger agrees.

What this relies on (Optuna 4.x and 5.0; none of it is public API, so it is read defensively,
and any storage without it keeps the wall-clock rule, start to completion):

- Only :class:`~optuna.storages.RDBStorage` records heartbeats (it is the only
  ``BaseHeartbeat`` storage besides the ``_CachedStorage`` wrapper around it); JournalStorage,
  InMemoryStorage and the gRPC proxy record none.
- ``RDBStorage.record_heartbeat`` keeps one row per trial in the table ``trial_heartbeats``
  (``models.TrialHeartbeatModel``), its ``heartbeat`` column written with the *database's*
  clock (``sqlalchemy.func.now()``: UTC and whole seconds on SQLite, the session time zone on
  PostgreSQL), and the row outlives the trial. Trial start times are the worker's local clock,
  so the heartbeat is moved to the local clock by the offset between the two clocks, measured
  with one query.
- Optuna refuses to set attrs of finished trials (``check_trial_is_updatable``), so the charge
  is inserted into ``trial_user_attributes`` and ``trial_system_attributes`` directly. Both
  tables are unique on ``(trial_id, key)``: the insert is the claim. Of workers racing to
  charge a trial exactly one insert succeeds; the others get an IntegrityError and read the
  winner's value.
- ``_CachedStorage`` never re-reads a finished trial, so a worker that cached the failed trial
  before it was charged would never see the charge: the charged value is also set on the
  cached :class:`~optuna.trial.FrozenTrial` objects this module is given (what a re-read would
  return).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
import datetime
import json
import math
import threading
from typing import Any
import weakref

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import CostSource
from optuna_costbo._numerics.cost_model import COST_FLOOR
from optuna_costbo._optuna_compat import rdb_models


__all__ = [
    "charge_dead_trials",
    "charge_to_heartbeat",
    "heartbeat_charge",
    "rdb_backend",
    "unpriced_failure",
]

HEARTBEAT_SOURCE = CostSource.HEARTBEAT.value
"""Value of the trial system attr ``costbo:cost_source`` on a trial charged to its heartbeat."""

# NOTE: the smallest charge is the models' cost floor, as for measured trials: a dead trial
# whose last heartbeat is stamped before its start (a clock resolution of one second) still
# carries a valid, positive cost.

# Trials known to have no heartbeat row, per RDB storage: a failed trial never gets one later,
# so they are looked up once per process, not at every ledger.
_no_heartbeat: weakref.WeakKeyDictionary[Any, set[int]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()

# SQL dialects whose heartbeat column (``func.now()`` into a DateTime) keeps whole seconds.
_WHOLE_SECOND_DIALECTS = ("sqlite", "mysql", "mariadb")
_HALF_SECOND = datetime.timedelta(seconds=0.5)


def rdb_backend(storage: optuna.storages.BaseStorage) -> optuna.storages.RDBStorage | None:
    """The RDBStorage behind ``storage`` (itself or the one a ``_CachedStorage`` wraps)."""
    backend = getattr(storage, "_backend", storage)
    return backend if isinstance(backend, optuna.storages.RDBStorage) else None


def unpriced_failure(trial: FrozenTrial, cost_attr: str) -> bool:
    """A failed trial without a cost (nor a skip mark): a dead worker's, perhaps, that
    :func:`charge_dead_trials` may charge to its heartbeat."""
    return (
        trial.state == TrialState.FAIL
        and cost_attr not in trial.user_attrs
        and COST_SOURCE_ATTR not in trial.system_attrs
        and not trial.system_attrs.get(SKIPPED_ATTR)
    )


def charge_dead_trials(
    study: optuna.Study, trials: Iterable[FrozenTrial], cost_attr: str
) -> dict[int, float]:
    """Charge the trials that a dead worker left, failed by heartbeat, to their last heartbeat.

    WRITES, once per trial: a failed trial that never reached the sampler's ``after_trial``
    (no cost recorded, no cost source) is charged from its start to its last recorded
    heartbeat, not to the moment another worker noticed it was dead; the charge is written on
    the trial as its user attr ``cost_attr`` (where optuna-dashboard shows it), with system attr
    ``costbo:cost_source`` ``"heartbeat"``, exactly once whichever workers race to do it, and
    set on the given ``trials`` objects too (what a re-read would return; see the module
    docstring). Failed trials without a stored heartbeat (storages other than RDBStorage,
    heartbeat off, trials failed by hand or added failed) are left to the wall-clock rule.

    Returns:
        Trial id -> charged cost, for the trials charged by this call.
    """
    unpriced = [t for t in trials if unpriced_failure(t, cost_attr)]
    return charge_to_heartbeat(study._storage, unpriced, cost_attr, COST_SOURCE_ATTR)


def charge_to_heartbeat(
    storage: optuna.storages.BaseStorage,
    unpriced: Sequence[FrozenTrial],
    cost_attr: str,
    source_attr: str,
) -> dict[int, float]:
    """Charge each heartbeat-failed trial of ``unpriced`` to its last heartbeat, once.

    Args:
        storage: The study's storage.
        unpriced: Failed trials that carry neither ``cost_attr`` nor ``source_attr``. Those
            with a stored heartbeat get both, in storage (unless another worker wrote them
            first, whose value is then used) and on the given objects; the others are left
            alone (the ledger charges them start to completion).
        cost_attr: The trial user attr holding costs.
        source_attr: The trial system attr saying where a cost comes from.

    Returns:
        Trial id -> charged cost, for the trials charged.
    """
    backend = rdb_backend(storage)
    if backend is None or not unpriced:
        return {}
    with _lock:
        known_without = set(_no_heartbeat.get(backend, ()))
    todo = {t._trial_id: t for t in unpriced if t._trial_id not in known_without}
    if not todo:
        return {}
    # A storage that waits out database outages (optuna_costbo.storage) waits here too.
    run = getattr(backend, "run_with_retries", None)
    charges: dict[int, float] = (
        run(lambda: _charge_rows(backend, todo, cost_attr, source_attr))
        if run is not None
        else _charge_rows(backend, todo, cost_attr, source_attr)
    )
    with _lock:
        _no_heartbeat.setdefault(backend, set()).update(set(todo) - set(charges))
    for trial_id, cost in charges.items():
        # What a re-read of the trial would now return (see the module docstring).
        todo[trial_id].user_attrs[cost_attr] = cost
        todo[trial_id].system_attrs[source_attr] = HEARTBEAT_SOURCE
    return charges


def heartbeat_charge(trial: FrozenTrial, last_heartbeat_local: datetime.datetime) -> float | None:
    """Seconds from ``trial``'s start to its last heartbeat (given on the local clock).

    At most the trial's start-to-completion time, at least a microsecond; None without a
    start time.
    """
    if trial.datetime_start is None:
        return None
    seconds = (last_heartbeat_local - trial.datetime_start).total_seconds()
    if trial.datetime_complete is not None:
        seconds = min(seconds, (trial.datetime_complete - trial.datetime_start).total_seconds())
    return max(seconds, COST_FLOOR)


def _charge_rows(
    backend: optuna.storages.RDBStorage,
    todo: dict[int, FrozenTrial],
    cost_attr: str,
    source_attr: str,
) -> dict[int, float]:
    import sqlalchemy
    from sqlalchemy import exc as sa_exc

    models = rdb_models()
    heartbeat_model = models.TrialHeartbeatModel
    user_model = models.TrialUserAttributeModel
    ids = sorted(todo)
    charges: dict[int, float] = {}
    with backend.engine.connect() as conn:
        offset = _clock_offset(conn)
        heartbeats: dict[int, Any] = dict(
            conn.execute(
                sqlalchemy.select(heartbeat_model.trial_id, heartbeat_model.heartbeat).where(
                    heartbeat_model.trial_id.in_(ids)
                )
            ).all()
        )
        conn.rollback()
        whole_seconds = conn.dialect.name in _WHOLE_SECOND_DIALECTS
        for trial_id in ids:
            beat = heartbeats.get(trial_id)
            if beat is None:
                continue
            if isinstance(beat, datetime.datetime) and beat.tzinfo is not None:
                beat = beat.replace(tzinfo=None)
            if whole_seconds:
                beat += _HALF_SECOND  # the middle of the second it was truncated to
            cost = heartbeat_charge(todo[trial_id], beat + offset)
            if cost is None:
                continue
            try:
                with conn.begin():
                    conn.execute(
                        sqlalchemy.insert(user_model).values(
                            trial_id=trial_id, key=cost_attr, value_json=json.dumps(cost)
                        )
                    )
                    conn.execute(
                        sqlalchemy.insert(models.TrialSystemAttributeModel).values(
                            trial_id=trial_id,
                            key=source_attr,
                            value_json=json.dumps(HEARTBEAT_SOURCE),
                        )
                    )
            except sa_exc.IntegrityError:
                # Another worker charged it first (or wrote the cost some other way): its
                # value is the trial's charge.
                raw = conn.execute(
                    sqlalchemy.select(user_model.value_json).where(
                        user_model.trial_id == trial_id, user_model.key == cost_attr
                    )
                ).scalar()
                conn.rollback()
                cost = _stored_cost(raw)
                if cost is None:
                    continue
            charges[trial_id] = cost
    return charges


def _stored_cost(raw: Any) -> float | None:
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0.0 else None


def _clock_offset(conn: Any) -> datetime.timedelta:
    """Local clock minus the database clock that stamps heartbeats (time zone and skew)."""
    import sqlalchemy

    before = datetime.datetime.now()
    if conn.dialect.name == "sqlite":
        # CURRENT_TIMESTAMP (Optuna's func.now() there) has whole seconds; this is the same
        # clock to the millisecond.
        raw = conn.execute(sqlalchemy.text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')"))
        db_now = datetime.datetime.fromisoformat(raw.scalar())
    elif conn.dialect.name in ("mysql", "mariadb"):
        # NOW() has whole seconds there; NOW(6) is the same clock to the microsecond.
        db_now = conn.execute(sqlalchemy.text("SELECT NOW(6)")).scalar()
    else:
        db_now = conn.execute(sqlalchemy.select(sqlalchemy.func.now())).scalar()
        # As Optuna's _get_stale_trial_ids: a timestamptz in the session's time zone is the
        # wall time a heartbeat column (timestamp without time zone) receives.
        db_now = db_now.replace(tzinfo=None)
    after = datetime.datetime.now()
    conn.rollback()
    return before + (after - before) / 2 - db_now
