"""A dead worker's trial: charged from its start to its last sign of life, nothing written.

See ``optuna_costbo/_ledger/dead_trials.py``. The storages here record heartbeats every second
with a grace period of 2 s, as in the issue's report.
"""

from __future__ import annotations

from collections.abc import Iterator
import datetime
from pathlib import Path
import signal
import threading
import time
import uuid

import _parallel_checks as w
import _pg
import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo._ledger.costs import report_cost
from optuna_costbo._ledger.keys import ALIVE_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR


optuna.logging.set_verbosity(optuna.logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")

INTERVAL = 1  # heartbeat interval of these tests, seconds


@pytest.fixture(params=["sqlite", "postgres"])
def rdb_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'dead.db'}"
    return _pg.url_or_skip()


@pytest.fixture
def study_name(rdb_url: str) -> Iterator[str]:
    name = f"dead-{uuid.uuid4().hex[:8]}"
    yield name
    if rdb_url.startswith("postgresql"):
        try:
            optuna.delete_study(study_name=name, storage=rdb_url)
        except KeyError:
            pass


def _heartbeat_storage(url: str) -> optuna.storages.RDBStorage:
    return optuna.storages.RDBStorage(url, heartbeat_interval=INTERVAL, grace_period=2)


def _stored_trial(url: str, name: str, number: int) -> optuna.trial.FrozenTrial:
    """The trial as a process that opens the study now reads it (as optuna-dashboard does)."""
    return optuna.load_study(study_name=name, storage=url).trials[number]


def _sampler() -> CostRolloutSampler:
    """The sampler that starts the trials (a trial it did not start is imported, not charged)."""
    return CostRolloutSampler(budget=100.0, seed=0)


def test_a_killed_worker_is_charged_to_its_last_sign_of_life(
    rdb_url: str, study_name: str, tmp_path: Path
) -> None:
    # The run: a worker is SIGKILLed 3.1 s into its trial; another worker notices only
    # 5 s later. Start to that moment would be over 8 s (and more the later it is noticed);
    # the charge must be within two heartbeat intervals of the 3.1 s it ran, never above.
    spec = {"kind": "rdb", "url": rdb_url, "heartbeat": True}
    study = optuna.create_study(study_name=study_name, storage=_heartbeat_storage(rdb_url))
    marker = tmp_path / "marker"
    config = {
        "storage": spec,
        "study_name": study_name,
        "budget": 100.0,
        "worker": "victim",
        "out": str(tmp_path / "out.json"),
        "seed": 0,
        "hang_marker": str(marker),
    }
    victim = w.start_worker(config, tmp_path / "log.txt")
    try:
        deadline = time.monotonic() + 120.0
        while not marker.exists():
            assert victim.poll() is None, (tmp_path / "log.txt").read_text()
            assert time.monotonic() < deadline, "the victim never started its trial"
            time.sleep(0.01)
        number = int(marker.read_text())
        start = study.trials[number].datetime_start
        assert start is not None
        time.sleep(max((start - datetime.datetime.now()).total_seconds() + 3.1, 0.0))
        victim.send_signal(signal.SIGKILL)
        killed_at = datetime.datetime.now()
        assert victim.wait(timeout=30) == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    ran = (killed_at - start).total_seconds()
    time.sleep(5.0)
    optuna.storages.fail_stale_trials(study)  # what the next worker's optimize loop does
    assert study.trials[number].state == TrialState.FAIL

    ledger = CostRolloutSampler(budget=100.0).ledger(study)
    trial = _stored_trial(rdb_url, study_name, number)
    noticed = (trial.datetime_complete - start).total_seconds()  # type: ignore[operator]
    charged = ledger.spent
    print(f"\nkilled after {ran:.3f} s, failed after {noticed:.3f} s, charged {charged}")
    assert noticed > ran + 4.0
    # The victim stamped its trial while it ran; the charge is its last stamp, what it ran
    # to within two heartbeat intervals (the stamps are on the victim's clock, as its start) ...
    assert trial.system_attrs[ALIVE_ATTR] == charged
    assert ran - 2 * INTERVAL < charged <= ran
    # ... derived by every reader alike: nothing is written on the failed trial.
    assert "cost" not in trial.user_attrs and COST_SOURCE_ATTR not in trial.system_attrs
    assert ledger.n_finished == 1


def _dead_trial(url: str, name: str, stamp: float) -> int:
    """A trial its sampler started that last stamped ``stamp`` s and was then failed as
    stale (the stamp written by hand: ask-and-tell runs no stamping thread)."""
    study = optuna.create_study(study_name=name, storage=url, sampler=_sampler())
    trial = study.ask()
    trial.suggest_float("x", 0.0, 1.0)
    study._storage.set_trial_system_attr(trial._trial_id, ALIVE_ATTR, stamp)
    time.sleep(0.3)
    # As fail_stale_trials does once the grace period is over (not waited for here).
    assert study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    return trial.number


