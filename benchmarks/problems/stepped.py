"""Problems with steps for the pruning benchmark (``benchmarks/pruning.py``, issue 24).

Every problem here has a learning curve: ``curve_fn(params)`` yields ``(step, value,
cumulative_cost)`` step by step, the runner reports each step to the trial's pruner, and a
pruned trial is charged the cumulative cost it reached (``benchmarks/harness/runner.py``).

- **YAHPO Gym lcbench** (``yahpo-lcbench-<task>-epochs``): the 7-D MLP space of
  ``benchmarks/problems/yahpo.py``; steps = epochs 1..52; value = the surrogate's validation
  error at the epoch; cumulative cost = the surrogate's training time at the epoch (its
  running maximum: training resumes, so reaching epoch e costs the time at e). Budget and
  f* are the suite's (``yahpo_calibration.json``: 40 x the mean cost of a random
  configuration trained for 52 epochs).
- **YAHPO Gym rbv2_xgboost, fixed gbtree space** (``yahpo-xgb-gbtree-<id>-trainsize``):
  rbv2's surrogate has one fidelity, ``trainsize``; the rungs 1/27, 1/9, 1/3, 1 (successive
  halving with eta = 3) are the steps 1, 3, 9, 27 (``27 x trainsize``: the resource a pruner
  sees, so that Hyperband with ``min_resource=1, reduction_factor=3`` has its rungs exactly at
  the trainsize rungs). Each rung trains anew on a larger subsample, so the rungs' costs add
  up: a trial run to the end costs the sum of its four rungs. Budget and f* are the suite's
  (40 x the mean full-trainsize cost of a random configuration). ``nrounds`` would also be a
  resumable fidelity, but YAHPO's surrogate declares trainsize as rbv2's fidelity and the
  fixed space searches nrounds, so it stays a hyperparameter.
- **Live scikit-learn MLP** (:data:`LIVE_NAME`): ``MLPClassifier`` (adam) on the bundled
  digits data (70/30 stratified split, seed 0, features / 16), one ``partial_fit`` pass over
  the training set per step, 27 epochs; value = validation error after the epoch; cost =
  the **CPU seconds** (``time.process_time``) of the ``partial_fit`` and the validation
  ``score`` of each epoch, reported. CPU seconds rather than the study's wall clock: the
  machines are shared (2 cores, other jobs), the wall clock of a 10-ms epoch moves with the
  neighbours' load while its CPU time hardly does; and with the study's wall clock the
  sampler's own time (GPSampler's and ours at 100+ trials) would be most of the budget, a
  measure of sampler speed (``benchmarks/cheap_trials.py``), not of pruning. One BLAS
  thread, as every benchmark runs. Budget: 40 x the mean cost of a random configuration
  trained 27 epochs (:func:`calibrate_live`), as for YAHPO.
- **Live scikit-learn gradient boosting** (:data:`LIVE_HGB_NAME`):
  ``HistGradientBoostingClassifier`` (no early stopping) on the generated data of
  ``benchmarks/problems/hpo.py``'s cheap-trials benchmark (``make_classification``, 4000 x 20,
  10 informative features, 5 % flipped labels, 70/30 stratified split, seed 0), ``warm_start``
  with 10 more boosting rounds per step, 12 steps (120 rounds); value = the validation **log
  loss** after the step (continuous, so runs rarely tie, where the MLP's error moves in steps
  of one validation example); cost = the CPU seconds of the step's ``fit`` and validation
  ``predict_proba``. Its cost grows with the leaves (a 189-leaf configuration costs 3.6x a
  9-leaf one). Added in the eighteenth session because the MLP saturates: every method is
  within one validation example of the others by a third of its budget
  (``benchmarks/results/pruning/better-half-live``). Budget: 40 x the mean cost of a random
  configuration trained all 12 steps, as for the others.

The YAHPO problems need the benchmark environment (``yahpo_gym``,
``benchmarks/problems/README_yahpo.md``) to run, not to be defined: a report can be rebuilt
without it.
"""

from __future__ import annotations

from collections.abc import Iterator
import dataclasses
import functools
import math
import re
import time
from typing import Any
import warnings

import numpy as np

from benchmarks.harness.problem import Curve
from benchmarks.harness.problem import LastStep
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem


