"""Storage traffic of one worker, what one storage server carries, and suggestion time.

Three tables (Markdown, printed; ``--out FILE`` also writes them), the numbers behind the
capacity section of ``docs/parallel.md``:

1. **traffic**: one worker runs ``--trials`` trials of a cheap objective (3 floats, a reported
   cost) with ``CostRolloutSampler`` on a study that already holds ``--finished`` finished
   trials and ``r`` trials that stay RUNNING (other workers' trials, as ``r`` of ``W`` workers
   would keep running), on SQLite, PostgreSQL, Optuna's gRPC proxy in front of PostgreSQL
   (a proxy process on 127.0.0.1) and optuna-integration's DaskStorage (a Dask scheduler
   process on 127.0.0.1, the study in its memory; ``--no-dask`` to skip). The storage the study
   sees is wrapped in a counting proxy: storage API calls per trial (all, by the sampler, and
   those made while it suggests), their wall time and the worker's CPU time in them, and below
   them the wire: SQL statements (SQLAlchemy events on the engine), or RPCs and their protobuf
   bytes (a gRPC client interceptor), or for Dask the pickled size of the replies. Suggestion
   time: the sampler's ``infer_relative_search_space``, ``sample_relative`` and
   ``sample_independent`` of one trial.
2. **capacity**: ``C`` client processes replay, as fast as they can, the storage calls of one
   measured trial (new trial, its reads and writes, no sampler computation) against
   PostgreSQL, directly and through one gRPC proxy process, with ``r`` RUNNING trials in the
   study. Reported: trials per second, and the server CPU seconds per trial (PostgreSQL: the
   cluster's processes, read from ``/proc``; the proxy: its process), which say how many trials
   per second one server core carries whatever the clients' machine.
3. **suggest**: seconds of one suggestion against ``n`` finished and ``r`` running trials
   (InMemoryStorage; the running trials are pending points the sampler conditions on).
4. **reads**: the sampler's storage time, ledger time and the rest per trial, on studies
   pre-filled with ``--reads-trials`` finished trials (1k and 10k), SQLite and PostgreSQL,
   ``--reads-workers`` worker processes; the model replaced by a uniform point (its time is
   measured apart, on a ``--model-trials`` study). Run on the package of git
   ``--baseline-ref`` (old, extracted with ``git archive``) and on this checkout (new) side
   by side, each worker a subprocess with that package first on its path.

PostgreSQL as ``.ci/run`` sets it up (Debian's server, user and password ``costbo``)::

    python benchmarks/storage_traffic.py \\
        --postgres-url postgresql+psycopg2://costbo:costbo@127.0.0.1/costbo_test

Without ``--postgres-url`` (or ``COSTBO_TEST_POSTGRES_URL``) only SQLite, Dask and the
suggestion times are measured. Wall times depend on the machine's load (the header line gives
the load average); CPU times much less. The capacity loop sends traffic only to the given
server and a proxy on 127.0.0.1, and stops after ``--seconds`` per point.
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
import copy
import datetime
import json
import multiprocessing
from pathlib import Path
import pickle
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any
import uuid
import warnings

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial

import optuna_costbo
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

DIM = 3
DISTRIBUTIONS = {f"x{i}": FloatDistribution(-1.0, 1.0) for i in range(DIM)}
# The attrs a finished trial of CostRolloutSampler carries (sizes as in a real study).
FINISHED_SYSTEM_ATTRS = {
    "costbo:sampler_seconds": 0.123456789,
    "costbo:cost_source": "reported",
    "costbo:proposal_checked": True,
}


def objective_value(x: np.ndarray) -> float:
    return float(np.sum((x - 0.3) ** 2))


def objective_cost(x: np.ndarray) -> float:
    return float(np.exp(0.5 * np.mean(x)))


def objective(trial: optuna.Trial) -> float:
    x = np.array([trial.suggest_float(f"x{i}", -1.0, 1.0) for i in range(DIM)])
    report_cost(trial, objective_cost(x))
    return objective_value(x)


# -- counting ----------------------------------------------------------------------------------


class Tally:
    """Calls, seconds and bytes by key; thread-safe."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.cpu: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, key: str, seconds: float, nbytes: int = 0, cpu: float = 0.0) -> None:
        with self._lock:
            self.calls[key] += 1
            self.seconds[key] += seconds
            self.bytes[key] += nbytes
            self.cpu[key] += cpu

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.seconds.clear()
            self.bytes.clear()
            self.cpu.clear()


