"""Running the benchmark methods: one (method, seed) run, and many in worker processes.

- :class:`Problem`: what a benchmark provides: ``suggest(trial) -> params`` (the only place the
  sampler is called), ``evaluate(params, previous) -> (value, cost)`` and an optional known
  ``cost_fn`` handed to ``CostRolloutSampler``.
- :func:`run_one`: one (method, seed) run until the budget is spent, as a :class:`Run`;
  :func:`execute`: many runs in worker processes (optionally each run in a fresh process, for
  wall-clock costs); :func:`order_tasks`, :func:`group_runs`, :func:`print_progress`.

Budget rule, the same for every method: a trial starts only while the summed cost of the
finished trials is below the budget (so the last trial may overrun it). Every objective
reports its cost with :func:`optuna_costbo.report_cost`, so all methods are charged the same
quantity. ``CostRolloutSampler`` is left to stop the study by itself (``study.optimize``
without ``n_trials``, with a large safety cap); Optuna's samplers are stopped by a callback.
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from collections.abc import Callable
from collections.abc import Sequence
import concurrent.futures
from dataclasses import dataclass
from dataclasses import field
import logging
import math
import multiprocessing
import sys
import time
import traceback
from typing import Any
from typing import Protocol
import warnings

import numpy as np
import optuna
from registry import METHODS
from registry import ROLLOUTS
from registry import CostFn

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


SAFETY_TRIALS = 1000  # cap for the self-stopping sampler; far above budget / min cost


class Problem(Protocol):
    """A benchmark problem as :func:`run_one` sees it."""

    cost_fn: CostFn | None  # known cost for CostRolloutSampler (None: it models log-cost)
    # Optional attribute ``costbo_options``: extra CostRolloutSampler keyword arguments
    # (e.g. n_startup_trials), the same for every CostRolloutSampler method.

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        """Ask the trial for all parameters (the sampler is called here only)."""
        ...

    def evaluate(
        self, params: dict[str, Any], previous: dict[str, Any] | None
    ) -> tuple[float, float]:
        """(value to minimize, cost); ``previous``: the previous trial's params or None."""
        ...


@dataclass
class Run:
    """One (method, seed) run: per-trial costs and values, timings and what was logged."""

    method: str
    seed: int
    costs: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)  # nan for a trial that did not complete
    suggest_s: list[float] = field(default_factory=list)
    run_s: float = 0.0
    not_complete: int = 0
    log_messages: list[str] = field(default_factory=list)
    py_warnings: list[str] = field(default_factory=list)
    error: str = ""
    params: list[dict[str, Any]] = field(default_factory=list)  # not written to the CSVs

    @property
    def cumcost(self) -> np.ndarray:
        return np.cumsum(np.asarray(self.costs, dtype=float))

    @property
    def best(self) -> np.ndarray:
        values = np.asarray(self.values, dtype=float)
        return (
            np.fmin.accumulate(np.where(np.isnan(values), np.inf, values))
            if len(values)
            else values
        )

    @property
    def final_best(self) -> float:
        best = self.best
        return float(best[-1]) if len(best) and np.isfinite(best[-1]) else math.nan


class _Collect(logging.Handler):
    """Keeps the messages of WARNING and above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def init_worker(import_torch: bool = True) -> None:
    """Quiet Optuna; one torch thread. ``import_torch=False``: only if torch is already
    imported (a fresh process per run would pay seconds for the import otherwise; torch
    reads OMP_NUM_THREADS=1 when it is imported later)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.logging.disable_default_handler()
    if not import_torch and "torch" not in sys.modules:
        return
    try:
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    except (ImportError, RuntimeError):
        pass


