"""One worker process of the multi-process tests (``tests/integration/test_parallel.py``,
``test_faults.py``).

``python tests/helpers/_worker_main.py '<json config>'`` loads an existing study with its own
``CostRolloutSampler(budget=...)`` and calls ``study.optimize(objective)`` with no ``n_trials``
(unless the config caps it), then writes what it saw to a JSON file. The tests start it with
``_parallel_checks.start_worker``; the simulated problem (``trial_cost``, ``trial_value``) and
the storage specs come from ``_parallel_checks`` too, so the tests check what the worker ran.

The objective suggests its parameters first, then marks the trial as run (user attr ``ran``):
a trial that the sampler skips because the budget is spent is pruned at its first suggestion,
so it never carries that mark.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
import random
import sys
import time
from typing import Any

from _parallel_checks import make_storage
from _parallel_checks import trial_cost
from _parallel_checks import trial_value
import optuna
from optuna.trial import FrozenTrial


def _objective(config: dict[str, Any], worker: str) -> Any:
    sleep_min, sleep_max = config.get("sleep", (0.02, 0.05))
    rng = random.Random(f"{worker}-{os.getpid()}")
    fail_rate = float(config.get("fail_rate", 0.0))
    prune_rate = float(config.get("prune_rate", 0.0))
    hang_marker = config.get("hang_marker")
    report = config.get("report_cost", True)
    cost_scale = float(config.get("cost_scale", 1.0))

    def objective(trial: optuna.Trial) -> float:
        from optuna_costbo import report_cost

        params = {
            "x": trial.suggest_float("x", -1.0, 1.0),
            "y": trial.suggest_float("y", -1.0, 1.0),
        }
        trial.set_user_attr("ran", True)
        trial.set_user_attr("worker", worker)
        if hang_marker is not None:
            # A worker that the test kills mid-trial: say so, then hang. The marker appears
            # whole (written aside, then renamed: atomic on POSIX), so a test that sees it
            # exist never reads it empty (a CI run did).
            partial = Path(f"{hang_marker}.partial")
            partial.write_text(str(trial.number))
            partial.replace(hang_marker)
            time.sleep(600.0)
        time.sleep(rng.uniform(sleep_min, sleep_max))
        if report:
            report_cost(trial, cost_scale * trial_cost(params))
        u = rng.random()
        if u < fail_rate:
            raise RuntimeError(f"injected failure in trial {trial.number}")
        if u < fail_rate + prune_rate:
            raise optuna.TrialPruned()
        return trial_value(params)

    return objective


def run_worker(config: dict[str, Any]) -> None:
    from optuna_costbo import CostRolloutSampler

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    worker = str(config.get("worker", os.getpid()))
    storage = make_storage(config["storage"])
    accepted = inspect.signature(CostRolloutSampler).parameters
    extra = {k: v for k, v in config.get("sampler_kwargs", {}).items() if k in accepted}
    sampler = CostRolloutSampler(
        budget=config["budget"],
        seed=config.get("seed"),
        acquisition=config.get("acquisition", "rollout"),
        n_startup_trials=config.get("n_startup_trials"),
        **extra,
    )
    study = optuna.load_study(study_name=config["study_name"], storage=storage, sampler=sampler)
    start_ledger = sampler.ledger(study)
    records: list[dict[str, Any]] = []
    barrier = config.get("barrier")
    if barrier is not None:
        # Start together with the other workers (imports take a second or two each).
        Path(barrier, f"ready-{worker}").touch()
        deadline = time.monotonic() + 120.0
        while not Path(barrier, "go").exists():
            if time.monotonic() > deadline:
                raise SystemExit("the test never said go")
            time.sleep(0.01)

    def record(study: optuna.Study, trial: FrozenTrial) -> None:
        records.append({"number": trial.number, "state": trial.state.name})

    t0 = time.monotonic()
    study.optimize(
        _objective(config, worker),
        n_trials=config.get("n_trials"),
        catch=(RuntimeError,),
        callbacks=[record],
    )
    result = {
        "worker": worker,
        "pid": os.getpid(),
        "returned": True,
        "seconds": time.monotonic() - t0,
        "spent_at_start": start_ledger.spent,
        "remaining_at_start": start_ledger.remaining,
        "n_finished_at_start": start_ledger.n_finished,
        "records": records,
    }
    Path(config["out"]).write_text(json.dumps(result))


if __name__ == "__main__":
    run_worker(json.loads(sys.argv[1]))