MAX_TRIALS = 400
"""Trials per run at most. Pruned trials are cheap (an lcbench trial pruned at epoch 1 costs
about 1/52 of a full one), so a budget of 40 full trials can start hundreds: random search
with Hyperband and TPE with either pruner started 150-220 on lcbench 189905 and 167168 and
25-55 on rbv2_xgboost 46 (seed 0). A sampler whose model sees only COMPLETE trials can
propose the same pruned region again and again, each trial pruned at the first step for
1/52 of a trial's cost, up to some 2000 trials; its suggestion and pruning times grow with
the trials (a 1500-trial run of ``rollout+median`` took over half an hour). Such runs stop at
the cap, flagged ``capped``, with the budget not all spent (the report says how much)."""

LCBENCH = ("189905", "167185", "168908", "7593", "167168")
XGB_GBTREE = ("16", "46", "4534", "40978")
TRAINSIZE_SCALE = 27  # trainsize rungs 1/27, 1/9, 1/3, 1 -> steps 1, 3, 9, 27

LIVE_NAME = "live-mlp-digits-epochs"
LIVE_EPOCHS = 27
# NOTE(live budget): 40 x the mean CPU seconds of 27 epochs of a random configuration, 0.51 s
# over 30 configurations (the sizing run of this module; `python -m benchmarks pruning
# --calibrate-live` measures it again and writes benchmarks/results/pruning/live_calibration.md).
LIVE_BUDGET = 20.0
LIVE_SPACE = (
    Param("hidden", "int", 8, 256, log=True),
    Param("layers", "int", 1, 2),
    Param("batch_size", "int", 16, 256, log=True),
    Param("lr", "float", 1e-4, 1e-1, log=True),
    Param("alpha", "float", 1e-6, 1e-1, log=True),
)

LIVE_HGB_NAME = "live-hgb-synth-rounds"
LIVE_HGB_STEPS = 12
LIVE_HGB_ROUNDS = 10  # boosting rounds per step
# NOTE(live budget): 40 x the mean CPU seconds of 12 steps of a random configuration (the
# sizing run, `python -m benchmarks pruning --calibrate-live 30 --problems live-hgb-synth-rounds`,
# benchmarks/results/pruning/live_calibration_hgb.md).
LIVE_HGB_BUDGET = 35.0
LIVE_HGB_SPACE = (
    Param("learning_rate", "float", 1e-2, 1.0, log=True),
    Param("max_leaf_nodes", "int", 4, 256, log=True),
    Param("min_samples_leaf", "int", 1, 200, log=True),
    Param("l2_regularization", "float", 1e-4, 10.0, log=True),
    Param("max_features", "float", 0.1, 1.0),
)
LIVE_NAMES = (LIVE_NAME, LIVE_HGB_NAME)


# -- YAHPO Gym ------------------------------------------------------------------------------


def _yahpo_step(scenario_fidelity: str, step: float) -> int:
    if scenario_fidelity == "epoch":
        return int(step)
    return round(step * TRAINSIZE_SCALE)


class YahpoCurve:
    """The learning curve of a YAHPO instance with integer steps (picklable: by name)."""

    def __init__(self, instance: str) -> None:
        self.instance = instance

    def __call__(self, params: dict[str, Any]) -> Iterator[tuple[int, float, float]]:
        from benchmarks.problems.yahpo import get_instance

        inst = get_instance(self.instance)
        for step, value, cost in inst.evaluate_curve(params):
            yield _yahpo_step(inst.fidelity_name, step), value, cost


def yahpo_problem(instance: str) -> Problem:
    """The YAHPO instance ``instance`` (e.g. ``"yahpo-lcbench-189905"``) with its steps; the
    name gets ``-epochs`` or ``-trainsize``, the group is the scenario."""
    from benchmarks.problems.yahpo import as_problem
    from benchmarks.problems.yahpo import get_instance

    inst = get_instance(instance)
    steps = tuple(_yahpo_step(inst.fidelity_name, s) for s in inst.fidelity_steps)
    curve = YahpoCurve(instance)
    suffix = "epochs" if inst.fidelity_name == "epoch" else inst.fidelity_name
    return dataclasses.replace(
        as_problem(inst),
        name=f"{instance}-{suffix}",
        group=inst.scenario,
        evaluator=LastStep(curve),
        curve_fn=curve,
        steps=steps,
        max_trials=MAX_TRIALS,
        description=f"{inst.description}; steps {steps[0]}..{steps[-1]} ({inst.fidelity_name})",
    )


# -- the live MLP ---------------------------------------------------------------------------


@functools.cache
def _digits() -> tuple[np.ndarray, ...]:
    from benchmarks.problems.hpo import _digits as split_digits

    return split_digits()  # X_tr, X_va, y_tr, y_va


