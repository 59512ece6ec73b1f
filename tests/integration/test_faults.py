"""Faults: a worker killed mid-trial, a worker restarted, a study re-opened in a new process.

A SIGKILLed worker's trial stays RUNNING until heartbeat marks it stale; then
``optuna.storages.fail_stale_trials`` (which every other worker's optimize loop calls before
each trial) fails it. It never passes through ``after_trial``; every worker's ledger charges it
from its start to its last sign of life, the stamp its worker wrote on it while it ran
(``tests/ledger/test_dead_trials.py`` has the details).
"""

from __future__ import annotations

from collections.abc import Iterator
import datetime
import os
from pathlib import Path
import signal
import subprocess
import threading
import time
from typing import Any

import _parallel_checks as pc
import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.costs import charged_cost
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import REMAINING_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR


optuna.logging.set_verbosity(optuna.logging.ERROR)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")


def _config(spec: dict[str, Any], name: str, budget: float, tmp: Path, tag: str) -> dict[str, Any]:
    return {
        "storage": spec,
        "study_name": name,
        "budget": budget,
        "worker": tag,
        "out": str(tmp / f"out-{tag}.json"),
        "seed": 0,
        "n_startup_trials": 3,
        # soft: these tests are about faults and resumption, not the hard budget
        "sampler_kwargs": {"overrun_risk": None},
    }


def _worker_like_objective(trial: optuna.Trial) -> float:
    params = {"x": trial.suggest_float("x", -1.0, 1.0), "y": trial.suggest_float("y", -1.0, 1.0)}
    trial.set_user_attr("ran", True)
    report_cost(trial, pc.trial_cost(params))
    return pc.trial_value(params)


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Worker processes started by a test; any still alive at teardown are killed."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_killed_worker_trial_is_failed_by_heartbeat_and_charged(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Costs are scaled to 0.125-0.375 per trial so that the killed trial's charge (it runs
    # 3.1 s, and is charged that less at most two heartbeat intervals) is larger than any
    # overrun the other workers can cause: the test can then tell that the workers stopped
    # early *because* the killed trial was charged.
    budget, scale = 6.0, 0.25
    spec = {"kind": "rdb", "url": f"sqlite:///{tmp_path / 'faults.db'}", "heartbeat": True}
    name = "faults"
    study = optuna.create_study(study_name=name, storage=pc.make_storage(spec))
    marker = tmp_path / "hang-marker"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    # NOTE: the dashboard chart is off here: its first update stalls after_trial for ~2 s,
    # long enough for heartbeat to fail a live trial (see the last test of this file).
    common = {
        "cost_scale": scale,
        "sleep": (0.1, 0.15),
    }

    # w1 gets ready; the victim starts its first trial, hangs in it and is killed 3.1 s after
    # the trial started; w1 starts working once the victim's heartbeat is stale (grace period
    # 2 s, and SQLite stores heartbeats to the second), so w1's first loop fails the victim's
    # trial.
    w1_cfg = {**_config(spec, name, budget, tmp_path, "w1"), **common, "barrier": str(barrier)}
    w1 = pc.start_worker(w1_cfg, tmp_path / "log-w1.txt")
    spawned.append(w1)
    victim_cfg = {
        **_config(spec, name, budget, tmp_path, "victim"),
        **common,
        "hang_marker": str(marker),
    }
    victim = pc.start_worker(victim_cfg, tmp_path / "log-victim.txt")
    spawned.append(victim)
    _wait_for(marker.exists, 120.0, "the victim's first trial")
    victim_number = int(marker.read_text())
    victim_start = study.trials[victim_number].datetime_start
    assert victim_start is not None
    time.sleep(max((victim_start - datetime.datetime.now()).total_seconds() + 3.1, 0.0))
    victim.send_signal(signal.SIGKILL)
    ran = (datetime.datetime.now() - victim_start).total_seconds()
    assert victim.wait(timeout=30) == -signal.SIGKILL
    time.sleep(3.5)
    pc.release(barrier, 1, [w1])

    def victim_failed() -> bool:
        trial = study._storage.get_trial(
            study._storage.get_trial_id_from_study_id_trial_number(study._study_id, victim_number)
        )
        if w1.poll() is not None and trial.state == TrialState.RUNNING:
            raise AssertionError(
                "worker w1 spent the budget before the stale trial was failed: the test's "
                f"timing assumption broke; log:\n{(tmp_path / 'log-w1.txt').read_text()[-2000:]}"
            )
        return trial.state == TrialState.FAIL

    _wait_for(victim_failed, 60.0, "the victim's trial to be failed by w1's heartbeat check")

    # A restarted worker takes the victim's place and continues with the remaining budget.
    w2_cfg = {**_config(spec, name, budget, tmp_path, "w2"), **common}
    w2 = pc.start_worker(w2_cfg, tmp_path / "log-w2.txt")
    spawned.append(w2)
    pc.wait_workers([w1, w2], [tmp_path / "log-w1.txt", tmp_path / "log-w2.txt"], 180.0)
    results = pc.read_results([tmp_path / "out-w1.json", tmp_path / "out-w2.json"])

    trials = study.get_trials()
    killed = trials[victim_number]
    assert killed.state == TrialState.FAIL
    assert killed.user_attrs.get("worker") == "victim"
    # It never reached after_trial; every worker charges it its last stamp (its start to its
    # last sign of life), not the time until it was noticed, and nothing is written on it.
    charged = charged_cost(killed, "cost", False)
    assert "cost" not in killed.user_attrs and COST_SOURCE_ATTR not in killed.system_attrs
    noticed = (killed.datetime_complete - killed.datetime_start).total_seconds()  # type: ignore[operator]
    assert noticed >= ran + 2.0
    # Within two heartbeat intervals of what it ran, never more.
    assert ran - 2.0 < charged <= ran

    sampler = CostRolloutSampler(budget=budget)
    ledger = sampler.ledger(study)
    report = pc.check_budget_invariants(trials, budget, 2, scale * pc.MAX_TRIAL_COST, ledger.spent)
    # The other workers stopped earlier because the killed trial was charged: without its
    # charge the budget would not have been spent.
    assert ledger.spent - charged < budget
    # The restarted worker started from the stored ledger, killed trial included.
    w2_result = next(r for r in results if r["worker"] == "w2")
    assert w2_result["spent_at_start"] >= charged
    assert w2_result["remaining_at_start"] == pytest.approx(
        max(budget - w2_result["spent_at_start"], 0.0)
    )
    # No finished trial is lost, and none but the victim's is left unfinished or failed.
    pc.check_no_lost_trials(trials, results)
    assert [t.number for t in trials if t.state == TrialState.FAIL] == [victim_number]
    assert study.user_attrs[BUDGET_ATTR] == budget
    print(
        f"\nkilled worker: ran {ran:.3f} s, failed after {noticed:.3f} s, charged "
        f"{charged:.3f} s; {report.summary()}"
    )


