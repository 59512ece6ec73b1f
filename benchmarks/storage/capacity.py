"""2. What one storage server carries.

``C`` client processes replay, as fast as they can, the storage calls of one measured trial
(new trial, its reads and writes, no sampler computation) against PostgreSQL, directly and
through one gRPC proxy process, with ``r`` RUNNING trials in the study. Reported: trials per
second, and the server CPU seconds per trial (PostgreSQL: the cluster's processes, read from
``/proc``; the proxy: its process), which say how many trials per second one server core
carries whatever the clients' machine.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import contextlib
import multiprocessing
import os
from pathlib import Path
import time
from typing import Any
import uuid
import warnings

import optuna
from optuna.storages import BaseStorage

from benchmarks.storage.studies import Proxy
from benchmarks.storage.studies import delete_study
from benchmarks.storage.studies import fill_study
from benchmarks.storage.studies import table
from benchmarks.storage.traffic import Trace
from benchmarks.storage.traffic import measure_traffic


_TRIAL_ARG_METHODS = ("set_trial_", "get_trial", "record_heartbeat")


def replay_trial(
    storage: BaseStorage,
    study_id: int,
    trace: Sequence[tuple[str, tuple[Any, ...], dict[str, Any]]],
    traced_trial_id: int,
) -> None:
    """Make the storage calls of a traced trial again, for a new trial."""
    new_id: int | None = None
    for name, args, kwargs in trace:
        args = list(args)
        if name == "create_new_trial":
            new_id = storage.create_new_trial(study_id)
            continue
        if name == "get_trial_id_from_study_id_trial_number":
            continue  # Optuna's own look-up of the trial it just created (cached)
        if args and name.startswith(_TRIAL_ARG_METHODS) and args[0] == traced_trial_id:
            args[0] = new_id
        elif args and name not in ("get_all_studies",) and not name.startswith("_"):
            if name.startswith(("get_study", "set_study", "get_all_trials", "get_best")):
                args[0] = study_id
        getattr(storage, name)(*args, **kwargs)


def _client(
    kind: str,
    target: Any,
    name: str,
    trace: Any,
    traced_trial_id: int,
    seconds: float,
    ready: Any,
    go: Any,
    done: Any,
    results: Any,
) -> None:
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if kind == "grpc":
        storage: BaseStorage = optuna.storages.GrpcStorageProxy(host="127.0.0.1", port=target)
    else:
        storage = optuna.storages.get_storage(target)
    study_id = storage.get_study_id_from_name(name)
    storage.get_all_trials(study_id, deepcopy=False)  # connect and fill the cache first
    ready.release()
    go.wait()
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        replay_trial(storage, study_id, trace, traced_trial_id)
        n += 1
    results.put(n)
    done.wait()


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds of these processes (Linux ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def postgres_pids(url: str) -> list[int]:
    """The processes of the PostgreSQL cluster behind ``url``: the postmaster and its children
    (found from a backend's parent; the server must run on this machine)."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            backend = int(conn.execute(sqlalchemy.text("SELECT pg_backend_pid()")).scalar_one())
            # (read while the connection is open: its backend exits with it)
            stat = Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []
    finally:
        engine.dispose()
    postmaster = int(stat[1])
    pids = [postmaster]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == postmaster:
                    pids.append(int(entry.name))
    return pids


def measure_capacity(
    kind: str,
    url: str,
    proxy: Proxy | None,
    name: str,
    trace: Any,
    traced_trial_id: int,
    n_clients: int,
    seconds: float,
) -> dict[str, float]:
    ctx = multiprocessing.get_context("spawn")
    ready, go, done, results = ctx.Semaphore(0), ctx.Event(), ctx.Event(), ctx.Queue()
    target = proxy.port if proxy is not None else url
    procs = [
        ctx.Process(
            target=_client,
            args=(kind, target, name, trace, traced_trial_id, seconds, ready, go, done, results),
        )
        for _ in range(n_clients)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        assert ready.acquire(timeout=120.0), "a replay client did not start"
    pg = postgres_pids(url)
    proxy_pids = [proxy.process.pid] if proxy is not None and proxy.process.pid else []
    pg0, px0, t0 = cpu_seconds(pg), cpu_seconds(proxy_pids), time.monotonic()
    go.set()
    n = sum(results.get(timeout=seconds + 120.0) for _ in procs)
    wall = time.monotonic() - t0
    pg1, px1 = cpu_seconds(pg), cpu_seconds(proxy_pids)
    done.set()
    for p in procs:
        p.join(30.0)
    return {
        "trials_per_s": n / wall,
        "pg_cpu_ms": 1e3 * (pg1 - pg0) / max(n, 1),
        "proxy_cpu_ms": 1e3 * (px1 - px0) / max(n, 1) if proxy is not None else float("nan"),
    }


def section(args: argparse.Namespace, traces: dict[int, tuple[Trace, int]]) -> list[str]:
    """The table of section 2 (needs ``args.postgres_url``)."""
    url = args.postgres_url
    rows = []
    for r in args.capacity_running:
        if r not in traces:
            _, trace, _ = measure_traffic(
                "postgresql", url, args.finished, r, 2, args.acquisition, None
            )
            traced = next(a for n, a, _ in trace if n == "set_trial_state_values")
            traces[r] = (trace, traced[0])
        trace, traced_id = traces[r]
        for kind in ("postgresql", "grpc"):
            name = f"capacity-{uuid.uuid4().hex[:8]}"
            fill_study(optuna.storages.RDBStorage(url), name, args.finished, r)
            with Proxy(url) if kind == "grpc" else contextlib.nullcontext() as proxy:
                for c in args.clients:
                    m = measure_capacity(kind, url, proxy, name, trace, traced_id, c, args.seconds)
                    print(f"  {kind} r={r} clients={c}: {m}", flush=True)
                    rows.append(
                        [
                            kind,
                            str(r),
                            str(c),
                            f"{m['trials_per_s']:.1f}",
                            f"{m['pg_cpu_ms']:.2f}",
                            "" if kind == "postgresql" else f"{m['proxy_cpu_ms']:.2f}",
                        ]
                    )
            delete_study(url, name)
    return [
        "## 2. Storage calls of one trial replayed by C clients (no sampler work)",
        "",
        *table(
            [
                "route",
                "r running",
                "C clients",
                "trials / s",
                "PostgreSQL CPU ms / trial",
                "proxy CPU ms / trial",
            ],
            rows,
        ),
        "",
    ]
