"""Running the methods on the problems: one (problem, method, seed) run, and many.

- :func:`run_one`: one run until the budget is spent, as a :class:`Run` (never raises);
- :func:`execute`: many runs, in this process or in worker processes (optionally each run in
  a fresh process, for wall-clock costs); :func:`run_tasks`: the same, with every finished
  run written to the cache (``cache.write_run``) and, with ``resume``, only the runs the
  cache lacks; :func:`order_tasks`.

Budget rule, the same for every method. With ``clock="reported"`` a trial starts only while
the finished trials have spent less than the budget (so the last trial may overrun it); every
objective reports its cost with ``report_cost``, so all methods are charged the same
quantity; ``CostRolloutSampler`` stops the study by itself and every study also gets a
callback that stops it at the budget (a no-op for ours unless it failed to stop); the BoTorch
driver checks before each proposal. With ``clock="wall"`` the budget is the wall clock of the
whole ``study.optimize`` (sampler, Optuna and objective); nothing is reported, the callback
stops the study once the budget has passed, and a trial counts if it finished within the
budget (``Run.elapsed``). At most ``problem.max_trials`` trials per run; runs that hit the cap
before the budget are flagged ``capped``.

A constrained problem (``problem.constraints_fn``) stores each trial's constraint values as the
user attr ``constraints`` and every sampler that takes one gets the same ``constraints_func``
reading it (ours, GPSampler, TPE); an infeasible trial's value is recorded as nan (what counts
is the best feasible value) and counted in ``Run.meta["n_infeasible"]``. A method with a
stopper (``NAME@STOPPER``) gets its callback after the budget's (``methods.make_callbacks``).

Problems with steps (``problem.has_steps``; the pruning benchmark) run under the method's
pruner (``methods.make_pruner``). The objective walks the learning curve: at each step it
reports the cumulative cost so far (``report_cost``, so that ``CostBudgetPruner`` sees the
trial's own cost), reports the step's value (``trial.report(value, step)``) and asks
``trial.should_prune()``; when told to prune it raises ``optuna.TrialPruned`` with the cost
reached already reported, so a pruned trial is charged what it spent up to the step it was
pruned at, and stops there (a live curve trains no further). A trial that reaches the last
step is COMPLETE with the last step's value and the full cumulative cost. ``Run.steps`` and
``Run.states`` keep the last step each trial reached and how it ended; the budget rule is the
same (a pruned trial's cost counts).

A noisy problem (``problem.noisy``) is observed with the noise of the run's seed and the
trial's number (``Problem.observe``), and each trial records what the reports score by
(issue 51): ``Run.true_values``, the noise-free value of the trial's configuration
(evaluated after the study, so never timed nor charged);
``Run.best_trials``, the number of ``study.best_trial`` once the trial has finished (the
incumbent a user deploys; -1 before any trial completed); ``Run.recommended``, the number of
the method's recommendation then: the study user attr ``cost_recommended_trial`` of
``CostRolloutSampler`` (the complete trial with the best posterior mean, updated at each
suggestion and at the end; ``study.best_trial`` before its first one), and ``study.best_trial``
for every other method (the BoTorch references: the lowest observed value).

A multi-objective problem (``problem.multi``, issue 52) runs in a study with one
``"minimize"`` direction per objective; ``Run.objectives`` holds every trial's values (nan for
a trial that did not complete or is infeasible) and ``Run.values`` is nan (the reports score
the front by its hypervolume regret, ``stats.hv_regret_trace``). The budget rule is the same.
The BoTorch references are single-objective and refuse such a problem.
"""

from __future__ import annotations

from benchmarks import _preamble


_preamble.pin_threads()  # before numpy loads; the worker processes inherit it

from collections import Counter
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
import concurrent.futures
from dataclasses import dataclass
from dataclasses import field
import logging
import math
import multiprocessing
from pathlib import Path
import sys
import time
import traceback
from typing import Any
import warnings

import numpy as np

from benchmarks.harness import methods as methods_mod
from benchmarks.harness.problem import Problem


