"""Parallel workers on one study: threads sharing one sampler, processes sharing one budget.

The process tests start real worker processes (``tests/helpers/_worker_main.py``), each
loading the study with its own ``CostRolloutSampler(budget=B)`` and calling
``study.optimize(objective)`` with no ``n_trials``, on SQLite, on a JournalStorage file and on
PostgreSQL (when ``COSTBO_TEST_POSTGRES_URL`` is set and reachable; ``.ci/run`` sets it up in
CI).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import datetime
from pathlib import Path
import threading
import time
from typing import Any
import uuid

import _parallel_checks as pc
import _pg
import numpy as np
import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import REMAINING_ATTR
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo._sampler import clash as _clash
from optuna_costbo._sampler import suggest as sampler_mod


optuna.logging.set_verbosity(optuna.logging.ERROR)


# -- threads: n_jobs > 1 shares one sampler instance -------------------------------------------


def _thread_objective(trial: optuna.Trial) -> float:
    params = {"x": trial.suggest_float("x", -1.0, 1.0), "y": trial.suggest_float("y", -1.0, 1.0)}
    trial.set_user_attr("ran", True)
    time.sleep(0.02 + 0.03 * (params["y"] + 1.0) / 2.0)
    report_cost(trial, pc.trial_cost(params))
    return pc.trial_value(params)


@pytest.mark.parametrize(
    ("acquisition", "storage_kind"),
    [("rollout", "inmemory"), ("ei", "inmemory"), ("rollout", "sqlite")],
)
def test_threads_share_one_sampler_and_stop_at_the_budget(
    acquisition: str, storage_kind: str, tmp_path: Path
) -> None:
    n_jobs = 4
    budget = 12.0 if storage_kind == "inmemory" else 7.0
    storage = None if storage_kind == "inmemory" else f"sqlite:///{tmp_path / 'threads.db'}"
    # (The optuna-dashboard chart is left to the SQLite process test: it is slow to redraw.)
    # soft: the test is about threads sharing a budget, not the hard budget
    sampler = CostRolloutSampler(
        budget=budget, seed=0, acquisition=acquisition, n_startup_trials=4, overrun_risk=None
    )
    study = optuna.create_study(sampler=sampler, storage=storage)
    # n_trials is only a guard: the budget must end the loop long before.
    study.optimize(_thread_objective, n_jobs=n_jobs, n_trials=200)

    trials = study.get_trials()
    assert len(trials) < 40
    report = pc.check_budget_invariants(
        trials, budget, n_jobs, pc.MAX_TRIAL_COST, sampler.ledger(study).spent
    )
    # The ledger is the sum of the trials' "cost" user attrs (skipped trials carry none).
    assert sampler.ledger(study).spent == pytest.approx(
        sum(t.user_attrs.get("cost", 0.0) for t in trials)
    )
    ran = [t for t in trials if t.user_attrs.get("ran")]
    assert all(isinstance(t.user_attrs.get("cost"), float) for t in ran)
    # Per-trial caches of the shared sampler are emptied as the trials finish.
    assert sampler._book._seconds == {}
    assert sampler._book._skipped == set()
    assert sampler._suggester.pending.snapshot() == {}
    for t in trials:
        assert -1.0 <= t.params.get("x", 0.0) <= 1.0 and -1.0 <= t.params.get("y", 0.0) <= 1.0
    print(f"\nthreads[{acquisition}, {storage_kind}]: {report.summary()}")
    # Running trials are pending points: no two trials evaluated the same point.
    assert not pc.duplicate_points(trials)


def test_threads_charge_each_trial_its_own_sampler_seconds() -> None:
    # With sampler time charged (measured wall-clock costs), the seconds recorded on each trial
    # are that trial's and its thread's gap since that thread's last trial: a race between
    # threads in the per-trial bookkeeping would move them between trials.
    def measured(trial: optuna.Trial) -> float:
        x, y = trial.suggest_float("x", -1.0, 1.0), trial.suggest_float("y", -1.0, 1.0)
        time.sleep(0.02 + 0.03 * (y + 1.0) / 2.0)
        trial.set_user_attr("thread", threading.get_ident())
        trial.set_user_attr("ended", datetime.datetime.now().isoformat())
        return pc.trial_value({"x": x, "y": y})

    sampler = CostRolloutSampler(budget=1e9, seed=0, n_startup_trials=3, acquisition="ei")
    study = optuna.create_study(sampler=sampler)
    study.optimize(measured, n_jobs=4, n_trials=24)
    trials = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(trials) == 24
    previous_end: dict[int, datetime.datetime] = {}  # thread -> its last objective's end
    for t in sorted(trials, key=lambda t: t.datetime_start):  # type: ignore[arg-type,return-value]
        seconds = t.system_attrs[SAMPLER_SECONDS_ATTR]
        assert 0.0 <= seconds
        # At most the trial's span and the gap since its thread's last objective ended.
        since = previous_end.get(t.user_attrs["thread"], t.datetime_start)
        assert seconds <= (t.datetime_complete - since).total_seconds()  # type: ignore[operator]
        previous_end[t.user_attrs["thread"]] = datetime.datetime.fromisoformat(
            t.user_attrs["ended"]
        )
    ledger = sampler.ledger(study)
    assert ledger.spent == pytest.approx(
        sum(t.user_attrs["cost"] + t.system_attrs[SAMPLER_SECONDS_ATTR] for t in trials)
    )
    assert sampler._book._seconds == {}


def test_threads_never_use_the_random_state_concurrently(monkeypatch: pytest.MonkeyPatch) -> None:
    # Overlapping proposals must not share one numpy Generator (it is not thread-safe, and the
    # warm-start cache is read and written around it).
    active: dict[int, int] = {}
    clashes: list[int] = []
    guard = threading.Lock()
    real_propose = sampler_mod.propose

    def watched(*args: Any, **kwargs: Any) -> Any:
        key = id(args[2])
        with guard:
            active[key] = active.get(key, 0) + 1
            if active[key] > 1:
                clashes.append(key)
        try:
            time.sleep(0.01)  # widen the window
            return real_propose(*args, **kwargs)
        finally:
            with guard:
                active[key] -= 1

    monkeypatch.setattr(sampler_mod, "propose", watched)
    sampler = CostRolloutSampler(budget=1e9, seed=0, n_startup_trials=3, acquisition="ei")
    study = optuna.create_study(sampler=sampler)
    study.optimize(_thread_objective, n_jobs=4, n_trials=20)
    assert len(study.get_trials(states=(TrialState.COMPLETE,))) == 20
    assert clashes == []


class _SlowToStoreStorage(optuna.storages.InMemoryStorage):
    """Holds each finishing trial's state write until ``parties`` trials are finishing: the
    interleaving of workers whose trials end at the same moment (after_trial of each one runs
    before the state of the other is stored)."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=30)

    def set_trial_state_values(self, trial_id: int, state: TrialState, values: Any = None) -> bool:
        if state.is_finished():
            self.barrier.wait()
        return super().set_trial_state_values(trial_id, state, values)