@pytest.mark.parametrize("kind", ["journal", "sqlite"])
def test_study_reopened_in_a_new_process_continues_from_the_stored_ledger(
    kind: str, tmp_path: Path
) -> None:
    budget = 5.0
    spec = (
        {"kind": "journal", "path": str(tmp_path / "journal.log")}
        if kind == "journal"
        else {"kind": "rdb", "url": f"sqlite:///{tmp_path / 'reopen.db'}"}
    )
    study = optuna.create_study(study_name="reopen", storage=pc.make_storage(spec))

    def run(tag: str, **extra: Any) -> dict[str, Any]:
        cfg = {
            **_config(spec, "reopen", budget, tmp_path, tag),
            "sleep": (0.0, 0.01),
            **extra,
        }
        log = tmp_path / f"log-{tag}.txt"
        pc.wait_workers([pc.start_worker(cfg, log)], [log], 120.0)
        return pc.read_results([tmp_path / f"out-{tag}.json"])[0]

    # First session, here: two trials (costs 0.5-1.5 each), then this session lets go.
    first = optuna.load_study(
        study_name="reopen",
        storage=pc.make_storage(spec),
        sampler=CostRolloutSampler(budget=budget, seed=0, n_startup_trials=3, overrun_risk=None),
    )
    first.optimize(_worker_like_objective, n_trials=2)
    spent_first = sum(t.user_attrs["cost"] for t in study.get_trials())
    assert spent_first < budget
    del first

    # Second session, a new process: starts from the stored ledger and runs to the budget.
    second = run("second")
    assert second["spent_at_start"] == pytest.approx(spent_first)
    assert second["remaining_at_start"] == pytest.approx(max(budget - spent_first, 0.0))
    assert second["n_finished_at_start"] == 2
    trials = study.get_trials()
    report = pc.check_budget_invariants(
        trials, budget, 1, pc.MAX_TRIAL_COST, CostRolloutSampler(budget=budget).ledger(study).spent
    )
    # One worker: it stopped right after the trial that spent the budget.
    charged = [pc.brute_force_charge(t) for t in trials if not t.system_attrs.get(SKIPPED_ATTR)]
    assert sum(charged[:-1]) < budget <= sum(charged)
    assert len(second["records"]) == len(trials) - 2

    # Third session on the spent study, with a fresh sampler: returns at once, runs no
    # objective, costs nothing.
    third_sampler = CostRolloutSampler(budget=budget, overrun_risk=None)
    third = optuna.load_study(
        study_name="reopen", storage=pc.make_storage(spec), sampler=third_sampler
    )
    assert third_sampler.remaining_budget(third) == pytest.approx(max(budget - report.spent, 0.0))
    third.optimize(_worker_like_objective)
    after = study.get_trials()
    assert len(after) == len(trials) + 1
    extra = after[-1]
    assert extra.state == TrialState.PRUNED
    assert extra.system_attrs.get(SKIPPED_ATTR) is True
    assert "ran" not in extra.user_attrs
    assert third_sampler.ledger(third).spent == pytest.approx(report.spent)
    stored = study.user_attrs
    assert stored[SPENT_ATTR] == pytest.approx(report.spent)
    assert stored[REMAINING_ATTR] == 0.0


class _ContendedStorage(optuna.storages.RDBStorage):
    """An RDB storage whose writes stall once, as a busy shared database's do."""

    stall_next_write = False

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        if self.stall_next_write:
            self.stall_next_write = False
            time.sleep(3.5)
        super().set_study_user_attr(study_id, key, value)


def test_a_slow_after_trial_does_not_let_the_trial_go_stale(tmp_path: Path) -> None:
    storage = _ContendedStorage(
        f"sqlite:///{tmp_path / 'stall.db'}", heartbeat_interval=1, grace_period=2
    )
    sampler = CostRolloutSampler(budget=100.0, seed=0)
    study = optuna.create_study(storage=storage, sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
        storage.stall_next_write = True  # the sampler's after_trial meets a busy database
        return x

    stop = threading.Event()

    def other_worker() -> None:  # what every other worker's optimize loop does per trial
        while not stop.is_set():
            optuna.storages.fail_stale_trials(study)
            time.sleep(0.2)

    reaper = threading.Thread(target=other_worker)
    reaper.start()
    try:
        study.optimize(objective, n_trials=1)
    finally:
        stop.set()
        reaper.join()
    assert study.trials[0].state == TrialState.COMPLETE
    assert study.trials[0].user_attrs["cost"] == 1.0