_phase = threading.local()


def current_phase() -> str:
    return getattr(_phase, "name", "optuna")


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    before = current_phase()
    _phase.name = name
    try:
        yield
    finally:
        _phase.name = before


class CountingStorage(BaseStorage):
    """Passes every storage call to ``inner``; counts it (by phase and method) and times it.

    With ``trace`` set, also records the calls (name, args, kwargs) for the replay loop.
    """

    def __init__(self, inner: BaseStorage, reply_bytes: Tally | None = None) -> None:
        self._inner = inner
        self.tally = Tally()
        self.trace: list[tuple[str, tuple[Any, ...], dict[str, Any]]] | None = None
        self._reply_bytes = reply_bytes  # if given: the pickled size of every reply

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.trace is not None:
            self.trace.append((name, copy.deepcopy(args), copy.deepcopy(kwargs)))
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            out = getattr(self._inner, name)(*args, **kwargs)
            if self._reply_bytes is not None:
                self._reply_bytes.add(name, 0.0, len(pickle.dumps(out)))
            return out
        finally:
            self.tally.add(
                f"{current_phase()}:{name}",
                time.perf_counter() - start,
                cpu=time.thread_time() - cpu,
            )


def _delegate(name: str) -> Callable[..., Any]:
    def method(self: CountingStorage, *args: Any, **kwargs: Any) -> Any:
        return self._call(name, *args, **kwargs)

    method.__name__ = name
    return method


for _name in dir(BaseStorage):
    # (remove_session is a clean-up once per optimize call, not per trial: not counted)
    if not _name.startswith("_") and _name not in ("check_trial_is_updatable", "remove_session"):
        setattr(CountingStorage, _name, _delegate(_name))
CountingStorage.__abstractmethods__ = frozenset()