def test_stored_spent_counts_trials_that_finish_together() -> None:
    n = 2
    storage = _SlowToStoreStorage(parties=n)
    sampler = CostRolloutSampler(budget=100.0, seed=0)
    study = optuna.create_study(sampler=sampler, storage=storage)
    trials = [study.ask() for _ in range(n)]
    for trial in trials:
        trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
    threads = [threading.Thread(target=study.tell, args=(trial, 0.5)) for trial in trials]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sampler.ledger(study).spent == 2.0
    assert study.user_attrs[SPENT_ATTR] == 2.0
    assert study.user_attrs[REMAINING_ATTR] == 98.0


class _DelayedLedgerWriteStorage(optuna.storages.InMemoryStorage):
    """Delays the first thread that writes ``cost_spent`` until ``release`` is set: a worker
    descheduled (or a database slow) between computing the ledger and storing it."""

    def __init__(self) -> None:
        super().__init__()
        self.armed, self.blocked, self.release = False, threading.Event(), threading.Event()

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        if key == SPENT_ATTR and self.armed and not self.blocked.is_set():
            self.blocked.set()
            self.release.wait(timeout=30)
        super().set_study_user_attr(study_id, key, value)


def test_stored_spent_survives_a_delayed_ledger_write() -> None:
    storage = _DelayedLedgerWriteStorage()
    sampler = CostRolloutSampler(budget=100.0, seed=0)
    study = optuna.create_study(sampler=sampler, storage=storage)
    trial_a, trial_b = study.ask(), study.ask()
    for trial in (trial_a, trial_b):
        trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
    worker_a = threading.Thread(target=study.tell, args=(trial_a, 0.5))
    storage.armed = True
    worker_a.start()  # computes spent = 1 (B still running), then stalls before storing it
    assert storage.blocked.wait(timeout=60)
    study.tell(trial_b, 0.25)  # computes and stores spent = 2
    storage.release.set()
    worker_a.join(timeout=60)
    assert sampler.ledger(study).spent == 2.0
    assert study.user_attrs[SPENT_ATTR] == 2.0
    assert study.user_attrs[REMAINING_ATTR] == 98.0


