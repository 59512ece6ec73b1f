"""RetryingRDBStorage: storage calls wait out a database outage.

The unit tests inject connection errors into a SQLite storage. The fault test stops a real
PostgreSQL server for 5 s in the middle of a 3-worker run (a throwaway cluster of its own, see
``tests/helpers/_pg.py``) and checks that the workers carry on, with the ledger intact.
"""

from __future__ import annotations

import datetime
import logging
from pathlib import Path
import pickle
import time
from typing import Any

import _outage_worker
import _parallel_checks as w
import _pg
import optuna
from optuna.trial import TrialState
import pytest
import sqlalchemy
import sqlalchemy.exc

from optuna_costbo import CostRolloutSampler
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._optuna_compat import UpdateFinishedTrialError
from optuna_costbo.storage import RetryingRDBStorage
from optuna_costbo.storage import is_connection_error


optuna.logging.set_verbosity(optuna.logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")


def _lost_connection() -> sqlalchemy.exc.OperationalError:
    return sqlalchemy.exc.OperationalError(
        "SELECT 1", {}, Exception("server closed the connection unexpectedly")
    )


class _Outage:
    """Makes every statement of ``engine`` fail as on a lost connection while it is on."""

    def __init__(self, engine: sqlalchemy.engine.Engine, failures: float) -> None:
        self.failures = failures  # statements still to fail (math.inf: until turned off)
        self.failed = 0
        sqlalchemy.event.listen(engine, "before_cursor_execute", self._before)

    def _before(self, *args: Any) -> None:
        if self.failures > 0:
            self.failures -= 1
            self.failed += 1
            raise _lost_connection()


def test_connection_errors_are_recognized_through_optunas_wrapping() -> None:
    try:
        try:
            raise _lost_connection()
        except sqlalchemy.exc.OperationalError:
            try:
                raise sqlalchemy.exc.PendingRollbackError("rolled back")  # while handling
            except sqlalchemy.exc.PendingRollbackError as pending:
                raise optuna.exceptions.StorageInternalError("commit") from pending
    except optuna.exceptions.StorageInternalError as wrapped:
        assert is_connection_error(wrapped)
    assert not is_connection_error(optuna.exceptions.StorageInternalError("too long"))
    assert not is_connection_error(KeyError("no such study"))


def test_storage_calls_are_retried_until_the_database_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = RetryingRDBStorage(f"sqlite:///{tmp_path / 'r.db'}", outage_timeout=30.0)
    study = optuna.create_study(storage=storage, study_name="r")
    outage = _Outage(storage.engine, failures=4)  # the next four statements fail
    # The warnings go through optuna's logger tree (optuna.logging governs them).
    optuna.logging.enable_propagation()
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with caplog.at_level(logging.WARNING):
            trial = study.ask()  # create the trial
            trial.suggest_float("x", 0.0, 1.0)
            study.tell(trial, 1.0)
    finally:
        optuna.logging.set_verbosity(verbosity)
        optuna.logging.disable_propagation()
    assert {r.name for r in caplog.records if "cannot be reached" in r.getMessage()} == {
        "optuna.costbo.storage"
    }
    assert outage.failed == 4
    assert [t.state for t in study.trials] == [TrialState.COMPLETE]
    messages = [r.getMessage() for r in caplog.records]
    assert any("cannot be reached" in m and "server closed" in m for m in messages)
    assert any("is back" in m for m in messages)


def test_an_outage_longer_than_the_timeout_raises(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = RetryingRDBStorage(f"sqlite:///{tmp_path / 't.db'}", outage_timeout=0.5)
    study = optuna.create_study(storage=storage, study_name="t")
    _Outage(storage.engine, failures=float("inf"))
    start = time.monotonic()
    optuna.logging.enable_propagation()
    try:
        with (
            caplog.at_level(logging.ERROR),
            pytest.raises(optuna.exceptions.StorageInternalError) as info,
        ):
            study.ask()
    finally:
        optuna.logging.disable_propagation()
    assert 0.3 < time.monotonic() - start < 10.0
    assert is_connection_error(info.value)
    # The worker says why it stops (at ERROR: heard even at optuna's ERROR verbosity).
    said = [r.getMessage() for r in caplog.records if r.name == "optuna.costbo.storage"]
    assert any("unreachable for 0.5 s (outage_timeout); giving up" in m for m in said), said


def test_other_errors_are_not_retried(tmp_path: Path) -> None:
    storage = RetryingRDBStorage(f"sqlite:///{tmp_path / 'o.db'}", outage_timeout=30.0)
    start = time.monotonic()
    with pytest.raises(KeyError):
        optuna.load_study(study_name="missing", storage=storage)
    assert time.monotonic() - start < 5.0


def test_a_state_stored_before_the_connection_was_lost_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server committed the state, then the connection went before the worker heard back:
    # the retry finds the trial finished, in the state asked for.
    storage = RetryingRDBStorage(f"sqlite:///{tmp_path / 's.db'}", outage_timeout=30.0)
    study = optuna.create_study(storage=storage, study_name="s")
    trial = study.ask()
    real = optuna.storages.RDBStorage.set_trial_state_values
    calls: list[int] = []

    def committed_then_lost(
        self: Any, trial_id: int, state: TrialState, values: Any = None
    ) -> Any:
        calls.append(trial_id)
        result = real(self, trial_id, state, values)
        if len(calls) == 1:
            raise optuna.exceptions.StorageInternalError("commit") from _lost_connection()
        return result

    monkeypatch.setattr(optuna.storages.RDBStorage, "set_trial_state_values", committed_then_lost)
    assert storage.set_trial_state_values(trial._trial_id, TrialState.COMPLETE, [1.0])
    assert len(calls) == 2
    assert storage.get_trial(trial._trial_id).state == TrialState.COMPLETE
    # A trial finished in another state (failed by heartbeat meanwhile) is still an error.
    other = study.ask()
    storage.set_trial_state_values(other._trial_id, TrialState.FAIL)
    with pytest.raises(UpdateFinishedTrialError):
        storage.set_trial_state_values(other._trial_id, TrialState.COMPLETE, [1.0])


def test_the_storage_pickles_and_still_retries(tmp_path: Path) -> None:
    storage = RetryingRDBStorage(
        f"sqlite:///{tmp_path / 'p.db'}", outage_timeout=30.0, heartbeat_interval=1
    )
    optuna.create_study(storage=storage, study_name="p")
    copy = pickle.loads(pickle.dumps(storage))
    assert isinstance(copy, RetryingRDBStorage)
    assert copy.outage_timeout == 30.0 and copy.get_heartbeat_interval() == 1
    assert copy.engine.pool._pre_ping  # type: ignore[attr-defined]
    outage = _Outage(copy.engine, failures=2)
    assert copy.get_study_id_from_name("p") == storage.get_study_id_from_name("p")
    assert outage.failed == 2


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("nan"), float("inf"), True, "60"])
def test_outage_timeout_is_validated(timeout: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outage_timeout must be a positive finite number"):
        RetryingRDBStorage(f"sqlite:///{tmp_path / 'v.db'}", outage_timeout=timeout)


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_workers_wait_out_a_database_restart(tmp_path: Path) -> None:
    # Three workers share a budget on PostgreSQL; the server stops for at least 5 s once they
    # are past their three start-up trials, and a fourth worker is started while it is down (a
    # worker restarted during the outage). Chosen outcome: every worker waits and carries on.
    budget, n_workers = 20.0, 3
    with _pg.throwaway_cluster() as (cluster, url):
        # Heartbeats on, with a grace period longer than the outage (see RetryingRDBStorage).
        spec = {
            "kind": "rdb",
            "url": url,
            "heartbeat": True,
            "grace_period": 30,
            "outage_timeout": 60.0,
        }
        name = "outage"
        optuna.create_study(study_name=name, storage=url)
        barrier = tmp_path / "barrier"
        barrier.mkdir()
        procs, logs, outs = [], [], []

        def start(i: int, **extra: Any) -> None:
            out, log = tmp_path / f"out{i}.json", tmp_path / f"log{i}.txt"
            config = {
                "storage": spec,
                "study_name": name,
                "budget": budget,
                "worker": f"w{i}",
                "out": str(out),
                "seed": 0,
                "n_startup_trials": 3,
                # soft: the test is about a storage outage, not the hard budget
                "sampler_kwargs": {"overrun_risk": None},
                # Trials long enough (about 16 left, 5 per worker, when the server stops) that
                # the budget cannot be spent before the outage, on a slow or a fast machine.
                "sleep": (0.8, 1.0),
                **extra,
            }
            procs.append(_outage_worker.start(config, log))
            logs.append(log)
            outs.append(out)

        for i in range(n_workers):
            start(i, barrier=str(barrier))
        w.release(barrier, n_workers, procs)
        reader = optuna.storages.RDBStorage(url)
        study_id = reader.get_study_id_from_name(name)

        def n_complete() -> int:
            return len(reader.get_all_trials(study_id, states=(TrialState.COMPLETE,)))

        _wait_for(lambda: n_complete() >= 4, 120.0, "the first model-based trial")
        reader.engine.dispose()
        _pg.stop(cluster)
        stopped = datetime.datetime.now()
        start(n_workers)  # waits for the server to come back
        # Down for at least 5 s, and until each running worker has met the outage (at most
        # 25 s, inside the heartbeats' grace period): on a loaded machine a worker can be
        # between storage calls for a while, and a fixed 5 s then missed one of them.
        time.sleep(5.0)
        _wait_for(
            lambda: all(
                "cannot be reached" in log.read_text(errors="replace") for log in logs[:n_workers]
            ),
            20.0,
            "each running worker to meet the outage",
        )
        restarting = datetime.datetime.now()
        _pg.start(cluster, url)
        back = datetime.datetime.now()
        w.wait_workers(procs, logs, 180.0)

        results = w.read_results(outs)
        study = optuna.load_study(study_name=name, storage=url)
        trials = study.get_trials()
        ledger = CostRolloutSampler(budget=budget).ledger(study)
        stored_spent = study.user_attrs[SPENT_ATTR]

    text = [log.read_text(errors="replace") for log in logs]
    # The outage hit the run: trials started before it, trials finished after it, and workers
    # waited for the server (rather than failing).
    assert any(t.datetime_start < stopped for t in trials)  # type: ignore[operator]
    assert any(t.datetime_complete > back for t in trials)  # type: ignore[operator]
    # Each of the three workers running when the server stopped waited and saw it back.
    assert sum("cannot be reached" in t and "is back" in t for t in text[:n_workers]) == n_workers
    # A trial ran across the outage (its tell waited for the server) and kept its cost.
    across = [
        t
        for t in trials
        if t.datetime_start < stopped  # type: ignore[operator]
        and t.datetime_complete > restarting  # type: ignore[operator]
    ]
    assert across and all(t.user_attrs.get("cost") is not None for t in across)
    # Every worker carried on to the end of the budget; nothing was lost, failed or doubled.
    assert [t.number for t in trials if t.state == TrialState.FAIL] == []
    report = w.check_budget_invariants(
        trials, budget, n_workers + 1, w.MAX_TRIAL_COST, ledger.spent
    )
    w.check_no_lost_trials(trials, results)
    ran = [t for t in trials if t.user_attrs.get("ran")]
    assert all(t.user_attrs["cost"] == pytest.approx(w.trial_cost(t.params)) for t in ran)
    assert stored_spent == pytest.approx(ledger.spent)
    # The worker started during the outage continued the study from its stored ledger.
    late = next(r for r in results if r["worker"] == f"w{n_workers}")
    assert late["spent_at_start"] > 0.0 and late["records"]
    print(f"\noutage: {(back - stopped).total_seconds():.1f} s; {report.summary()}")