class PhasedSampler(CostRolloutSampler):
    """CostRolloutSampler that marks the storage calls it makes, and times its suggestions."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suggest_seconds: dict[int, float] = {}

    def _timed(self, trial: FrozenTrial, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            with phase("suggest"):
                return fn()
        finally:
            n = trial.number
            self.suggest_seconds[n] = self.suggest_seconds.get(n, 0.0) + (
                time.perf_counter() - start
            )

    def infer_relative_search_space(self, study: Any, trial: Any) -> Any:
        return self._timed(
            trial, lambda: super(PhasedSampler, self).infer_relative_search_space(study, trial)
        )

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> Any:
        return self._timed(
            trial, lambda: super(PhasedSampler, self).sample_relative(study, trial, search_space)
        )

    def sample_independent(self, study: Any, trial: Any, name: str, dist: Any) -> Any:
        return self._timed(
            trial, lambda: super(PhasedSampler, self).sample_independent(study, trial, name, dist)
        )

    def before_trial(self, study: Any, trial: Any) -> None:
        with phase("sampler"):
            super().before_trial(study, trial)

    def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
        with phase("sampler"):
            super().after_trial(study, trial, state, values)


def count_sql(engine: Any, tally: Tally) -> None:
    """Count and time every SQL statement ``engine`` sends."""
    import sqlalchemy

    starts: dict[int, float] = {}

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        starts[id(cursor)] = time.perf_counter()

    def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        start = starts.pop(id(cursor), None)
        if start is not None:
            tally.add(statement.split(None, 1)[0].upper(), time.perf_counter() - start)

    sqlalchemy.event.listen(engine, "before_cursor_execute", before)
    sqlalchemy.event.listen(engine, "after_cursor_execute", after)


def count_grpc(proxy: Any, tally: Tally) -> None:
    """Route ``proxy``'s RPCs through an interceptor that counts, times and sizes them."""
    import grpc
    from optuna.storages._grpc import client as grpc_client
    from optuna.storages._grpc.auto_generated import api_pb2_grpc

    class Interceptor(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
        def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            start = time.perf_counter()
            outcome = continuation(details, request)
            response = outcome.result()
            nbytes = request.ByteSize() + response.ByteSize()
            tally.add(details.method.rsplit("/", 1)[-1], time.perf_counter() - start, nbytes)
            return outcome

    channel = grpc.intercept_channel(proxy._channel, Interceptor())
    proxy._stub = api_pb2_grpc.StorageServiceStub(channel)
    proxy._cache = grpc_client.GrpcClientCache(proxy._stub)


# -- studies -----------------------------------------------------------------------------------


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
                system_attrs={**FINISHED_SYSTEM_ATTRS, "costbo:proposed_params": params},
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
        storage.set_trial_system_attr(trial_id, "costbo:proposed_params", params)
        storage.set_trial_system_attr(trial_id, "costbo:proposal_checked", True)


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


# -- 1. traffic --------------------------------------------------------------------------------


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
    sampler = PhasedSampler(
        budget=1e12, seed=0, acquisition=acquisition, n_startup_trials=4, dashboard_chart=False
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


# -- 2. capacity -------------------------------------------------------------------------------

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


# -- 3. suggestion time ------------------------------------------------------------------------


def measure_suggest(n_finished: int, n_running: int, acquisition: str, repeats: int) -> float:
    storage = optuna.storages.InMemoryStorage()
    fill_study(storage, "suggest", n_finished, n_running)
    sampler = CostRolloutSampler(
        budget=1e12, seed=0, acquisition=acquisition, n_startup_trials=4, dashboard_chart=False
    )
    study = optuna.load_study(study_name="suggest", storage=storage, sampler=sampler)
    times = []
    for _ in range(repeats):
        trial = study.ask()
        start = time.perf_counter()
        x = np.array([trial.suggest_float(f"x{i}", -1.0, 1.0) for i in range(DIM)])
        times.append(time.perf_counter() - start)
        report_cost(trial, objective_cost(x))
        study.tell(trial, objective_value(x))
    return statistics.median(times)


# -- 4. reads of the study per suggestion, old path against new -------------------------------

# Functions of optuna_costbo.budget that compute the ledger from trials already read (whichever
# of them the code being measured has); only the outermost call is timed.
LEDGER_FUNCTIONS = ("compute_ledger", "charge_dead_trials", "charge_and_sum")
_depth = threading.local()


def _timed_ledger(fn: Callable[..., Any], tally: Tally) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        outer = getattr(_depth, "n", 0) == 0
        _depth.n = getattr(_depth, "n", 0) + 1
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _depth.n -= 1
            if outer:
                tally.add(f"{current_phase()}:ledger", time.perf_counter() - start)

    return wrapper


def _stub_propose(request: Any, acquisition: Any, rng: np.random.Generator, **kwargs: Any) -> Any:
    """A proposal without a model: a uniform point (the storage and the ledger are measured)."""
    from optuna_costbo._numerics.policy import Proposal

    D = request.X.shape[1]
    return Proposal(z=rng.uniform(size=D), value=0.0, objective_model=None, cost_model=None)


def reads_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One worker process of the reads benchmark (run with the path under test importable).

    Runs one warm-up trial (its first read loads every trial into Optuna's cache), waits for
    ``spec["go_at"]``, then ``spec["n_trials"]`` trials; returns per-trial means.
    """
    import optuna_costbo._ledger.ledger as budget_mod
    import optuna_costbo._sampler.suggest as sampler_mod

    ledger = Tally()
    for fname in LEDGER_FUNCTIONS:
        if hasattr(budget_mod, fname):
            setattr(budget_mod, fname, _timed_ledger(getattr(budget_mod, fname), ledger))
    model = Tally()
    real_propose = sampler_mod.propose
    inner = _stub_propose if spec["stub_model"] else real_propose

    def timed_propose(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            model.add("propose", time.perf_counter() - start)

    sampler_mod.propose = timed_propose  # type: ignore[assignment]
    hooks = Tally()

    class Sampler(PhasedSampler):
        def _timed(self, trial: FrozenTrial, fn: Callable[[], Any]) -> Any:
            start = time.perf_counter()
            try:
                return super()._timed(trial, fn)
            finally:
                hooks.add("suggest", time.perf_counter() - start)

        def before_trial(self, study: Any, trial: Any) -> None:
            start = time.perf_counter()
            try:
                super().before_trial(study, trial)
            finally:
                hooks.add("before", time.perf_counter() - start)

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            start = time.perf_counter()
            try:
                super().after_trial(study, trial, state, values)
            finally:
                hooks.add("after", time.perf_counter() - start)

    storage = CountingStorage(optuna.storages.get_storage(spec["url"]))
    sampler = Sampler(
        budget=1e12,
        seed=spec["seed"],
        acquisition=spec["acquisition"],
        n_startup_trials=4,
        dashboard_chart=False,
    )
    study = optuna.load_study(study_name=spec["name"], storage=storage, sampler=sampler)
    study.optimize(objective, n_trials=1)  # warm-up
    for t in (storage.tally, ledger, model, hooks):
        t.reset()
    barrier = Path(spec["barrier"])
    (barrier / f"ready-{spec['seed']}").touch()
    while not (barrier / "go").exists():
        time.sleep(0.05)
    n = spec["n_trials"]
    study.optimize(objective, n_trials=n)
    api = storage.tally

    def ms(tally: Tally, prefix: str = "") -> float:
        return 1e3 * sum(s for k, s in tally.seconds.items() if k.startswith(prefix)) / n

    sampler_storage = ms(api, "suggest:") + ms(api, "sampler:")
    return {
        "reads_all": sum(c for k, c in api.calls.items() if k.endswith(":get_all_trials")) / n,
        "optuna_reads_all": api.calls["optuna:get_all_trials"] / n,
        "sampler_calls": sum(c for k, c in api.calls.items() if not k.startswith("optuna:")) / n,
        "storage_ms": sampler_storage,
        "ledger_ms": ms(ledger),
        "model_ms": ms(model),
        "sampler_ms": ms(hooks),
    }


def _run_workers(
    path: Path, spec: dict[str, Any], n_workers: int, timeout: float
) -> list[dict[str, Any]]:
    """``n_workers`` processes running :func:`reads_worker` with ``path`` first on sys.path."""
    env = {**os.environ, "PYTHONPATH": str(path)}
    barrier = Path(tempfile.mkdtemp(prefix="reads-barrier-"))
    procs = []
    for i in range(n_workers):
        worker_spec = {**spec, "seed": i, "barrier": str(barrier)}
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, "--reads-worker", json.dumps(worker_spec)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    # Every worker has done its warm-up (its first read loads the whole study): go together.
    deadline = time.monotonic() + timeout
    while len(list(barrier.glob("ready-*"))) < n_workers:
        if time.monotonic() > deadline or any(p.poll() not in (None, 0) for p in procs):
            for p in procs:
                p.kill()
            raise RuntimeError("a reads worker did not get ready")
        time.sleep(0.1)
    (barrier / "go").touch()
    out = []
    for p in procs:
        stdout, _ = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"a reads worker failed ({p.returncode})")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def export_baseline(ref: str, into: Path) -> Path:
    """The package as of git ``ref``, extracted under ``into`` (the old path)."""
    root = Path(__file__).resolve().parent.parent
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", ref, "optuna_costbo"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


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


def measure_model_time(n_finished: int, acquisition: str, repeats: int) -> float:
    """Median seconds of the sampler's model and acquisition (``propose``) on ``n_finished``
    finished trials, one process, nothing else running on its behalf."""
    import optuna_costbo.sampler as sampler_mod

    seconds: list[float] = []
    real = sampler_mod.propose

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - start)

    sampler_mod.propose = timed  # type: ignore[assignment]
    try:
        storage = optuna.storages.InMemoryStorage()
        fill_study(storage, "model", n_finished, 0)
        sampler = CostRolloutSampler(
            budget=1e12, seed=0, acquisition=acquisition, n_startup_trials=4, dashboard_chart=False
        )
        study = optuna.load_study(study_name="model", storage=storage, sampler=sampler)
        study.optimize(objective, n_trials=repeats)
    finally:
        sampler_mod.propose = real  # type: ignore[assignment]
    return statistics.median(seconds)


def measure_reads(args: argparse.Namespace, tmp: Path) -> list[str]:
    """Section 4: per trial, the sampler's storage time, ledger time and the rest, on the code
    of ``--baseline-ref`` (old) and on this checkout (new), in one run."""
    here = Path(__file__).resolve().parent.parent
    old = export_baseline(args.baseline_ref, tmp / "baseline")
    model_s = {}
    for acquisition in ("ei", "rollout"):
        model_s[acquisition] = measure_model_time(
            args.model_trials, acquisition, args.model_repeats
        )
        print(f"  model n={args.model_trials} {acquisition}: {model_s[acquisition]:.2f} s")
    backends = [("SQLite", f"sqlite:///{tmp / 'reads.db'}")]
    if args.postgres_url:
        backends.append(("PostgreSQL", args.postgres_url))
    rows = []
    for label, url in backends:
        for n in args.reads_trials:
            name = f"reads-{uuid.uuid4().hex[:8]}"
            start = time.perf_counter()
            fill_study_fast(url, name, n)
            print(f"  {label} n={n}: filled in {time.perf_counter() - start:.0f} s", flush=True)
            for w in args.reads_workers:
                spec = {
                    "url": url,
                    "name": name,
                    "n_trials": args.reads_per_worker,
                    "acquisition": args.acquisition,
                    "stub_model": True,
                }
                result = {}
                for path_name, path in (("old", old), ("new", here)):
                    runs = _run_workers(path, spec, w, timeout=3600.0)
                    result[path_name] = {k: statistics.mean(r[k] for r in runs) for k in runs[0]}
                    print(f"  {label} n={n} W={w} {path_name}: {result[path_name]}", flush=True)
                o, v = result["old"], result["new"]
                sl_old = o["storage_ms"] + o["ledger_ms"]
                sl_new = v["storage_ms"] + v["ledger_ms"]

                def share(r: dict[str, float], acquisition: str) -> str:
                    sl = r["storage_ms"] + r["ledger_ms"]
                    rest = r["sampler_ms"] - r["model_ms"]  # the sampler without the model
                    return f"{100 * sl / (rest + 1e3 * model_s[acquisition]):.1f}"

                rows.append(
                    [
                        f"{n:,}",
                        label,
                        str(w),
                        f"{o['reads_all']:.0f} -> {v['reads_all']:.0f}",
                        f"{o['storage_ms']:.1f} -> {v['storage_ms']:.1f}",
                        f"{o['ledger_ms']:.1f} -> {v['ledger_ms']:.2f}",
                        f"{sl_old:.1f} -> {sl_new:.1f}",
                        f"{sl_old / max(sl_new, 1e-9):.1f}x",
                        f"{o['sampler_ms'] - o['model_ms']:.0f} -> "
                        f"{v['sampler_ms'] - v['model_ms']:.0f}",
                        f"{share(o, 'ei')} -> {share(v, 'ei')}",
                        f"{share(o, 'rollout')} -> {share(v, 'rollout')}",
                    ]
                )
            if label == "PostgreSQL":
                delete_study(url, name)
    return [
        f"## 4. The sampler's reads per trial, old ({args.baseline_ref}) -> new (this checkout)",
        "",
        f"A study pre-filled with n finished trials (``add_trials``); W worker processes each "
        f"run {args.reads_per_worker} trials together after a warm-up trial, with the model "
        "replaced by a uniform point, so that storage and ledger are measured, not the GP. "
        "Per trial, means over the workers: reads of all trials (``get_all_trials``, Optuna's "
        "own included), the sampler's storage calls (all of them, reads and writes, in its "
        "hooks), the ledger computed from trials already read (and dead trials settled), "
        "the sampler's whole time without the model, and the share of storage + ledger in the "
        f"sampler's time with the model of a {args.model_trials}-trial study (measured here: "
        f'``"ei"`` {model_s["ei"]:.2f} s, ``"rollout"`` {model_s["rollout"]:.2f} s per '
        "suggestion, one process, InMemoryStorage).",
        "",
        *table(
            [
                "n trials",
                "storage",
                "W workers",
                "get_all_trials / trial",
                "sampler's storage ms / trial",
                "ledger ms / trial",
                "storage + ledger ms",
                "ratio",
                "sampler ms without model",
                f"share % (ei, {args.model_trials}-trial model)",
                f"share % (rollout, {args.model_trials}-trial model)",
            ],
            rows,
        ),
        "",
    ]


# -- main --------------------------------------------------------------------------------------


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres-url", default=os.environ.get("COSTBO_TEST_POSTGRES_URL"))
    parser.add_argument("--finished", type=int, default=100, help="finished trials in the study")
    parser.add_argument("--running", type=int, nargs="+", default=[0, 16, 128])
    parser.add_argument("--trials", type=int, default=8, help="measured trials per point")
    parser.add_argument("--acquisition", default="rollout")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--capacity-running", type=int, nargs="+", default=[16, 128, 512])
    parser.add_argument("--seconds", type=float, default=8.0, help="per capacity point")
    parser.add_argument("--suggest-finished", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--suggest-running", type=int, nargs="+", default=[0, 100, 1000])
    parser.add_argument("--suggest-repeats", type=int, default=3)
    parser.add_argument("--reads-trials", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--reads-workers", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--reads-per-worker", type=int, default=6, help="measured trials")
    parser.add_argument("--baseline-ref", default="main", help="git ref of the old path")
    parser.add_argument("--model-trials", type=int, default=1000)
    parser.add_argument("--model-repeats", type=int, default=3)
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["traffic", "capacity", "suggest", "reads"]
    )
    parser.add_argument("--reads-worker", help=argparse.SUPPRESS)
    parser.add_argument("--no-dask", action="store_true", help="skip the DaskStorage route")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    args = parser.parse_args()
    if args.reads_worker:
        print(json.dumps(reads_worker(json.loads(args.reads_worker))), flush=True)
        return

    t_start = time.monotonic()
    lines: list[str] = []

    def emit(new: list[str]) -> None:
        print("\n".join(new), flush=True)
        lines.extend(new)

    emit(
        [
            "# Storage traffic and suggestion time",
            "",
            f"{datetime.date.today()}: {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f} at the start; optuna {optuna.__version__}, "
            f"optuna_costbo {optuna_costbo.__version__}, Python {platform.python_version()}.",
            "",
        ]
    )
    tmp = Path(tempfile.mkdtemp(prefix="storage_traffic-"))
    backends = [("sqlite", f"sqlite:///{tmp / 'traffic.db'}")]
    if args.postgres_url:
        backends += [("postgresql", args.postgres_url), ("grpc", args.postgres_url)]
    if not args.no_dask:
        backends.append(("dask", ""))
    if not args.postgres_url:
        emit(["(no --postgres-url: PostgreSQL, the gRPC proxy and the capacity loop skipped)", ""])
    traces: dict[int, tuple[Any, int]] = {}

    if "traffic" not in args.skip:
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
        emit(
            [
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
        )

    if "capacity" not in args.skip and args.postgres_url:
        url = args.postgres_url
        rows = []
        for r in args.capacity_running:
            if r not in traces:
                row, trace, _ = measure_traffic(
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
                        m = measure_capacity(
                            kind, url, proxy, name, trace, traced_id, c, args.seconds
                        )
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
        emit(
            [
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
        )

    if "suggest" not in args.skip:
        rows = []
        for n in args.suggest_finished:
            for r in args.suggest_running:
                cells = [str(n), str(r)]
                for acquisition in ("ei", "rollout"):
                    s = measure_suggest(n, r, acquisition, args.suggest_repeats)
                    print(f"  suggest n={n} r={r} {acquisition}: {s:.3f} s", flush=True)
                    cells.append(f"{s:.3f}")
                rows.append(cells)
        emit(
            [
                "## 3. Seconds of one suggestion (median of "
                f"{args.suggest_repeats}, {DIM} parameters, InMemoryStorage)",
                "",
                *table(["n finished", "r running", "ei", "rollout"], rows),
                "",
            ]
        )

    if "reads" not in args.skip:
        emit(measure_reads(args, tmp))

    emit([f"Total {(time.monotonic() - t_start) / 60:.1f} min."])
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