# -- running trials are pending points ----------------------------------------------------------


def _seeded_study(storage: optuna.storages.BaseStorage, name: str) -> None:
    study = optuna.create_study(study_name=name, storage=storage)
    dists = {
        "x": optuna.distributions.FloatDistribution(-1.0, 1.0),
        "y": optuna.distributions.FloatDistribution(-1.0, 1.0),
    }
    rng = np.random.default_rng(3)
    for _ in range(8):
        params = {"x": float(rng.uniform(-1, 1)), "y": float(rng.uniform(-1, 1))}
        study.add_trial(
            optuna.trial.create_trial(
                params=params,
                distributions=dists,
                value=pc.trial_value(params),
                user_attrs={"cost": pc.trial_cost(params)},
            )
        )


def _ask_point(storage: optuna.storages.BaseStorage, name: str, acquisition: str) -> Any:
    sampler = CostRolloutSampler(budget=100.0, seed=7, acquisition=acquisition)
    study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
    trial = study.ask()
    return trial, (trial.suggest_float("x", -1.0, 1.0), trial.suggest_float("y", -1.0, 1.0))


@pytest.mark.parametrize("acquisition", ["rollout", "ei"])
def test_running_trials_are_pending_points(acquisition: str) -> None:
    # Two workers with the same seed and the same finished trials: the second one sees the
    # first one's trial RUNNING and must not propose its point again.
    storage = optuna.storages.InMemoryStorage()
    _seeded_study(storage, "s")
    _, first = _ask_point(storage, "s", acquisition)
    _, second = _ask_point(storage, "s", acquisition)
    assert second != first

    # Control: without the running trial, the same seed gives the same point, so the
    # difference above comes from the pending point alone.
    control = optuna.storages.InMemoryStorage()
    _seeded_study(control, "s")
    _, again = _ask_point(control, "s", acquisition)
    assert again == first


def _suggest_x(trial: optuna.Trial) -> float:
    return trial.suggest_float("x", -1.0, 1.0)


def _suggest_y(trial: optuna.Trial) -> float:
    return trial.suggest_float("y", -1.0, 1.0)


@pytest.mark.parametrize("acquisition", ["rollout", "ei"])
def test_a_point_proposed_but_not_yet_stored_is_pending_for_another_process(
    acquisition: str,
) -> None:
    # Worker A has its point (the relative sample is made at its first suggest call) but has
    # only suggested x so far; worker B, same seed, same data, must not propose A's point.
    storage = optuna.storages.InMemoryStorage()
    _seeded_study(storage, "s")
    sampler_a = CostRolloutSampler(budget=100.0, seed=7, acquisition=acquisition)
    study_a = optuna.load_study(study_name="s", storage=storage, sampler=sampler_a)
    trial_a = study_a.ask()
    x_a = _suggest_x(trial_a)
    _, second = _ask_point(storage, "s", acquisition)
    point_a = (x_a, _suggest_y(trial_a))
    assert second != point_a


