"""Instruments of the storage experiments: counters of storage API calls (by phase: Optuna's
own, the sampler's hooks, its suggestion), of SQL statements and of gRPC messages, and a
``CostRolloutSampler`` that marks its storage calls and times its suggestions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import copy
import pickle
import threading
import time
from typing import Any

from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial

from optuna_costbo import CostRolloutSampler


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
