"""The studies the storage experiments measure: a cheap objective (3 floats, a reported
cost), studies pre-filled with finished and RUNNING trials shaped like ``CostRolloutSampler``'s
own, and the servers some routes need (Optuna's gRPC proxy, a Dask scheduler)."""

from __future__ import annotations

import contextlib
import multiprocessing
import socket
import subprocess
import sys
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.storages import BaseStorage

from benchmarks.harness import package_probes
from optuna_costbo import report_cost


DIM = 3
DISTRIBUTIONS = {f"x{i}": FloatDistribution(-1.0, 1.0) for i in range(DIM)}


def objective_value(x: np.ndarray) -> float:
    return float(np.sum((x - 0.3) ** 2))


def objective_cost(x: np.ndarray) -> float:
    return float(np.exp(0.5 * np.mean(x)))


def objective(trial: optuna.Trial) -> float:
    x = np.array([trial.suggest_float(f"x{i}", -1.0, 1.0) for i in range(DIM)])
    report_cost(trial, objective_cost(x))
    return objective_value(x)


def fill_study(storage: BaseStorage, name: str, n_finished: int, n_running: int) -> None:
    """A study with ``n_finished`` finished trials and ``n_running`` trials left RUNNING."""
    study = optuna.create_study(study_name=name, storage=storage)
    rng = np.random.default_rng(0)
    trials = []
    for _ in range(n_finished):
        x = rng.uniform(-1.0, 1.0, DIM)
        params = {f"x{i}": float(x[i]) for i in range(DIM)}
        trials.append(
            optuna.create_trial(
                params=params,
                distributions=DISTRIBUTIONS,
                value=objective_value(x),
                user_attrs={"cost": objective_cost(x)},
                system_attrs={
                    **package_probes.FINISHED_SYSTEM_ATTRS,
                    package_probes.PROPOSED_PARAMS_ATTR: params,
                },
            )
        )
    study.add_trials(trials)
    for _ in range(n_running):
        # A running trial of another worker: its parameters suggested and its proposal
        # published, its objective still at work.
        x = rng.uniform(-1.0, 1.0, DIM)
        params = {f"x{i}": float(x[i]) for i in range(DIM)}
        trial_id = storage.create_new_trial(study._study_id)
        for key, dist in DISTRIBUTIONS.items():
            storage.set_trial_param(trial_id, key, dist.to_internal_repr(params[key]), dist)
        storage.set_trial_system_attr(trial_id, package_probes.PROPOSED_PARAMS_ATTR, params)
        for key, value in package_probes.RUNNING_SYSTEM_ATTRS.items():
            storage.set_trial_system_attr(trial_id, key, value)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(url: str, port: int) -> None:
    """The gRPC proxy process: Optuna's server in front of ``url`` (with Optuna's cache)."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    storage = optuna.storages.get_storage(url)
    optuna.storages.run_grpc_proxy_server(storage, host="127.0.0.1", port=port)


class Proxy:
    """A gRPC proxy server process on 127.0.0.1 for the duration of a ``with`` block."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> Proxy:
        self.port = free_port()
        ctx = multiprocessing.get_context("spawn")
        self.process = ctx.Process(target=serve, args=(self.url, self.port), daemon=True)
        self.process.start()
        client = optuna.storages.GrpcStorageProxy(host="127.0.0.1", port=self.port)
        client.wait_server_ready(timeout=60.0)
        client.close()
        return self

    def client(self) -> BaseStorage:
        return optuna.storages.GrpcStorageProxy(host="127.0.0.1", port=self.port)

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.join(10.0)


class DaskScheduler:
    """A Dask scheduler process on 127.0.0.1 (no workers: this process is the Dask client)
    for the duration of a ``with`` block."""

    def __enter__(self) -> DaskScheduler:
        import distributed

        port = free_port()
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "distributed.cli.dask_scheduler"),
                *("--host", "127.0.0.1", "--port", str(port), "--no-dashboard"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.client = distributed.Client(f"tcp://127.0.0.1:{port}", timeout=60)
        return self

    def storage(self) -> BaseStorage:
        from optuna_integration import DaskStorage

        return DaskStorage(client=self.client)  # a new InMemoryStorage on the scheduler

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(10.0)


def delete_study(url: str, name: str) -> None:
    with contextlib.suppress(KeyError):
        optuna.delete_study(study_name=name, storage=optuna.storages.RDBStorage(url))


def fill_study_fast(url: str, name: str, n_finished: int) -> None:
    """As :func:`fill_study` for finished trials, with the database's commits not waiting for
    the disk (only while filling: SQLite ``synchronous=OFF``, PostgreSQL
    ``synchronous_commit=off``)."""
    import sqlalchemy

    postgres = url.startswith("postgresql")
    engine_kwargs = {"connect_args": {"options": "-c synchronous_commit=off"}} if postgres else {}
    rdb = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
    if not postgres:

        def no_sync(conn: Any, record: Any) -> None:
            conn.execute("PRAGMA synchronous=OFF")

        sqlalchemy.event.listen(rdb.engine, "connect", no_sync)
        rdb.engine.dispose()  # the connections made so far wait for the disk
    fill_study(optuna.storages.get_storage(rdb), name, n_finished, 0)
    rdb.engine.dispose()


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