def run_one(
    method: str,
    seed: int,
    budget: float,
    problem: Problem | Callable[[], Problem],
    safety_trials: int = SAFETY_TRIALS,
) -> Run:
    """Run ``method`` with ``seed`` until the budget is spent (never raises: see ``error``).

    ``problem`` is a :class:`Problem` or a zero-argument factory of one (built in the worker,
    so that only the factory is pickled).
    """
    run = Run(method, seed)
    handler = _Collect()
    loggers = [logging.getLogger("optuna.costbo"), logging.getLogger("optuna")]
    for logger in loggers:
        logger.addHandler(handler)
    propagate = loggers[0].propagate
    loggers[0].propagate = False  # collected here, reported in the Markdown file
    spent = 0.0

    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            prob: Problem = problem if hasattr(problem, "evaluate") else problem()  # type: ignore[operator]
            previous: list[dict[str, Any] | None] = [None]

            def objective(trial: optuna.Trial) -> float:
                begin = time.perf_counter()
                params = prob.suggest(trial)
                run.suggest_s.append(time.perf_counter() - begin)
                # NOTE: the previous trial moves on even if this one fails, as in
                # CostRolloutSampler (a failed trial's configuration was still set up).
                before, previous[0] = previous[0], dict(params)
                value, cost = prob.evaluate(params, before)
                report_cost(trial, cost)
                return value

            def stop_at_budget(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
                nonlocal spent
                spent += float(trial.user_attrs.get("cost", 0.0))
                if spent >= budget:
                    study.stop()

            options = dict(getattr(prob, "costbo_options", None) or {})
            sampler = METHODS[method].factory(budget, seed, prob.cost_fn, options)
            study = optuna.create_study(sampler=sampler)
            if isinstance(sampler, CostRolloutSampler):
                study.optimize(objective, n_trials=safety_trials)
            else:
                study.optimize(objective, n_trials=safety_trials, callbacks=[stop_at_budget])
        for trial in study.get_trials(deepcopy=False):
            run.costs.append(float(trial.user_attrs.get("cost", 0.0)))
            complete = trial.state == optuna.trial.TrialState.COMPLETE
            run.values.append(float(trial.value) if complete else math.nan)
            run.not_complete += not complete
            run.params.append(dict(trial.params))
        run.py_warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
    except Exception:
        run.error = traceback.format_exc(limit=4).strip().splitlines()[-1]
    finally:
        run.run_s = time.perf_counter() - start
        run.log_messages = handler.messages
        for logger in loggers:
            logger.removeHandler(handler)
        loggers[0].propagate = propagate
    return run


def order_tasks(
    methods: Sequence[str], seeds: Sequence[int], interleave: bool
) -> list[tuple[str, int]]:
    """(method, seed) pairs. ``interleave``: seed by seed, every method within a seed (slow
    drifts of the machine's speed then hit all methods alike: for wall-clock costs). Else
    the slowest methods (rollouts) first, so that parallel workers finish together."""
    if interleave:
        return [(m, s) for s in seeds for m in methods]
    tasks = [(m, s) for m in methods for s in seeds]
    tasks.sort(key=lambda t: (-ROLLOUTS.index(t[0]) if t[0] in ROLLOUTS else 1, t[1]))
    return tasks


def execute(
    tasks: Sequence[tuple[str, int]],
    budget: float,
    problem: Problem | Callable[[], Problem],
    *,
    jobs: int,
    fresh_process: bool = False,
    preload: Sequence[str] = (),
    safety_trials: int = SAFETY_TRIALS,
    on_done: Callable[[int, int, float, Run], None] | None = None,
) -> tuple[list[Run], float]:
    """Run every (method, seed) in ``jobs`` worker processes (``jobs <= 0``: in this
    process); the runs and the wall time.

    ``fresh_process``: each run in a new process (forkserver, one task per child), so that no
    run inherits another's caches, memory or JIT state: for benchmarks whose costs are
    measured wall-clock times. ``preload``: modules the fork server imports once (every
    child starts with them imported, outside the timed runs).
    """
    if jobs <= 0:  # in this process, one run after the other (debugging, tests)
        results: list[Run] = []
        start = time.perf_counter()
        for k, (m, s) in enumerate(tasks, 1):
            results.append(run_one(m, s, budget, problem, safety_trials))
            if on_done is not None:
                on_done(k, len(tasks), time.perf_counter() - start, results[-1])
        return results, time.perf_counter() - start
    if fresh_process:
        ctx = multiprocessing.get_context("forkserver")
        modules = ["__main__", "numpy", "scipy", "optuna", "optuna_costbo", *preload]
        ctx.set_forkserver_preload(modules)
        pool = concurrent.futures.ProcessPoolExecutor(
            jobs,
            mp_context=ctx,
            initializer=init_worker,
            initargs=(False,),
            max_tasks_per_child=1,
        )
    else:
        pool = concurrent.futures.ProcessPoolExecutor(jobs, initializer=init_worker)
    results = []
    start = time.perf_counter()
    with pool:
        futures = [pool.submit(run_one, m, s, budget, problem, safety_trials) for m, s in tasks]
        for k, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            r = fut.result()
            results.append(r)
            if on_done is not None:
                on_done(k, len(tasks), time.perf_counter() - start, r)
    return results, time.perf_counter() - start


def print_progress(k: int, n: int, elapsed: float, r: Run) -> None:
    flag = f" ERROR {r.error}" if r.error else ""
    flag += f" ({len(r.log_messages)} log warnings)" if r.log_messages else ""
    print(
        f"[{k}/{n} {elapsed:6.0f}s] "
        f"{METHODS[r.method].label:<12} seed {r.seed:<3} trials {len(r.costs):<3} "
        f"best {r.final_best:8.4f}  {r.run_s:6.1f}s{flag}",
        flush=True,
    )


def group_runs(results: Sequence[Run]) -> dict[str, list[Run]]:
    """method -> runs sorted by seed, methods in registry order."""
    runs: dict[str, list[Run]] = {}
    for m in METHODS:
        chosen = sorted((r for r in results if r.method == m), key=lambda r: r.seed)
        if chosen:
            runs[m] = chosen
    return runs
