"""Helpers for ``test_parallel_routes.py``: Optuna's routes to many workers.

Run as a script, this module is either side of the gRPC route:

- ``python tests/helpers/_routes.py server '<json>'`` serves an RDB storage
  (``{"url": ...}``) through Optuna's gRPC storage proxy on ``{"host": ..., "port": ...}``
  until it is terminated;
- ``python tests/helpers/_routes.py worker '<json>'`` is one worker: it loads the study through a
  ``GrpcStorageProxy`` with its own ``CostRolloutSampler(budget=...)``, calls
  ``study.optimize(objective)`` with no ``n_trials`` and writes what it saw to a JSON file.

Imported (by the tests, or by a Dask worker that unpickles :func:`dask_task`), it holds the
objective that both routes run, and the task each Dask worker runs.

The objective suggests its parameters first, then marks the trial as run (user attr ``ran``)
and reports a simulated cost in [0.5, 1.5]: a trial that the sampler skips because the budget
is spent is pruned at its first suggestion, so it never carries that mark. The records written
for each worker (``{"worker", "records": [{"number", "state"}]}``) are the ones that
``_parallel_checks.check_no_lost_trials`` reads.
"""

from __future__ import annotations

from collections.abc import Callable
import json
import os
from pathlib import Path
import random
import socket
import subprocess
import sys
import time
from typing import Any

import optuna
from optuna.trial import FrozenTrial


SCRIPT = str(Path(__file__).resolve())
TESTS_DIR = str(Path(__file__).resolve().parent)
REPO_ROOT = str(Path(__file__).resolve().parents[2])
MAX_TRIAL_COST = 1.5


def trial_cost(params: dict[str, float]) -> float:
    """The simulated cost of a point: 0.5 at x = -1 up to 1.5 at x = 1."""
    return 1.0 + 0.5 * params["x"]


def trial_value(params: dict[str, float]) -> float:
    """A deterministic objective with its minimum inside the box."""
    return (params["x"] - 0.3) ** 2 + (params["y"] + 0.2) ** 2


def make_objective(worker: str, sleep: tuple[float, float]) -> Callable[[optuna.Trial], float]:
    rng = random.Random(f"{worker}-{os.getpid()}")

    def objective(trial: optuna.Trial) -> float:
        from optuna_costbo import report_cost

        params = {
            "x": trial.suggest_float("x", -1.0, 1.0),
            "y": trial.suggest_float("y", -1.0, 1.0),
        }
        trial.set_user_attr("ran", True)
        trial.set_user_attr("worker", worker)
        time.sleep(rng.uniform(*sleep))
        report_cost(trial, trial_cost(params))
        return trial_value(params)

    return objective


def optimize(study: optuna.Study, worker: str, config: dict[str, Any]) -> dict[str, Any]:
    """Run ``study.optimize`` until the sampler stops it; what this worker saw."""
    records: list[dict[str, Any]] = []

    def record(study: optuna.Study, trial: FrozenTrial) -> None:
        records.append({"number": trial.number, "state": trial.state.name})

    low, high = config.get("sleep", (0.05, 0.1))
    t0 = time.monotonic()
    study.optimize(make_objective(worker, (float(low), float(high))), callbacks=[record])
    return {
        "worker": worker,
        "pid": os.getpid(),
        "returned": True,
        "seconds": time.monotonic() - t0,
        "records": records,
    }


def make_sampler(config: dict[str, Any]) -> Any:
    from optuna_costbo import CostRolloutSampler

    return CostRolloutSampler(
        budget=config["budget"],
        seed=config.get("seed"),
        acquisition=config.get("acquisition", "ei"),
        n_startup_trials=config.get("n_startup_trials"),
        overrun_risk=None,  # soft: the route tests are about sharing a budget, not the hard one
    )


def near_duplicates(trials: list[FrozenTrial], tol: float = 1e-3) -> list[tuple[int, int]]:
    """Pairs of COMPLETE trials that ran at the same time at points within ``tol`` (max norm
    on the [-1, 1] box) of each other: the same configuration evaluated twice in effect."""
    done = [
        t
        for t in trials
        if t.state.name == "COMPLETE" and t.datetime_start and t.datetime_complete
    ]
    pairs = []
    for i, early in enumerate(done):
        for late in done[i + 1 :]:
            overlap = late.datetime_start < early.datetime_complete  # type: ignore[operator]
            overlap = overlap and early.datetime_start < late.datetime_complete  # type: ignore[operator]
            close = all(abs(early.params[k] - late.params[k]) <= tol for k in ("x", "y"))
            if overlap and close:
                pairs.append((min(early.number, late.number), max(early.number, late.number)))
    return sorted(pairs)


# -- gRPC: a proxy server process and worker processes -----------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_server(config: dict[str, Any]) -> None:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    # get_storage, not RDBStorage: the proxy then keeps Optuna's trial cache (Optuna's advice).
    storage = optuna.storages.get_storage(config["url"])
    optuna.storages.run_grpc_proxy_server(storage, host=config["host"], port=config["port"])


def run_grpc_worker(config: dict[str, Any]) -> None:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    worker = str(config["worker"])
    storage = optuna.storages.GrpcStorageProxy(host=config["host"], port=config["port"])
    storage.wait_server_ready(timeout=60.0)
    study = optuna.load_study(
        study_name=config["study_name"], storage=storage, sampler=make_sampler(config)
    )
    barrier = Path(config["barrier"])
    # Start together with the other workers (imports take a second or two each).
    (barrier / f"ready-{worker}").touch()
    deadline = time.monotonic() + 120.0
    while not (barrier / "go").exists():
        if time.monotonic() > deadline:
            raise SystemExit("the test never said go")
        time.sleep(0.01)
    result = optimize(study, worker, config)
    storage.close()
    Path(config["out"]).write_text(json.dumps(result))


def start(role: str, config: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
    """Start this script as ``role`` (server or worker); stdout and stderr go to ``log``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    # One BLAS thread per worker: the workers are the parallelism.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    with open(log, "wb") as fh:
        return subprocess.Popen(
            [sys.executable, SCRIPT, role, json.dumps(config)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO_ROOT,
        )


# -- Dask: the task each Dask worker runs ------------------------------------------------------


def dask_task(storage: optuna.storages.BaseStorage, config: dict[str, Any]) -> dict[str, Any]:
    """One Dask worker's share: load the study with its own sampler and optimize it.

    ``storage`` is the client's ``DaskStorage``, unpickled here: its calls go to the storage
    that lives on the scheduler.
    """
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.load_study(
        study_name=config["study_name"], storage=storage, sampler=make_sampler(config)
    )
    return optimize(study, str(config["worker"]), config)


if __name__ == "__main__":
    role, raw = sys.argv[1], json.loads(sys.argv[2])
    {"server": run_server, "worker": run_grpc_worker}[role](raw)
