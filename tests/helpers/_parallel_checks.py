"""Helpers and checks shared by the multi-process tests (``test_parallel.py``, ``test_faults.py``).

- the simulated problem the workers run (:func:`trial_cost`, :func:`trial_value`,
  ``MAX_TRIAL_COST``) and storages from JSON-able specs (:func:`make_storage`), shared with the
  worker script ``tests/helpers/_worker_main.py``;
- starting worker processes and waiting for them (:func:`start_worker`, :func:`release`,
  :func:`wait_workers`, :func:`read_results`);
- checks on a finished study: the shared-budget invariants (:func:`check_budget_invariants`,
  against :func:`brute_force_charge`), no lost trials, no duplicate concurrent points.

Imported by the tests (``tests/`` is on ``sys.path`` under pytest) and by the worker script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import datetime
import json
import math
import os
from pathlib import Path
import subprocess
import sys
import time
from typing import Any

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState


WORKER_SCRIPT = str(Path(__file__).resolve().with_name("_worker_main.py"))
REPO_ROOT = str(Path(__file__).resolve().parents[2])
SKIPPED_ATTR = "costbo:skipped_budget_exhausted"
SAMPLER_SECONDS_ATTR = "costbo:sampler_seconds"
ALIVE_ATTR = "costbo:alive_seconds"


# -- what the workers run ---------------------------------------------------------------------


def make_storage(spec: dict[str, Any]) -> optuna.storages.BaseStorage:
    """A storage from a JSON-able spec: ``{"kind": "rdb", "url": ..., "heartbeat": bool}`` or
    ``{"kind": "journal", "path": ...}``."""
    if spec["kind"] == "journal":
        return optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(spec["path"])
        )
    if spec.get("heartbeat"):
        return optuna.storages.RDBStorage(spec["url"], heartbeat_interval=1, grace_period=2)
    return optuna.storages.RDBStorage(spec["url"])


def trial_cost(params: dict[str, float]) -> float:
    """The simulated cost of a point: 0.5 at x = -1 up to 1.5 at x = 1."""
    return 1.0 + 0.5 * params["x"]


def trial_value(params: dict[str, float]) -> float:
    """A deterministic objective with its minimum inside the box."""
    return (params["x"] - 0.3) ** 2 + (params["y"] + 0.2) ** 2


MAX_TRIAL_COST = 1.5


# -- the test side -----------------------------------------------------------------------------


def start_worker(config: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
    """Start one worker process (its stdout and stderr go to ``log``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    # One BLAS thread per worker: the workers are the parallelism.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    with open(log, "wb") as fh:
        return subprocess.Popen(
            [sys.executable, WORKER_SCRIPT, json.dumps(config)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO_ROOT,
        )


def wait_workers(
    procs: Sequence[subprocess.Popen[bytes]], logs: Sequence[Path], timeout: float
) -> None:
    """Wait for every worker to exit by itself with status 0, or kill them all and fail."""
    deadline = time.monotonic() + timeout
    try:
        for proc, log in zip(procs, logs, strict=True):
            remaining = max(deadline - time.monotonic(), 0.1)
            try:
                rc = proc.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                raise AssertionError(
                    f"worker {proc.pid} did not return by itself within {timeout} s; "
                    f"log:\n{log.read_text(errors='replace')[-3000:]}"
                ) from None
            assert rc == 0, (
                f"worker {proc.pid} exited with {rc}; log:\n"
                f"{log.read_text(errors='replace')[-3000:]}"
            )
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def release(barrier: Path, n: int, procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """Wait until ``n`` workers are ready at ``barrier``, then let them all go."""
    deadline = time.monotonic() + 120.0
    while len(list(barrier.glob("ready-*"))) < n:
        dead = [p.pid for p in procs if p.poll() is not None]
        assert not dead, f"workers {dead} exited before the start"
        assert time.monotonic() < deadline, "workers never got ready"
        time.sleep(0.02)
    (barrier / "go").touch()


def read_results(outs: Sequence[Path]) -> list[dict[str, Any]]:
    return [json.loads(out.read_text()) for out in outs]


def brute_force_charge(trial: FrozenTrial, cost_attr: str = "cost") -> float:
    """What a finished trial costs, computed independently of the package.

    Skipped trials cost nothing; else a valid reported cost; else a heartbeat-failed trial's
    last stamp (no more than its duration); else the trial's duration less the sampler's
    recorded time.
    """
    if trial.system_attrs.get(SKIPPED_ATTR):
        return 0.0
    cost = trial.user_attrs.get(cost_attr)
    if (
        isinstance(cost, (int, float))
        and not isinstance(cost, bool)
        and math.isfinite(cost)
        and cost >= 0  # 0: a free trial
    ):
        return float(cost)
    if trial.datetime_start is None or trial.datetime_complete is None:
        return 0.0
    seconds = (trial.datetime_complete - trial.datetime_start).total_seconds()
    stamp = trial.system_attrs.get(ALIVE_ATTR)
    if trial.state == TrialState.FAIL and stamp is not None:
        return max(min(float(stamp), seconds), 1e-6)  # 1e-6: the models' cost floor
    sampler = trial.system_attrs.get(SAMPLER_SECONDS_ATTR, 0.0)
    return max(seconds - float(sampler), 0.0)


@dataclass
class BudgetReport:
    """What :func:`check_budget_invariants` measured on a finished study."""

    budget: float
    spent: float
    overrun: float
    in_flight_cost: float  # charged cost of the trials running when the budget ran out
    n_in_flight: int
    crossing: datetime.datetime
    n_ran: int
    n_skipped: int
    n_started_after: int  # trials created after the budget ran out (all must be skipped)
    states: dict[str, int]

    def summary(self) -> str:
        return (
            f"budget={self.budget:g} spent={self.spent:.4g} overrun={self.overrun:.4g} "
            f"in-flight at crossing={self.n_in_flight} trials costing {self.in_flight_cost:.4g} "
            f"ran={self.n_ran} skipped={self.n_skipped} started-after={self.n_started_after} "
            f"states={self.states}"
        )


def check_budget_invariants(
    trials: Sequence[FrozenTrial],
    budget: float,
    n_workers: int,
    max_cost: float,
    package_spent: float,
) -> BudgetReport:
    """Check the shared-budget invariants of a study that all its workers have finished.

    * no trial is left RUNNING or WAITING;
    * the package's ledger equals the brute-force sum of charges;
    * spent >= budget;
    * let the crossing be the completion time of the trial whose completion (in order of
      completion times) took the cumulative charge to the budget; then the overrun is at most
      the charge of the trials running at the crossing, and at most n_workers * max_cost;
    * every trial started after the crossing was skipped: pruned, costing 0, never ran.
    """
    leftover = [t.number for t in trials if not t.state.is_finished()]
    assert not leftover, f"trials left unfinished: {leftover}"
    charges = {t.number: brute_force_charge(t) for t in trials}
    spent = sum(charges.values())
    assert math.isfinite(package_spent)
    assert package_spent == _approx(spent), (package_spent, spent)
    assert spent >= budget, f"the workers stopped before the budget was spent: {spent} < {budget}"

    by_completion = sorted(trials, key=lambda t: t.datetime_complete)  # type: ignore[arg-type, return-value]
    cumulative = 0.0
    crossing: datetime.datetime | None = None
    for t in by_completion:
        cumulative += charges[t.number]
        if cumulative >= budget:
            crossing = t.datetime_complete
            break
    assert crossing is not None

    in_flight = [
        t
        for t in trials
        if t.datetime_start is not None
        and t.datetime_complete is not None
        and t.datetime_start <= crossing <= t.datetime_complete
    ]
    in_flight_cost = sum(charges[t.number] for t in in_flight)
    overrun = spent - budget
    assert overrun <= in_flight_cost + 1e-9, (
        f"overrun {overrun} exceeds the cost {in_flight_cost} of the trials running when the "
        f"budget ran out ({[t.number for t in in_flight]})"
    )
    assert overrun <= n_workers * max_cost + 1e-9, (overrun, n_workers, max_cost)

    after = [t for t in trials if t.datetime_start is not None and t.datetime_start > crossing]
    ran_after = [t.number for t in after if t.user_attrs.get("ran")]
    assert not ran_after, (
        f"trials {ran_after} started after the budget ran out at {crossing} and ran their "
        "objective"
    )
    for t in after:
        assert t.state == TrialState.PRUNED, (t.number, t.state)
        assert t.system_attrs.get(SKIPPED_ATTR) is True, t.number
        assert charges[t.number] == 0.0
    for t in trials:
        if t.system_attrs.get(SKIPPED_ATTR):
            assert not t.user_attrs.get("ran"), f"skipped trial {t.number} ran its objective"
            assert t.state == TrialState.PRUNED

    states: dict[str, int] = {}
    for t in trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    return BudgetReport(
        budget=budget,
        spent=spent,
        overrun=overrun,
        in_flight_cost=in_flight_cost,
        n_in_flight=len(in_flight),
        crossing=crossing,
        n_ran=sum(1 for t in trials if t.user_attrs.get("ran")),
        n_skipped=sum(1 for t in trials if t.system_attrs.get(SKIPPED_ATTR)),
        n_started_after=len(after),
        states=states,
    )


def duplicate_points(trials: Sequence[FrozenTrial]) -> list[tuple[int, int]]:
    """Pairs of overlapping COMPLETE trials with identical parameters (earlier, later number).

    Only trials that ran at the same time count: pending points keep concurrent workers apart,
    while a point evaluated again after it finished is the acquisition's choice. Trials started
    before any trial finished are left out: the search space is unknown then, so each
    worker's independent sampler (seeded alike) chooses their points.
    """
    finished = [t.datetime_complete for t in trials if t.datetime_complete is not None]
    first_end = min(finished) if finished else None
    done = [
        t
        for t in trials
        if t.state == TrialState.COMPLETE
        and t.datetime_start is not None
        and t.datetime_complete is not None
        and not (first_end is not None and t.datetime_start < first_end)
    ]
    pairs = []
    for i, early in enumerate(done):
        for late in done[i + 1 :]:
            overlap = late.datetime_start < early.datetime_complete  # type: ignore[operator]
            overlap = overlap and early.datetime_start < late.datetime_complete  # type: ignore[operator]
            if overlap and early.params == late.params:
                pairs.append((min(early.number, late.number), max(early.number, late.number)))
    return sorted(pairs)


def check_no_lost_trials(trials: Sequence[FrozenTrial], results: Sequence[dict[str, Any]]) -> None:
    """Every trial a worker saw finish is in storage, in the state the worker saw."""
    by_number = {t.number: t for t in trials}
    seen = 0
    for result in results:
        for rec in result["records"]:
            stored = by_number.get(rec["number"])
            assert stored is not None, f"trial {rec['number']} of worker {result['worker']} lost"
            assert stored.state.name == rec["state"], (rec, stored.state)
            seen += 1
    numbers = [rec["number"] for r in results for rec in r["records"]]
    assert len(numbers) == len(set(numbers)), "two workers ran the same trial"


def _approx(x: float) -> Any:
    import pytest

    return pytest.approx(x, rel=1e-9, abs=1e-9)