@pytest.mark.parametrize("acquisition", ["rollout", "ei"])
def test_a_point_proposed_but_not_yet_stored_is_pending_for_the_same_sampler(
    acquisition: str,
) -> None:
    # As with threads: one sampler, trial A between its suggest calls while trial B is sampled.
    # B must get exactly what it gets when A's point is fully stored (same seed, same random
    # draws, A pending in both cases).
    def run(a_complete_first: bool) -> tuple[tuple[float, float], tuple[float, float]]:
        storage = optuna.storages.InMemoryStorage()
        _seeded_study(storage, "s")
        sampler = CostRolloutSampler(budget=100.0, seed=7, acquisition=acquisition)
        study = optuna.load_study(study_name="s", storage=storage, sampler=sampler)
        trial_a = study.ask()
        x_a = _suggest_x(trial_a)
        y_a = _suggest_y(trial_a) if a_complete_first else None
        trial_b = study.ask()
        point_b = (_suggest_x(trial_b), _suggest_y(trial_b))
        if y_a is None:
            y_a = _suggest_y(trial_a)
        return (x_a, y_a), point_b

    point_a, point_b = run(a_complete_first=False)
    control_a, control_b = run(a_complete_first=True)
    assert point_a == control_a
    assert point_b != point_a
    assert point_b == control_b