SCORINGS = ("best_trial", "recommended")
"""The incumbents a noisy problem's run is scored by (``Run.incumbent_true``)."""
RECOMMENDED_ATTR = "cost_recommended_trial"
"""The study user attr where ``CostRolloutSampler`` names its recommendation (public: the
package's README and FAQ)."""

ProblemSource = Problem | Callable[[], Problem]
"""A problem, or a zero-argument picklable factory of one (built in the worker, for problems
whose functions do not pickle)."""
Probe = Callable[[Any, Any], dict[str, Any]]
"""``probe(sampler, study) -> dict`` called after a run of an Optuna-driven method; what it
returns goes to ``Run.meta`` (e.g. the sampler's route counts)."""


@dataclass
class Run:
    """One run. ``values`` holds nan for a trial that did not complete."""

    problem: str
    method: str
    seed: int
    costs: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    elapsed: list[float] = field(default_factory=list)  # wall-clock problems only
    params: list[dict[str, Any]] = field(default_factory=list)  # if the problem records them
    steps: list[int] = field(default_factory=list)  # problems with steps: last step reached
    states: list[str] = field(default_factory=list)  # problems with steps: "complete", ...
    true_values: list[float] = field(default_factory=list)  # noisy: noise-free value of trial
    best_trials: list[int] = field(default_factory=list)  # noisy: study.best_trial after it
    recommended: list[int] = field(default_factory=list)  # noisy: the recommendation after it
    objectives: list[list[float]] = field(default_factory=list)  # multi-objective: (n, m)
    run_s: float = 0.0
    cpu_s: float = 0.0
    suggest_s: float = 0.0  # total time in the method's proposals (the suggest_* calls)
    n_warnings: int = 0
    capped: bool = False
    error: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_trials(self) -> int:
        return len(self.costs)

    def incumbent_true(self, scoring: str = "best_trial") -> list[float]:
        """Per trial, the noise-free value of the incumbent once it finished: by
        ``"best_trial"`` (``study.best_trial``) or ``"recommended"`` (the recommendation);
        nan where there is none (no trial completed yet). Empty for a run without noise."""
        if scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
        numbers = self.best_trials if scoring == "best_trial" else self.recommended
        return [
            self.true_values[k] if 0 <= k < len(self.true_values) else math.nan for k in numbers
        ]


class _Collect(logging.Handler):
    """Counts the records of WARNING and above and keeps a few distinct messages."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.messages[f"{record.name}: {record.getMessage()}"[:300]] += 1


def _source(problem: ProblemSource) -> Problem:
    return problem if isinstance(problem, Problem) else problem()


CONSTRAINTS_ATTR = "constraints"
"""The user attr where the runner stores a constrained problem's constraint values."""


def constraints_of_trial(trial: Any) -> list[float]:
    """The ``constraints_func`` every sampler gets on a constrained problem (a module-level
    function: it pickles). A trial without values (it failed) is infeasible."""
    return list(trial.user_attrs.get(CONSTRAINTS_ATTR, [math.inf]))


def feasible(trial: Any) -> bool:
    """Whether every stored constraint value is <= 0 (Optuna's rule)."""
    return all(c <= 0.0 for c in constraints_of_trial(trial))