def test_racing_workers_agree_on_the_charge_and_write_nothing(
    rdb_url: str, study_name: str
) -> None:
    number = _dead_trial(rdb_url, study_name, 0.2)
    n_workers = 4
    # Each worker has its own storage (own connections, own cache).
    studies = [optuna.load_study(study_name=study_name, storage=rdb_url) for _ in range(n_workers)]
    barrier = threading.Barrier(n_workers, timeout=30)
    spent: dict[int, float] = {}
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            spent[i] = CostRolloutSampler(budget=100.0).ledger(studies[i]).spent
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert set(spent.values()) == {0.2}
    stored = _stored_trial(rdb_url, study_name, number)
    assert "cost" not in stored.user_attrs and COST_SOURCE_ATTR not in stored.system_attrs


def test_a_stamp_is_never_charged_beyond_the_trials_duration(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cap.db'}"
    number = _dead_trial(url, "cap", 3600.0)  # a clock that jumped: at most start to failure
    study = optuna.load_study(study_name="cap", storage=url)
    trial = study.trials[number]
    duration = (trial.datetime_complete - trial.datetime_start).total_seconds()  # type: ignore[operator]
    assert CostRolloutSampler(budget=100.0).ledger(study).spent == pytest.approx(duration)


def test_a_running_trial_is_stamped_every_heartbeat_interval(tmp_path: Path) -> None:
    storage = _heartbeat_storage(f"sqlite:///{tmp_path / 'stamps.db'}")
    study = optuna.create_study(storage=storage, sampler=_sampler())
    seen: list[float] = []

    def objective(trial: optuna.Trial) -> float:
        time.sleep(1.5)
        seen.append(storage.get_trial(trial._trial_id).system_attrs[ALIVE_ATTR])
        return trial.suggest_float("x", 0.0, 1.0)

    study.optimize(objective, n_trials=1)
    assert 0.9 <= seen[0] <= 1.5  # stamped at start and once a second after
    assert not [t for t in threading.enumerate() if t.name.startswith("costbo-alive-")]
    # Without heartbeats nothing watches for dead workers: no stamps.
    plain = optuna.create_study(sampler=_sampler())
    plain.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=1)
    assert ALIVE_ATTR not in plain.trials[0].system_attrs


def _fail_by_hand(storage: optuna.storages.BaseStorage, name: str) -> optuna.Study:
    study = optuna.create_study(study_name=name, storage=storage, sampler=_sampler())
    trial = study.ask()
    trial.suggest_float("x", 0.0, 1.0)
    time.sleep(0.2)
    study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
    return study


@pytest.mark.parametrize("kind", ["rdb-no-heartbeat", "journal", "inmemory"])
def test_failed_trials_without_a_stamp_keep_the_wall_clock_rule(kind: str, tmp_path: Path) -> None:
    storage: optuna.storages.BaseStorage
    if kind == "rdb-no-heartbeat":
        storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'plain.db'}")
    elif kind == "journal":
        path = str(tmp_path / "journal.log")
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(path))
    else:
        storage = optuna.storages.InMemoryStorage()
    study = _fail_by_hand(storage, "plain")
    ledger = CostRolloutSampler(budget=100.0).ledger(study)
    trial = study.trials[0]
    assert trial.state == TrialState.FAIL
    assert "cost" not in trial.user_attrs and COST_SOURCE_ATTR not in trial.system_attrs
    duration = (trial.datetime_complete - trial.datetime_start).total_seconds()  # type: ignore[operator]
    assert ledger.spent == pytest.approx(duration) and duration >= 0.2
    assert CostRolloutSampler(budget=100.0).ledger(study).spent == ledger.spent


def test_trials_failed_by_other_causes_keep_their_rule(tmp_path: Path) -> None:
    # An exception in the objective: the sampler records the cost as usual, heartbeat or not.
    url = f"sqlite:///{tmp_path / 'raise.db'}"
    sampler = CostRolloutSampler(budget=100.0, seed=0)
    study = optuna.create_study(storage=_heartbeat_storage(url), sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 7.0)
        raise RuntimeError("boom")

    study.optimize(objective, n_trials=1, catch=(RuntimeError,))
    # Added failed: imported, not charged.
    study.add_trial(
        optuna.trial.create_trial(
            state=TrialState.FAIL,
            params={"x": 0.5},
            distributions={"x": optuna.distributions.FloatDistribution(0.0, 1.0)},
        )
    )
    ledger = sampler.ledger(study)
    trials = study.trials
    assert trials[0].user_attrs["cost"] == 7.0
    assert trials[0].system_attrs[COST_SOURCE_ATTR] == "reported"
    assert "cost" not in trials[1].user_attrs
    assert (ledger.spent, ledger.n_imported) == (7.0, 1)  # the added trial is imported
