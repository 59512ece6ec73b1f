"""Method registry and one run of a (problem, method, seed).

Names:

- ours, through the public API only, ``CostRolloutSampler(budget, acquisition=a, seed=s)``:
  ``rollout`` (h = 2, the default), ``rollout-h4``, ``ei``, ``eipu``, ``ei-cool``,
  ``rollout-paper``; ANY other name ``ACQ`` or ``ACQ-hN`` is passed on as
  ``acquisition="ACQ"`` (``horizon=N``), so new acquisitions need no change here. A name the
  installed package rejects is skipped with its error message (:func:`unavailable`);
- Optuna's samplers with their defaults: ``optuna-gp`` (GPSampler), ``optuna-tpe``,
  ``random``;
- the BoTorch references of :mod:`benchmarks.suite.botorch_ref`: ``botorch-logei``,
  ``botorch-logeipu``, ``botorch-eicool``.

Budget rule, the same for every method: a trial starts only while the finished trials have
spent less than the budget (the last trial may overrun it). ``CostRolloutSampler`` stops the
study itself; every Optuna study also gets a callback that stops it at the budget (a no-op
for ours unless it failed to stop). A hard cap of :data:`MAX_TRIALS` trials per run keeps cheap
regions from buying hundreds of trials (runs that hit it are flagged ``capped``).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import logging
import math
import re
import time
import traceback
from typing import Any
import warnings

import numpy as np

from benchmarks.suite import botorch_ref
from benchmarks.suite.problems import Problem


MAX_TRIALS = 60
"""Trials per run at most. Runs are sequential and deterministic given the seed, so a run
cached under a higher cap is cut to its first MAX_TRIALS trials when read (the same trials a
run under this cap makes)."""


@dataclass(frozen=True)
class Method:
    name: str
    label: str
    family: str  # "costbo", "optuna", "botorch"
    acquisition: str = ""
    horizon: int = 2
    sampler: str = ""  # optuna: "gp", "tpe", "random"; botorch: variant


REGISTRY: dict[str, Method] = {
    m.name: m
    for m in (
        Method("rollout", "ours rollout h=2", "costbo", "rollout", 2),
        Method("rollout-h4", "ours rollout h=4", "costbo", "rollout", 4),
        Method("rollout-paper", "ours rollout (paper)", "costbo", "rollout-paper", 2),
        Method("ei", "ours EI", "costbo", "ei"),
        Method("eipu", "ours EIpu", "costbo", "eipu"),
        Method("ei-cool", "ours EI-cool", "costbo", "ei-cool"),
        Method("optuna-gp", "Optuna GP", "optuna", sampler="gp"),
        Method("optuna-tpe", "Optuna TPE", "optuna", sampler="tpe"),
        Method("random", "Random", "optuna", sampler="random"),
        Method("botorch-logei", "BoTorch LogEI", "botorch", sampler="logei"),
        Method("botorch-logeipu", "BoTorch LogEIpu", "botorch", sampler="logeipu"),
        Method("botorch-eicool", "BoTorch EI-cool", "botorch", sampler="eicool"),
    )
}
DEFAULT_METHODS = tuple(REGISTRY)
QUICK_METHODS = DEFAULT_METHODS


def resolve(name: str) -> Method:
    """A registered method, or ours with ``acquisition=ACQ`` for ``ACQ`` / ``ACQ-hN``."""
    if name in REGISTRY:
        return REGISTRY[name]
    match = re.fullmatch(r"(.+)-h(\d+)", name)
    acq, horizon = (match.group(1), int(match.group(2))) if match else (name, 2)
    label = f"ours {acq}" + (f" h={horizon}" if match else "")
    return Method(name, label, "costbo", acq, horizon)


def unavailable(method: Method) -> str | None:
    """None if the method can run here, else why not (shown, and the method is skipped)."""
    if method.family == "costbo":
        from optuna_costbo import CostRolloutSampler

        try:
            CostRolloutSampler(1.0, acquisition=method.acquisition, horizon=method.horizon)
        except (ValueError, TypeError) as exc:
            return f"the installed optuna_costbo rejects it: {exc}"
    elif method.family == "botorch":
        return botorch_ref.check_available()
    elif method.sampler == "gp":
        try:
            import torch  # noqa: F401
        except ImportError:
            return "Optuna's GPSampler needs torch (pip install torch==2.13.0)"
    return None


@dataclass
class Run:
    """One finished run. ``values`` holds nan for a trial that did not complete."""

    problem: str
    method: str
    seed: int
    costs: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    run_s: float = 0.0
    suggest_s: float = 0.0  # total time in the method's proposals
    n_warnings: int = 0
    capped: bool = False
    error: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.n = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.n += 1


def _optuna_sampler(method: Method, problem: Problem, seed: int) -> Any:
    import optuna

    if method.family == "costbo":
        from optuna_costbo import CostRolloutSampler

        return CostRolloutSampler(
            problem.budget, acquisition=method.acquisition, horizon=method.horizon, seed=seed
        )
    if method.sampler == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if method.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    return optuna.samplers.RandomSampler(seed=seed)


def _run_optuna(method: Method, problem: Problem, seed: int, run: Run) -> None:
    import optuna

    from optuna_costbo import report_cost

    spent = 0.0

    def objective(trial: optuna.Trial) -> float:
        begin = time.perf_counter()
        params = problem.suggest(trial)
        run.suggest_s += time.perf_counter() - begin
        value, cost = problem.evaluate(params)
        report_cost(trial, cost)
        return value

    def stop_at_budget(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        nonlocal spent
        spent += float(trial.user_attrs.get("cost", 0.0))
        if spent >= problem.budget:
            study.stop()

    study = optuna.create_study(sampler=_optuna_sampler(method, problem, seed))
    study.optimize(objective, n_trials=MAX_TRIALS, callbacks=[stop_at_budget])
    for trial in study.get_trials(deepcopy=False):
        run.costs.append(float(trial.user_attrs.get("cost", math.nan)))
        done = trial.state == optuna.trial.TrialState.COMPLETE
        run.values.append(float(trial.value) if done and trial.value is not None else math.nan)


def _run_botorch(method: Method, problem: Problem, seed: int, run: Run) -> None:
    startup = botorch_ref.sobol_startup(problem.encoded_dim, problem.n_startup, seed)
    xs: list[np.ndarray] = []
    spent = 0.0
    while spent < problem.budget and len(xs) < MAX_TRIALS:
        k = len(xs)
        begin = time.perf_counter()
        if k < len(startup):
            u = startup[k]
        else:
            y = np.asarray(run.values)
            ok = np.isfinite(y)
            u = botorch_ref.propose(
                method.sampler,
                np.asarray(xs)[ok],
                y[ok],
                np.asarray(run.costs)[ok],
                remaining=problem.budget - spent,
                budget=problem.budget,
                seed=seed * 100003 + k,
            )
        params = problem.decode(u)
        run.suggest_s += time.perf_counter() - begin
        value, cost = problem.evaluate(params)
        xs.append(problem.encode(params))  # the model sees the decoded point
        run.costs.append(cost)
        run.values.append(value)
        spent += cost


def run_one(problem: Problem, method_name: str, seed: int) -> Run:
    """Run until the budget is spent; never raises (see ``Run.error``)."""
    import optuna

    method = resolve(method_name)
    run = Run(problem.name, method_name, seed)
    counter = _Count()
    loggers = [logging.getLogger("optuna_costbo"), logging.getLogger("optuna")]
    for logger in loggers:
        logger.addHandler(counter)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.logging.disable_default_handler()
    propagate = loggers[0].propagate
    loggers[0].propagate = False
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method.family == "botorch":
                _run_botorch(method, problem, seed, run)
            else:
                _run_optuna(method, problem, seed, run)
    except Exception:
        run.error = traceback.format_exc(limit=3).strip().splitlines()[-1]
    finally:
        run.run_s = time.perf_counter() - start
        run.n_warnings = counter.n
        for logger in loggers:
            logger.removeHandler(counter)
        loggers[0].propagate = propagate
    run.capped = len(run.costs) >= MAX_TRIALS and sum(run.costs) < problem.budget
    return run
