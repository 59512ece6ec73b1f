"""1. One worker's storage traffic per trial.

One worker runs ``--trials`` trials of a cheap objective with ``CostRolloutSampler`` on a study
that already holds ``--finished`` finished trials and ``r`` trials that stay RUNNING (other
workers' trials), on SQLite, PostgreSQL, Optuna's gRPC proxy in front of PostgreSQL and
optuna-integration's DaskStorage. The storage the study sees is wrapped in a counting proxy:
storage API calls per trial (all, by the sampler, and those made while it suggests), their
wall time and the worker's CPU time in them, and below them the wire: SQL statements, or RPCs
and their protobuf bytes, or for Dask the pickled size of the replies.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from typing import Any
import uuid

import optuna

from benchmarks.harness import package_probes
from benchmarks.storage.instruments import CountingStorage
from benchmarks.storage.instruments import PhasedSampler
from benchmarks.storage.instruments import Tally
from benchmarks.storage.instruments import count_grpc
from benchmarks.storage.instruments import count_sql
from benchmarks.storage.studies import DaskScheduler
from benchmarks.storage.studies import Proxy
from benchmarks.storage.studies import delete_study
from benchmarks.storage.studies import fill_study
from benchmarks.storage.studies import objective
from benchmarks.storage.studies import table


Trace = list[tuple[str, tuple[Any, ...], dict[str, Any]]]


def measure_traffic(
    backend: str,
    url: str,
    n_finished: int,
    n_running: int,
    n_trials: int,
    acquisition: str,
    proxy: Any,
) -> tuple[dict[str, float], list[tuple[str, tuple[Any, ...], dict[str, Any]]], str]:
    """One worker's storage traffic per trial; also the call trace of its last trial.

    ``proxy``: the :class:`Proxy` (gRPC) or :class:`DaskScheduler` (Dask) the route goes
    through, else None.
    """
    name = f"traffic-{uuid.uuid4().hex[:8]}"
    wire = Tally()
    if backend == "dask":
        inner = proxy.storage()
        fill_study(inner, name, n_finished, n_running)
    else:
        fill_study(optuna.storages.RDBStorage(url), name, n_finished, n_running)
        if backend == "grpc":
            inner = proxy.client()
            count_grpc(inner, wire)
        else:
            rdb = optuna.storages.RDBStorage(url)
            count_sql(rdb.engine, wire)
            inner = optuna.storages.get_storage(rdb)  # Optuna's cache, as load_study(url) does
    storage = CountingStorage(inner, reply_bytes=wire if backend == "dask" else None)
    sampler = package_probes.without_chart(
        PhasedSampler, budget=1e12, seed=0, acquisition=acquisition, n_startup_trials=4
    )
    study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
    study.optimize(objective, n_trials=2)  # warm-up: the first read loads every trial
    storage.tally.reset()
    wire.reset()
    first = len(study.trials)
    study.optimize(objective, n_trials=n_trials - 1)
    storage.trace = []
    study.optimize(objective, n_trials=1)  # the last measured trial is also traced
    trace, storage.trace = storage.trace, None
    api = storage.tally
    suggest = [sampler.suggest_seconds[n] for n in range(first, first + n_trials)]
    n_api = sum(api.calls.values())
    n_suggest = sum(c for k, c in api.calls.items() if k.startswith("suggest:"))
    n_sampler = sum(c for k, c in api.calls.items() if not k.startswith("optuna:"))
    api_s = sum(api.seconds.values())
    row = {
        "api_calls": n_api / n_trials,
        "sampler_calls": n_sampler / n_trials,
        "suggest_calls": n_suggest / n_trials,
        "reads_all": sum(c for k, c in api.calls.items() if k.endswith(":get_all_trials"))
        / n_trials,
        "wire_calls": sum(wire.calls.values()) / n_trials,
        "wire_kb": sum(wire.bytes.values()) / n_trials / 1e3,
        "api_ms": 1e3 * api_s / n_trials,
        "api_cpu_ms": 1e3 * sum(api.cpu.values()) / n_trials,
        "ms_per_call": 1e3 * api_s / max(n_api, 1),
        "suggest_s": statistics.median(suggest),
    }
    detail = ", ".join(f"{k} {v / n_trials:.1f}" for k, v in sorted(api.calls.items()))
    if backend in ("postgresql", "grpc"):
        delete_study(url, name)
    return row, trace, detail


def section(
    args: argparse.Namespace, backends: list[tuple[str, str]], traces: dict[int, tuple[Trace, int]]
) -> list[str]:
    """The table of section 1; fills ``traces`` (r -> the PostgreSQL trace of a trial and its
    trial id) for the capacity section."""
    rows, details = [], []
    for backend, url in backends:
        route: Any = contextlib.nullcontext()
        if backend == "grpc":
            route = Proxy(url)
        elif backend == "dask":
            route = DaskScheduler()
        with route as proxy:
            for r in args.running:
                row, trace, detail = measure_traffic(
                    backend, url, args.finished, r, args.trials, args.acquisition, proxy
                )
                if backend == "postgresql":
                    traced = next(a for n, a, _ in trace if n == "set_trial_state_values")
                    traces[r] = (trace, traced[0])
                wire = {"grpc": "RPC", "dask": "calls"}.get(backend, "SQL")
                rows.append(
                    [
                        backend,
                        str(r),
                        f"{row['api_calls']:.1f}",
                        f"{row['sampler_calls']:.1f}",
                        f"{row['suggest_calls']:.1f}",
                        f"{row['reads_all']:.1f}",
                        f"{row['wire_calls']:.1f} {wire}",
                        f"{row['wire_kb']:.1f}" if backend in ("grpc", "dask") else "",
                        f"{row['api_ms']:.1f}",
                        f"{row['ms_per_call']:.2f}",
                        f"{row['api_cpu_ms']:.1f}",
                        f"{row['suggest_s']:.3f}",
                    ]
                )
                details.append(f"- {backend}, r={r}: {detail}")
                print(f"  {backend} r={r}: {row}", flush=True)
    return [
        f"## 1. One worker's storage traffic per trial ({args.finished} finished trials, "
        f"r running, acquisition {args.acquisition!r}, mean of {args.trials} trials)",
        "",
        *table(
            [
                "storage",
                "r running",
                "API calls / trial",
                "of them by the sampler",
                "in the suggestion",
                "get_all_trials / trial",
                "wire calls / trial",
                "reply kB / trial",
                "storage ms / trial",
                "ms / API call",
                "worker CPU ms / trial in them",
                "suggestion s (median)",
            ],
            rows,
        ),
        "",
        "API calls by phase (optuna: Optuna's own; sampler: before/after the trial; "
        "suggest: during the suggestion) and method, per trial:",
        "",
        *details,
        "",
    ]