@pytest.mark.parametrize("acquisition", ["rollout", "ei"])
def test_a_proposal_made_while_another_thread_samples_is_pending(
    acquisition: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # n_jobs > 1 in slow motion: thread B has looked at the running trials and is about to
    # propose when thread A proposes for its trial. Whatever the order, the second proposal
    # must treat the first as pending: the two points are then exactly those of a run where
    # A's point is stored before B samples (same seed, same random draws, in either order).
    def control() -> set[tuple[float, float]]:
        storage = optuna.storages.InMemoryStorage()
        _seeded_study(storage, "s")
        sampler = CostRolloutSampler(budget=100.0, seed=7, acquisition=acquisition)
        study = optuna.load_study(study_name="s", storage=storage, sampler=sampler)
        first = study.ask()
        point_first = (_suggest_x(first), _suggest_y(first))
        second = study.ask()
        return {point_first, (_suggest_x(second), _suggest_y(second))}

    storage = optuna.storages.InMemoryStorage()
    _seeded_study(storage, "s")
    sampler = CostRolloutSampler(budget=100.0, seed=7, acquisition=acquisition)
    study = optuna.load_study(study_name="s", storage=storage, sampler=sampler)
    b_gathered, a_done = threading.Event(), threading.Event()
    real_pending = sampler_mod.read_snapshot
    thread_b: list[threading.Thread] = []

    def watched_pending(*args: Any, **kwargs: Any) -> Any:
        out = real_pending(*args, **kwargs)
        if threading.current_thread() in thread_b and not b_gathered.is_set():
            b_gathered.set()
            # (a sampler that gathers under its lock makes A wait instead: 5 s, then B goes on)
            a_done.wait(timeout=5.0)
        return out

    monkeypatch.setattr(sampler_mod, "read_snapshot", watched_pending)
    trial_a = study.ask()
    points: dict[str, Any] = {}

    def run_b() -> None:
        trial = study.ask()
        points["b"] = (_suggest_x(trial), _suggest_y(trial))

    thread_b.append(threading.Thread(target=run_b))
    thread_b[0].start()
    assert b_gathered.wait(timeout=60.0)
    points["a"] = (_suggest_x(trial_a), _suggest_y(trial_a))
    a_done.set()
    thread_b[0].join(timeout=120.0)
    assert points["a"] != points["b"]
    assert {points["a"], points["b"]} == control()


@pytest.mark.parametrize("acquisition", ["rollout", "ei"])
def test_workers_proposing_at_the_same_moment_propose_different_points(
    acquisition: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two workers, each with its own sampler (as two processes), same seed, same data, and
    # both inside propose at once: the overlap that is common when proposals take a second.
    storage = optuna.storages.InMemoryStorage()
    _seeded_study(storage, "s")
    both_in = threading.Barrier(2, timeout=30.0)
    first_call: set[int] = set()
    broken: list[threading.BrokenBarrierError] = []
    real_propose = sampler_mod.propose

    def meeting_propose(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() not in first_call:  # only the first proposal of each worker
            first_call.add(threading.get_ident())
            try:
                both_in.wait()
            except threading.BrokenBarrierError as exc:  # the overlap did not happen
                broken.append(exc)
        return real_propose(*args, **kwargs)

    monkeypatch.setattr(sampler_mod, "propose", meeting_propose)
    points: dict[str, Any] = {}

    def worker(name: str) -> None:
        _, points[name] = _ask_point(storage, "s", acquisition)

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120.0)
    assert not broken, "the two workers were never inside propose at the same moment"
    assert len(first_call) == 2
    assert set(points) == {"a", "b"}
    assert points["a"] != points["b"]


def _two_workers(
    storage: optuna.storages.BaseStorage, acquisition: str
) -> tuple[CostRolloutSampler, optuna.Trial, CostRolloutSampler, optuna.Trial]:
    """Two workers (own samplers, same seed), each with a new trial: a's is the earlier."""
    sampler_a = CostRolloutSampler(budget=100.0, seed=7, acquisition=acquisition)
    sampler_b = CostRolloutSampler(budget=100.0, seed=7, acquisition=acquisition)
    trial_a = optuna.load_study(study_name="s", storage=storage, sampler=sampler_a).ask()
    trial_b = optuna.load_study(study_name="s", storage=storage, sampler=sampler_b).ask()
    assert trial_a.number < trial_b.number
    return sampler_a, trial_a, sampler_b, trial_b


def _alone(acquisition: str) -> tuple[float, float]:
    """The point one worker proposes with no other trial running."""
    storage = optuna.storages.InMemoryStorage()
    _seeded_study(storage, "s")
    return _ask_point(storage, "s", acquisition)[1]


def _in_thread(fn: Callable[[], Any], out: dict[str, Any], key: str) -> threading.Thread:
    def run() -> None:
        out[key] = fn()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.parametrize("b_finishes", [False, True], ids=["b-running", "b-finished"])
@pytest.mark.parametrize("acquisition", ["rollout", "ei"])
def test_an_earlier_trial_moves_when_a_later_one_kept_the_same_point(
    acquisition: str, b_finishes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The order that used to slip through: a and b compute the same point without seeing each
    # other, b (the later trial) writes and checks it before a writes, so b sees no clash and
    # keeps it. a must then see b's final proposal and move, though b is the later trial;
    # also when b has already run and finished at that point before a publishes (a then
    # finds it among the finished trials, not the running ones).
    storage = optuna.storages.InMemoryStorage()
    _seeded_study(storage, "s")
    sampler_a, trial_a, _sampler_b, trial_b = _two_workers(storage, acquisition)
    b_done = threading.Event()
    real_propose_a = sampler_a._suggester.propose
    calls: list[int] = []

    def held_propose_a(*args: Any, **kwargs: Any) -> Any:
        out = real_propose_a(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            assert b_done.wait(timeout=60.0)
        return out

    monkeypatch.setattr(sampler_a._suggester, "propose", held_propose_a)
    points: dict[str, Any] = {}
    thread_a = _in_thread(lambda: (_suggest_x(trial_a), _suggest_y(trial_a)), points, "a")
    points["b"] = (_suggest_x(trial_b), _suggest_y(trial_b))
    if b_finishes:
        study_b = optuna.load_study(study_name="s", storage=storage)
        study_b.tell(trial_b, pc.trial_value({"x": points["b"][0], "y": points["b"][1]}))
        assert study_b.trials[trial_b.number].state == optuna.trial.TrialState.COMPLETE
    b_done.set()
    thread_a.join(timeout=120.0)
    assert points["b"] == _alone(acquisition)  # b kept the point: it saw no clash
    assert len(calls) == 2  # a proposed again
    assert points["a"] != points["b"]


@pytest.mark.parametrize("acquisition", ["rollout", "ei"])
def test_an_earlier_trial_waits_for_a_later_ones_verdict_and_keeps_its_point(
    acquisition: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a and b compute the same point; b writes it first but has not checked it yet when a
    # writes and checks. a cannot tell whether b will see a's proposal, so it waits for b's
    # final word: b, the later trial, sees a's proposal and moves; a keeps the point.
    storage = optuna.storages.InMemoryStorage()
    _seeded_study(storage, "s")
    sampler_a, trial_a, sampler_b, trial_b = _two_workers(storage, acquisition)
    b_written, a_waiting = threading.Event(), threading.Event()
    real_propose_a = sampler_a._suggester.propose
    real_check = _clash.must_repropose
    real_keeps = _clash._later_trial_keeps
    proposals_b: list[int] = []
    real_propose_b = sampler_b._suggester.propose

    def held_propose_a(*args: Any, **kwargs: Any) -> Any:
        out = real_propose_a(*args, **kwargs)
        if not b_written.is_set():  # computed without b's proposal; write after b
            assert b_written.wait(timeout=60.0)
        return out

    def counted_propose_b(*args: Any, **kwargs: Any) -> Any:
        proposals_b.append(1)
        return real_propose_b(*args, **kwargs)

    def held_check_b(study: Any, trial: Any, params: Any) -> Any:
        # b's check (a's goes straight through)
        if trial.number == trial_b.number and not a_waiting.is_set():
            b_written.set()  # written, not checked: let a write and check first
            assert a_waiting.wait(timeout=60.0)
        return real_check(study, trial, params)

    def watched_keeps_a(study: Any, later: Any, params: Any) -> Any:
        if later.number == trial_b.number:  # a waits for b's verdict
            a_waiting.set()
        return real_keeps(study, later, params)

    monkeypatch.setattr(sampler_a._suggester, "propose", held_propose_a)
    monkeypatch.setattr(sampler_b._suggester, "propose", counted_propose_b)
    monkeypatch.setattr(_clash, "must_repropose", held_check_b)
    monkeypatch.setattr(_clash, "_later_trial_keeps", watched_keeps_a)
    points: dict[str, Any] = {}
    thread_a = _in_thread(lambda: (_suggest_x(trial_a), _suggest_y(trial_a)), points, "a")
    thread_b = _in_thread(lambda: (_suggest_x(trial_b), _suggest_y(trial_b)), points, "b")
    thread_a.join(timeout=120.0)
    thread_b.join(timeout=120.0)
    assert a_waiting.is_set()  # a did meet b's unchecked proposal of the same point
    assert points["a"] == _alone(acquisition)
    assert len(proposals_b) == 2  # b proposed again
    assert points["a"] != points["b"]


# -- processes: one budget shared through storage ----------------------------------------------


@pytest.fixture
def storage_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    kind = request.param
    if kind == "sqlite":
        yield {"name": kind, "kind": "rdb", "url": f"sqlite:///{tmp_path / 'study.db'}"}
    elif kind == "journal":
        yield {"name": kind, "kind": "journal", "path": str(tmp_path / "journal.log")}
    else:
        yield {"name": kind, "kind": "rdb", "url": _pg.url_or_skip()}


def run_workers(
    spec: dict[str, Any],
    tmp_path: Path,
    n_workers: int,
    budget: float,
    timeout: float = 240.0,
    **config: Any,
) -> tuple[list[optuna.trial.FrozenTrial], list[dict[str, Any]], optuna.Study]:
    """Create a study, run ``n_workers`` worker processes on it until they return."""
    name = f"parallel-{uuid.uuid4().hex[:8]}"
    study = optuna.create_study(study_name=name, storage=pc.make_storage(spec))
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs, logs, outs = [], [], []
    for i in range(n_workers):
        out, log = tmp_path / f"out{i}.json", tmp_path / f"log{i}.txt"
        cfg = {
            "storage": spec,
            "study_name": name,
            "budget": budget,
            "worker": f"w{i}",
            "out": str(out),
            "barrier": str(barrier),
            **config,
        }
        procs.append(pc.start_worker(cfg, log))
        logs.append(log)
        outs.append(out)
    pc.release(barrier, n_workers, procs)
    pc.wait_workers(procs, logs, timeout)
    results = pc.read_results(outs)
    return study.get_trials(), results, study


@pytest.mark.parametrize(
    ("storage_spec", "n_workers"),
    [("sqlite", 3), ("journal", 2), ("postgres", 2)],
    indirect=["storage_spec"],
)
def test_worker_processes_share_one_budget(
    storage_spec: dict[str, Any], n_workers: int, tmp_path: Path
) -> None:
    budget = 7.0
    # The optuna-dashboard chart is on (persistent storages, optuna-dashboard installed).
    # soft: the test is about processes sharing a budget, not the hard budget
    sampler_kwargs: dict[str, Any] = {"overrun_risk": None}
    trials, results, study = run_workers(
        storage_spec,
        tmp_path,
        n_workers,
        budget,
        seed=0,
        sleep=(0.02, 0.05),
        n_startup_trials=3,
        sampler_kwargs=sampler_kwargs,
    )
    kind = storage_spec["name"]
    ledger = CostRolloutSampler(budget=budget).ledger(study)
    report = pc.check_budget_invariants(trials, budget, n_workers, pc.MAX_TRIAL_COST, ledger.spent)
    assert all(r["returned"] for r in results)
    pc.check_no_lost_trials(trials, results)
    # The budget really was shared: more than one worker ran trials.
    assert len({t.user_attrs["worker"] for t in trials if t.user_attrs.get("ran")}) >= 2
    # Every worker took part (its optimize loop ended on the budget, not on a trial count).
    for r in results:
        assert r["records"], f"worker {r['worker']} ran no trial at all"
    stored = study.user_attrs[SPENT_ATTR]
    if kind == "postgres":
        optuna.delete_study(study_name=study.study_name, storage=pc.make_storage(storage_spec))
    print(f"\nprocesses[{kind}]: {report.summary()} stored cost_spent={stored:.4g}")
    # Same seed in every worker and a deterministic objective: without pending points the
    # workers would evaluate the same points.
    assert not pc.duplicate_points(trials)


@pytest.mark.slow
def test_stress_four_processes_with_failures_on_sqlite(tmp_path: Path) -> None:
    # 4 worker processes, each capped at 200 trials, ~10% of trials raise, ~10% are pruned
    # (both after reporting their cost), on one SQLite study; the budget ends it first.
    n_workers, budget = 4, 500.0
    spec = {"name": "sqlite", "kind": "rdb", "url": f"sqlite:///{tmp_path / 'stress.db'}"}
    t0 = time.monotonic()
    trials, results, study = run_workers(
        spec,
        tmp_path,
        n_workers,
        budget,
        timeout=3000.0,
        seed=0,
        sleep=(0.02, 0.05),
        n_trials=200,
        fail_rate=0.1,
        prune_rate=0.1,
        sampler_kwargs={"overrun_risk": None},  # soft: the test is about faults, not the budget
    )
    seconds = time.monotonic() - t0
    ledger = CostRolloutSampler(budget=budget).ledger(study)
    report = pc.check_budget_invariants(trials, budget, n_workers, pc.MAX_TRIAL_COST, ledger.spent)
    pc.check_no_lost_trials(trials, results)
    # The budget, not the 200-trial cap, ended every worker.
    assert all(len(r["records"]) < 200 for r in results)
    ran = [t for t in trials if t.user_attrs.get("ran")]
    states = {s: sum(1 for t in ran if t.state.name == s) for s in ("COMPLETE", "FAIL", "PRUNED")}
    assert states["FAIL"] > 0 and states["PRUNED"] > 0
    # Every trial that ran was charged its reported cost, whatever its state.
    assert all(t.user_attrs["cost"] == pytest.approx(pc.trial_cost(t.params)) for t in ran)
    assert study.user_attrs[SPENT_ATTR] == pytest.approx(ledger.spent)
    per_worker = {r["worker"]: len(r["records"]) for r in results}
    pairs = pc.duplicate_points(trials)
    print(
        f"\nstress: {seconds:.1f} s, {len(trials)} trials, per worker {per_worker}, "
        f"ran {states}, duplicates {pairs}; {report.summary()}"
    )
    assert not pairs


def test_workers_sharing_a_seed_start_from_distinct_points() -> None:
    # Before any trial completes, every parameter is sampled independently; four workers
    # with the same seed (their own samplers, one study) must not evaluate one point four
    # times.
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage)
    points = []
    for _ in range(4):
        worker = optuna.load_study(
            study_name=study.study_name,
            storage=storage,
            sampler=CostRolloutSampler(budget=100.0, seed=0),
        )
        trial = worker.ask()
        points.append((trial.suggest_float("x", 0.0, 1.0), trial.suggest_int("k", 1, 50)))
    assert len(set(points)) == 4
    assert len({x for x, _ in points}) == 4 and len({k for _, k in points}) >= 3