class MLPEpochs:
    """``MLPClassifier`` trained one epoch (``partial_fit``) per step: yields ``(epoch,
    validation error, cumulative CPU seconds)`` and trains the next epoch only when asked."""

    def __init__(self, epochs: int = LIVE_EPOCHS) -> None:
        self.epochs = epochs

    def __call__(self, params: dict[str, Any]) -> Iterator[tuple[int, float, float]]:
        from sklearn.neural_network import MLPClassifier

        X_tr, X_va, y_tr, y_va = _digits()
        classes = np.unique(y_tr)  # (10,)
        model = MLPClassifier(
            hidden_layer_sizes=(int(params["hidden"]),) * int(params["layers"]),
            batch_size=int(params["batch_size"]),
            learning_rate_init=float(params["lr"]),
            alpha=float(params["alpha"]),
            random_state=0,
        )
        spent = 0.0
        for epoch in range(1, self.epochs + 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # overflow in a diverging network
                begin = time.process_time()
                model.partial_fit(X_tr, y_tr, classes=classes)
                error = float(1.0 - model.score(X_va, y_va))
                spent += time.process_time() - begin
            yield epoch, error if math.isfinite(error) else 1.0, spent


def _live(
    name: str, curve: Curve, params: tuple[Param, ...], n_steps: int, budget: float,
    description: str,
) -> Problem:  # fmt: skip
    """A live problem: steps 1..``n_steps`` of ``curve``, group "live", no f*."""
    return Problem(
        name=name,
        group="live",
        budget=budget,
        evaluator=LastStep(curve),
        params=params,
        description=description,
        curve_fn=curve,
        steps=tuple(range(1, n_steps + 1)),
        max_trials=MAX_TRIALS,
    )


def live_problem(budget: float = LIVE_BUDGET) -> Problem:
    """The live MLP on digits with 27 epochs as steps (see the module docstring)."""
    return _live(
        LIVE_NAME, MLPEpochs(), LIVE_SPACE, LIVE_EPOCHS, budget,
        "scikit-learn MLPClassifier on digits, partial_fit epochs 1..27, "
        "cost = CPU seconds of each epoch's fit and score",
    )  # fmt: skip


# -- the live gradient boosting ---------------------------------------------------------------


@functools.cache
def _synthetic() -> tuple[np.ndarray, ...]:
    from benchmarks.problems.hpo import _synthetic as split_synthetic

    return split_synthetic(4000, 20)  # X_tr (2800, 20), X_va (1200, 20), y_tr, y_va


class HGBRounds:
    """``HistGradientBoostingClassifier`` grown ``rounds`` boosting rounds per step
    (``warm_start``): yields ``(step, validation log loss, cumulative CPU seconds)`` and grows
    the next rounds only when asked."""

    def __init__(self, steps: int = LIVE_HGB_STEPS, rounds: int = LIVE_HGB_ROUNDS) -> None:
        self.steps = steps
        self.rounds = rounds

    def __call__(self, params: dict[str, Any]) -> Iterator[tuple[int, float, float]]:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.metrics import log_loss

        X_tr, X_va, y_tr, y_va = _synthetic()
        model = HistGradientBoostingClassifier(
            learning_rate=float(params["learning_rate"]),
            max_leaf_nodes=int(params["max_leaf_nodes"]),
            min_samples_leaf=int(params["min_samples_leaf"]),
            l2_regularization=float(params["l2_regularization"]),
            max_features=float(params["max_features"]),
            max_iter=self.rounds,
            early_stopping=False,
            warm_start=True,
            random_state=0,
        )
        spent = 0.0
        for step in range(1, self.steps + 1):
            begin = time.process_time()
            model.set_params(max_iter=step * self.rounds)
            model.fit(X_tr, y_tr)
            loss = float(log_loss(y_va, model.predict_proba(X_va)))
            spent += time.process_time() - begin
            yield step, loss, spent


def live_hgb_problem(budget: float = LIVE_HGB_BUDGET) -> Problem:
    """The live gradient boosting with 12 steps of 10 rounds (see the module docstring)."""
    return _live(
        LIVE_HGB_NAME, HGBRounds(), LIVE_HGB_SPACE, LIVE_HGB_STEPS, budget,
        "scikit-learn HistGradientBoostingClassifier on generated data (4000 x 20), "
        f"warm_start, {LIVE_HGB_ROUNDS} rounds per step, steps 1..{LIVE_HGB_STEPS}, "
        "value = validation log loss, cost = CPU seconds of each step's fit and predict_proba",
    )  # fmt: skip


def calibrate_live(
    n: int = 30, seed: int = 0, name: str = LIVE_NAME
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """``n`` random configurations (uniform, log where the space is) of the live problem
    ``name`` run to its last step: the configurations and their (n, 3) rows of (first-step
    cost, full cost, final value)."""
    problem = get_problem(name)
    assert problem.curve_fn is not None  # a problem with steps
    rng = np.random.default_rng(seed)
    configs: list[dict[str, Any]] = []
    rows = np.empty((n, 3))  # (n, 3)
    for k in range(n):
        params = {p.name: p.from_unit(rng.uniform()) for p in problem.params}
        curve = list(problem.curve_fn(params))
        configs.append(params)
        rows[k] = (curve[0][2], curve[-1][2], curve[-1][1])
    return configs, rows


# -- the benchmark's problems ---------------------------------------------------------------


DEFAULT_PROBLEMS = (
    "yahpo-lcbench-189905-epochs",
    "yahpo-lcbench-167168-epochs",
    "yahpo-xgb-gbtree-46-trainsize",
    LIVE_NAME,
)
"""The problems run by default (the committed baseline): two lcbench instances (189905: good
configurations cost more than the median; 167168: in YAHPO's v1.0 single-objective suite),
one rbv2_xgboost instance and the live MLP. The others are there by name; lcbench 167185,
whose good configurations are cheap, gives TPE + Median about 1000 trials (seed 0), too many
for the cap and, for the model-based samplers, for the machine time (benchmarks/pruning.py)."""


def problem_names() -> list[str]:
    """Every problem of the pruning benchmark, in report order."""
    return [
        *(f"yahpo-lcbench-{i}-epochs" for i in LCBENCH),
        *(f"yahpo-xgb-gbtree-{i}-trainsize" for i in XGB_GBTREE),
        *LIVE_NAMES,
    ]


_BUDGET_VARIANT = re.compile(r"^(?P<base>.+)-b(?P<times>[0-9]+(?:\.[0-9]+)?)$")


def budget_variant(name: str) -> tuple[str, float] | None:
    """``(base, x)`` when ``name`` is ``<base>-b<x>``: the problem ``base`` (:func:`problem_names`)
    with ``x`` times its budget, e.g. ``yahpo-lcbench-189905-epochs-b2``; None for any other
    name. ``x`` is written as ``f"{x:g}"`` (``b2``, ``b0.5``; not ``b2.0``)."""
    match = _BUDGET_VARIANT.match(name)
    if match is None or match["base"] not in problem_names():
        return None
    times = float(match["times"])
    if times <= 0.0 or match["times"] != f"{times:g}":
        return None
    return match["base"], times


def is_known(name: str) -> bool:
    """Whether ``name`` is a problem of this benchmark or a budget variant of one."""
    return name in problem_names() or budget_variant(name) is not None


def base_name(name: str) -> str:
    """The problem ``name`` varies the budget of (``name`` itself if it is not a variant)."""
    variant = budget_variant(name)
    return name if variant is None else variant[0]


def get_problem(name: str, max_trials: int | None = None) -> Problem:
    """The problem called ``name`` (:func:`problem_names`, or ``<name>-b<x>``: the same with
    ``x`` times its budget, :func:`budget_variant`), with at most ``max_trials`` trials per run
    (None: :data:`MAX_TRIALS`)."""
    variant = budget_variant(name)
    if variant is not None:
        base, times = variant
        problem = get_problem(base, max_trials)
        return problem.variant(f"b{times:g}", budget=times * problem.budget)
    if name == LIVE_NAME:
        problem = live_problem()
    elif name == LIVE_HGB_NAME:
        problem = live_hgb_problem()
    elif name in problem_names() and name.endswith(("-epochs", "-trainsize")):
        problem = yahpo_problem(name.removesuffix("-epochs").removesuffix("-trainsize"))
    else:
        raise KeyError(
            f"unknown problem {name!r}; known: {problem_names()}, each also as <name>-b<x> "
            "(x times its budget, e.g. -b2)"
        )
    if max_trials is None:
        return problem
    if max_trials < 1:
        raise ValueError(f"max_trials must be a positive int, got {max_trials!r}")
    return dataclasses.replace(problem, max_trials=max_trials)


class ProblemFactory:
    """``get_problem(name)`` as a zero-argument picklable factory (a run in a worker process
    builds its problem there)."""

    def __init__(self, name: str, max_trials: int | None = None) -> None:
        self.name = name
        self.max_trials = max_trials

    def __call__(self) -> Problem:
        return get_problem(self.name, self.max_trials)

    def __repr__(self) -> str:
        return f"ProblemFactory({self.name!r}, max_trials={self.max_trials!r})"