def _run_optuna(
    method: methods_mod.Method,
    problem: Problem,
    seed: int,
    run: Run,
    probe: Probe | None,
    configure: Callable[[Any], None] | None = None,
) -> None:
    import optuna

    from optuna_costbo import report_cost

    spent = 0.0
    previous: list[dict[str, Any] | None] = [None]
    measured: dict[int, tuple[float, float, dict[str, Any]]] = {}
    wall = problem.clock == "wall"
    noisy = problem.noisy
    incumbents: dict[int, tuple[int, int]] = {}  # noisy: number -> (best_trial, recommended)

    def objective(trial: optuna.Trial) -> float:
        begin = time.perf_counter()
        params = problem.suggest(trial)
        seconds = time.perf_counter() - begin
        run.suggest_s += seconds
        run.meta["suggest_max_s"] = max(run.meta.get("suggest_max_s", 0.0), seconds)
        # NOTE: the previous trial moves on even if this one fails, as in
        # CostRolloutSampler (a failed trial's configuration was still set up).
        before, previous[0] = previous[0], dict(params)
        if problem.multi:
            value: Any
            value, cost = problem.evaluate_objectives(params, before)
            value = list(value)
        else:
            value, cost = problem.observe(params, before, seed, trial.number)
        measured[trial.number] = (cost, time.perf_counter() - start, params)
        if not wall:
            report_cost(trial, cost)
        if problem.constraints_fn is not None:
            values = [float(c) for c in problem.constraints_fn(params)]
            trial.set_user_attr(CONSTRAINTS_ATTR, values)
        return value

    reached: dict[int, int] = {}

    def objective_with_steps(trial: optuna.Trial) -> float:
        cost, value, step, params = 0.0, math.nan, 0, {}
        try:  # a trial the sampler skips (TrialPruned in suggest) is charged nothing
            begin = time.perf_counter()
            params = problem.suggest(trial)
            seconds = time.perf_counter() - begin
            run.suggest_s += seconds
            run.meta["suggest_max_s"] = max(run.meta.get("suggest_max_s", 0.0), seconds)
            for step, value, cost in problem.evaluate_curve(params):
                report_cost(trial, cost)  # kept up to date: CostBudgetPruner reads it
                trial.report(value, step)
                if trial.should_prune():
                    raise optuna.TrialPruned(f"pruned at step {step}")
        finally:
            measured[trial.number] = (cost, time.perf_counter() - start, params)
            reached[trial.number] = step
        return value

    def track_incumbents(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        try:
            best = study.best_trial.number
        except ValueError:  # no trial completed yet
            best = -1
        recommended = study.user_attrs.get(RECOMMENDED_ATTR) if method.family == "ours" else None
        incumbents[trial.number] = (best, best if recommended is None else int(recommended))

    def stop_at_budget(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        nonlocal spent
        if wall:
            if time.perf_counter() - start >= problem.budget:
                study.stop()
            return
        spent += float(trial.user_attrs.get("cost", 0.0))
        if spent >= problem.budget:
            study.stop()

    options: dict[str, Any] = dict(problem.sampler_options)
    cost_fn = problem.cost_fn
    if method.kwargs.get(methods_mod.KNOWN_COST):
        cost_fn = problem.known_cost
        if cost_fn is None:
            raise ValueError(f"{method.name}: problem {problem.name!r} has no known cost")
    if cost_fn is not None:
        options["cost_fn"] = cost_fn
    if problem.constraints_fn is not None:
        options["constraints_func"] = constraints_of_trial
    sampler = methods_mod.make_sampler(method, problem.budget, seed, options)
    if configure is not None:
        configure(sampler)
    pruner = methods_mod.make_pruner(method, problem.max_step)
    # NOTE: HyperbandPruner puts trial k in a bracket by a hash of the study's name and k;
    # Optuna's default name is random, so a problem with steps gets a name of its own: the
    # same brackets for a seed on every run, and for every method of that seed.
    name = f"{problem.name}-seed{seed}" if problem.has_steps else None
    directions = ["minimize"] * problem.n_objectives
    study = optuna.create_study(
        sampler=sampler, pruner=pruner, study_name=name, directions=directions
    )
    start = time.perf_counter()
    callbacks = [
        *([track_incumbents] if noisy else []),
        stop_at_budget,
        *methods_mod.make_callbacks(method),
    ]
    study.optimize(
        objective_with_steps if problem.has_steps else objective,
        n_trials=problem.max_trials,
        callbacks=callbacks,
    )
    run.meta["optimize_s"] = round(time.perf_counter() - start, 4)
    for trial in study.get_trials(deepcopy=False):
        # A trial pruned before its objective ran (ours skips the last one a hard budget
        # cannot pay for) cost nothing.
        skipped = trial.state == optuna.trial.TrialState.PRUNED and not trial.params
        unmeasured = 0.0 if skipped else float(trial.user_attrs.get("cost", math.nan))
        cost, at, params = measured.get(trial.number, (unmeasured, math.nan, {}))
        run.costs.append(cost)
        done = trial.state == optuna.trial.TrialState.COMPLETE and trial.values is not None
        if done and problem.constraints_fn is not None and not feasible(trial):
            done = False  # the best feasible value is what counts
            run.meta["n_infeasible"] = run.meta.get("n_infeasible", 0) + 1
        if problem.multi:
            m = problem.n_objectives
            ok = done and trial.values is not None
            run.objectives.append([float(v) for v in trial.values] if ok else [math.nan] * m)
            run.values.append(math.nan)
        else:
            run.values.append(float(trial.value) if done and trial.value is not None else math.nan)
        if wall:
            run.elapsed.append(at)
        if problem.record_params:
            run.params.append(params)
        if problem.has_steps:
            run.steps.append(reached.get(trial.number, 0))
            run.states.append(trial.state.name.lower())
        if noisy:  # scored after the study: the noise-free evaluations are never timed
            best, recommended = incumbents.get(trial.number, (-1, -1))
            known = trial.number in measured and bool(params)
            run.true_values.append(problem.true_value(params) if known else math.nan)
            run.best_trials.append(best)
            run.recommended.append(recommended)
    if probe is not None:
        run.meta.update(probe(sampler, study))


def _run_botorch(method: methods_mod.Method, problem: Problem, seed: int, run: Run) -> None:
    if not problem.params or problem.suggest_fn is not None:
        raise ValueError(f"the BoTorch references need a fixed space; {problem.name} has none")
    if problem.constraints_fn is not None:
        raise ValueError(f"the BoTorch references take no constraints; {problem.name} has some")
    if problem.multi:
        raise ValueError(f"the BoTorch references have one objective; {problem.name} has more")
    from benchmarks.harness import botorch_ref

    startup = botorch_ref.sobol_startup(problem.encoded_dim, problem.n_startup, seed)
    xs: list[np.ndarray] = []
    spent = 0.0
    previous: dict[str, Any] | None = None
    while spent < problem.budget and len(xs) < problem.max_trials:
        k = len(xs)
        begin = time.perf_counter()
        if k < len(startup):
            u = startup[k]
        else:
            y = np.asarray(run.values)
            ok = np.isfinite(y)
            u = botorch_ref.propose(
                method.kind,
                np.asarray(xs)[ok],
                y[ok],
                np.asarray(run.costs)[ok],
                remaining=problem.budget - spent,
                budget=problem.budget,
                seed=seed * 100003 + k,
            )
        params = problem.decode(u)
        run.suggest_s += time.perf_counter() - begin
        value, cost = problem.observe(params, previous, seed, k)
        previous = params
        xs.append(problem.encode(params))  # the model sees the decoded point
        run.costs.append(cost)
        run.values.append(value)
        if problem.record_params:
            run.params.append(params)
        if problem.noisy:  # the recommendation of a reference is its best observation
            run.true_values.append(problem.true_value(params))
            y = np.where(np.isfinite(run.values), run.values, np.inf)
            best = int(np.argmin(y)) if np.isfinite(y).any() else -1
            run.best_trials.append(best)
            run.recommended.append(best)
        spent += cost


def run_one(
    problem: ProblemSource,
    method_name: str,
    seed: int,
    probe: Probe | None = None,
    configure: Callable[[Any], None] | None = None,
) -> Run:
    """Run ``method_name`` with ``seed`` on ``problem`` until the budget is spent.

    ``configure(sampler)``: called on the new sampler of an Optuna-driven method before the
    study starts (a benchmark setting what the public API does not, on that object only).

    Never raises: a failure is in ``Run.error`` (the last line of its traceback).
    """
    import optuna

    prob = _source(problem)
    method = methods_mod.resolve(method_name)
    run = Run(prob.name, method_name, seed)
    handler = _Collect()
    root = logging.getLogger("optuna")  # the package's loggers are under "optuna.costbo"
    root.addHandler(handler)
    # Quiet while it runs; the caller's logging is given back afterwards (tests run many).
    verbosity = optuna.logging.get_verbosity()
    had_default = optuna.logging._default_handler in root.handlers
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.logging.disable_default_handler()
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if method.family == "botorch":
                _run_botorch(method, prob, seed, run)
            else:
                _run_optuna(method, prob, seed, run, probe, configure)
        py_warnings = Counter(f"{w.category.__name__}: {w.message}"[:300] for w in caught)
        if py_warnings:
            run.meta["py_warnings"] = dict(py_warnings.most_common(5))
    except Exception:
        run.error = traceback.format_exc(limit=4).strip().splitlines()[-1]
    finally:
        run.run_s = time.perf_counter() - start
        run.cpu_s = time.process_time() - cpu_start
        run.n_warnings = sum(handler.messages.values())
        root.removeHandler(handler)
        optuna.logging.set_verbosity(verbosity)
        if had_default:
            optuna.logging.enable_default_handler()
    if handler.messages:
        run.meta["log_messages"] = dict(handler.messages.most_common(5))
    run.meta["cpu_s"] = round(run.cpu_s, 3)
    run.capped = len(run.costs) >= prob.max_trials and sum(run.costs) < prob.budget
    return run


def _run_task(task: tuple[ProblemSource, str, int, Probe | None]) -> Run:
    """:func:`run_one` of one task, in a pool's worker."""
    return run_one(*task)


def init_worker(import_torch: bool = True) -> None:
    """One torch thread. ``import_torch=False``: only if torch is already imported (a fresh
    process per run would pay seconds for the import otherwise; torch reads
    OMP_NUM_THREADS=1 when it is imported later)."""
    if not import_torch and "torch" not in sys.modules:
        return
    try:
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    except (ImportError, RuntimeError):
        pass


Task = tuple[ProblemSource, str, int]  # (problem, method, seed)


def execute(
    tasks: Sequence[Task],
    *,
    jobs: int = 0,
    fresh_process: bool = False,
    preload: Sequence[str] = (),
    probe: Probe | None = None,
    on_done: Callable[[int, int, float, Run], None] | None = None,
) -> tuple[list[Run], float]:
    """Run every task; the runs (in the order they finished) and the wall time.

    ``jobs`` <= 1 without ``fresh_process``: in this process, one run after the other.
    Else ``max(jobs, 1)`` worker processes; ``fresh_process``: each run in a new process
    (forkserver, one task per child), so that no run inherits another's caches, memory or JIT
    state, for problems whose costs are measured times; ``preload``: modules the fork server
    imports once (every child starts with them imported, outside the timed runs).
    """
    results: list[Run] = []
    start = time.perf_counter()

    def collect(runs: Iterable[Run]) -> tuple[list[Run], float]:  # in the order they finish
        for k, run in enumerate(runs, 1):
            results.append(run)
            if on_done is not None:
                on_done(k, len(tasks), time.perf_counter() - start, run)
        return results, time.perf_counter() - start

    if jobs <= 1 and not fresh_process:
        init_worker(import_torch=False)
        return collect(run_one(p, m, s, probe) for p, m, s in tasks)
    if fresh_process:
        ctx = multiprocessing.get_context("forkserver")
        modules = ["__main__", "numpy", "scipy", "optuna", "optuna_costbo", *preload]
        ctx.set_forkserver_preload(modules)
        # NOTE: multiprocessing's Pool, for maxtasksperchild on every Python the package
        # supports (ProcessPoolExecutor's max_tasks_per_child needs 3.11). Unlike the executor
        # it waits for ever on a worker killed outright (out of memory): stop it and --resume.
        with ctx.Pool(
            max(jobs, 1), initializer=init_worker, initargs=(False,), maxtasksperchild=1
        ) as fresh:
            return collect(fresh.imap_unordered(_run_task, [(*t, probe) for t in tasks]))
    with concurrent.futures.ProcessPoolExecutor(jobs, initializer=init_worker) as pool:
        futures = [pool.submit(run_one, p, m, s, probe) for p, m, s in tasks]
        return collect(fut.result() for fut in concurrent.futures.as_completed(futures))


def print_progress(k: int, n: int, elapsed: float, run: Run) -> None:
    eta = elapsed / k * (n - k)
    flag = f" ERROR {run.error}" if run.error else ""
    flag += " CAPPED" if run.capped else ""
    flag += f" ({run.n_warnings} log warnings)" if run.n_warnings else ""
    finite = [v for v in run.values if math.isfinite(v)]
    best = f"best {min(finite):10.5g}" if finite else "best          -"
    print(
        f"[{k}/{n} {elapsed:6.0f}s eta {eta / 60:5.1f} min] {run.problem:<22} "
        f"{run.method:<16} seed {run.seed:<3} trials {len(run.costs):<4} {best} "
        f"{run.run_s:6.1f}s{flag}",
        flush=True,
    )


def run_tasks(
    tasks: Sequence[Task],
    cache_root: Path,
    *,
    resume: bool = False,
    jobs: int = 0,
    fresh_process: bool = False,
    preload: Sequence[str] = (),
    probe: Probe | None = None,
    on_run: Callable[[Run], None] | None = None,
) -> tuple[list[Run], float]:
    """:func:`execute` with every finished run written to the cache under ``cache_root``
    (failed runs too); with ``resume``, only the tasks the cache lacks a valid run of (the
    problem's current definition, no error). Problems given as factories are built here once
    to find their names and fingerprints. ``on_run(run)``: after each run, before it is
    written (to add to its ``meta``)."""
    from benchmarks.harness import cache

    built: dict[int, Problem] = {}

    def problem_of(source: ProblemSource) -> Problem:
        key = id(source)
        if key not in built:
            built[key] = _source(source)
        return built[key]

    todo = [
        (p, m, s)
        for p, m, s in tasks
        if not (resume and cache.load_valid(cache_root, problem_of(p), m, s) is not None)
    ]
    print(f"{len(tasks) - len(todo)} of {len(tasks)} runs cached, {len(todo)} to run", flush=True)
    by_name = {problem_of(p).name: problem_of(p) for p, _, _ in tasks}
    failures = 0

    def done(k: int, n: int, elapsed: float, run: Run) -> None:
        nonlocal failures
        failures += bool(run.error)
        print_progress(k, n, elapsed, run)
        if on_run is not None:
            on_run(run)
        cache.write_run(cache_root, by_name[run.problem], run)

    runs, total = execute(
        todo,
        jobs=jobs,
        fresh_process=fresh_process,
        preload=preload,
        probe=probe,
        on_done=done,
    )
    if todo:
        print(f"ran {len(todo)} runs in {total / 60:.1f} min, {failures} failed", flush=True)
    return runs, total


def order_tasks(
    problems: Iterable[ProblemSource],
    methods: Sequence[str],
    seeds: Iterable[int],
    *,
    interleave: bool = True,
    slow_first: Sequence[str] = (),
) -> list[Task]:
    """(problem, method, seed) tasks. ``interleave``: seed by seed, every problem and method
    within a seed (slow drifts of the machine's speed then hit all methods alike: for
    wall-clock costs; a stopped session has whole seeds). Else the methods of
    ``slow_first`` first, so that parallel workers finish together."""
    problems = list(problems)
    seeds = list(seeds)
    if interleave:
        return [(p, m, s) for s in seeds for p in problems for m in methods]
    tasks = [(p, m, s) for m in methods for s in seeds for p in problems]
    rank = {m: k for k, m in enumerate(slow_first)}
    tasks.sort(key=lambda t: rank.get(t[1], len(rank)))  # stable: seeds stay in order
    return tasks
