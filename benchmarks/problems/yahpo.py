"""YAHPO Gym surrogate benchmarks: real hyperparameter-tuning landscapes with real costs.

YAHPO Gym (Pfisterer et al., AutoML-Conf 2022) fits a neural surrogate (ONNX) to the logged runs
of OpenML tuning experiments: given a configuration, a dataset and a fidelity it predicts the
validation metrics and the training time. Every instance here is one (scenario, dataset)
pair with

- ``value``: a validation error to MINIMIZE, in [0, 1] (rbv2: ``1 - acc``; lcbench:
  ``1 - val_accuracy / 100``; iaml: ``mmce``; see :data:`METRICS`);
- ``cost``: the surrogate's training time in seconds (rbv2/iaml ``timetrain``, lcbench
  ``time``), clipped below at :data:`COST_FLOOR`;
- a fidelity (lcbench: ``epoch`` 1..52, training resumes; rbv2/iaml: ``trainsize``, each rung a
  new training on a subsample), for the multi-fidelity ("pruning under a budget") benchmarks;
- ``budget`` and ``f_star`` read from ``benchmarks/results/yahpo_calibration.json``, written by
  ``python -m benchmarks suite calibrate-yahpo`` (the budget rule is in that script).

Benchmark-only code: ``yahpo_gym`` (with ``onnxruntime`` and ``ConfigSpace``) is imported lazily
and is never a dependency of ``optuna_costbo``. The surrogates are found through
``COSTBO_YAHPO_DATA`` or ``$COSTBO_DATA_DIR/yahpo`` (:func:`yahpo_data_dir`).

Example:
    .. code-block:: python

        import optuna
        from benchmarks.problems.yahpo import get_instance

        inst = get_instance("yahpo-xgb-cond-46")
        study = optuna.create_study()
        for _ in range(5):
            trial = study.ask()
            params = inst.suggest(trial)  # tree knobs only if booster is gbtree or dart
            value, cost = inst.evaluate(params)
            study.tell(trial, value)
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import contextlib
import dataclasses
from dataclasses import dataclass
import functools
import io
import json
import math
import os
from pathlib import Path
from typing import Any
import warnings

import numpy as np


DATA_ENV = "COSTBO_YAHPO_DATA"
DATA_DIR_ENV = "COSTBO_DATA_DIR"
SCENARIOS = ("rbv2_xgboost", "rbv2_rpart", "lcbench", "iaml_glmnet")
CALIBRATION_PATH = Path(__file__).resolve().parents[1] / "results" / "yahpo_calibration.json"

# NOTE(cost floor): the rbv2_xgboost surrogate bottoms out at 0.123 s and no surrogate of the four
# scenarios returned a time <= 0 in the calibration's samples (its JSON counts them), but a cost
# must be > 0 for cost-per-improvement rules and log-cost models, so times are clipped at 10 ms.
COST_FLOOR = 0.01

# NOTE(chunk): yahpo's objective_function stacks its rows one by one (np.vstack in a loop), so a
# single call on n configurations is O(n^2); chunks of 1000 keep it linear (0.07 s per chunk).
_CHUNK = 1000

# NOTE(rungs): trainsize rungs as successive halving with eta = 3 would use them: 1/27, 1/9, 1/3,
# 1 (yahpo's trainsize range is [0.03, 1]).
_TRAINSIZE_STEPS = (1 / 27, 1 / 9, 1 / 3, 1.0)


# -- search space ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One searched hyperparameter.

    Args:
        name: The name yahpo's surrogate knows (also the Optuna parameter name).
        kind: ``"float"``, ``"int"`` or ``"cat"``.
        low: Lower bound (float/int), inclusive.
        high: Upper bound (float/int), inclusive.
        log: Whether Optuna samples it in log space.
        choices: The categories of a ``"cat"`` parameter.
        condition: ``None`` (always active) or ``(parent_name, parent_values)``: active only
            while the parent is active and takes one of ``parent_values``.
    """

    name: str
    kind: str
    low: float = 0.0
    high: float = 1.0
    log: bool = False
    choices: tuple[str, ...] = ()
    condition: tuple[str, tuple[str, ...]] | None = None

    def is_active(self, params: Mapping[str, Any]) -> bool:
        """Whether this parameter is active given the (already decided) parent values."""
        if self.condition is None:
            return True
        parent, values = self.condition
        return parent in params and params[parent] in values

    def check(self, value: Any) -> None:
        """Raise ValueError if ``value`` is not a legal value of this parameter."""
        if self.kind == "cat":
            if value not in self.choices:
                raise ValueError(f"{self.name} must be one of {self.choices}, got {value!r}")
            return
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"{self.name} must be a number, got {value!r}")
        if not math.isfinite(float(value)) or not self.low <= float(value) <= self.high:
            raise ValueError(f"{self.name} must be in [{self.low}, {self.high}], got {value!r}")
        if self.kind == "int" and float(value) != round(float(value)):
            raise ValueError(f"{self.name} must be an integer, got {value!r}")

    def to_unit(self, value: Any) -> float:
        """Position of a float/int value in [0, 1] (in log space if ``log``)."""
        if self.log:
            lo, hi = math.log(self.low), math.log(self.high)
            return (math.log(float(value)) - lo) / (hi - lo)
        return (float(value) - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> float | int:
        """Inverse of :meth:`to_unit` (clipped to the box; integers rounded)."""
        u = min(max(float(u), 0.0), 1.0)
        if self.log:
            lo, hi = math.log(self.low), math.log(self.high)
            value = math.exp(lo + u * (hi - lo))
        else:
            value = self.low + u * (self.high - self.low)
        value = min(max(value, self.low), self.high)
        if self.kind == "int":
            return int(min(max(round(value), self.low), self.high))
        return value

    def sample(self, n: int, rng: np.random.Generator) -> list[Any]:
        """``n`` independent draws as Optuna's RandomSampler makes them."""
        if self.kind == "cat":
            idx = rng.integers(0, len(self.choices), size=n)  # (n,)
            return [self.choices[i] for i in idx]
        if self.kind == "int":
            if self.log:
                # NOTE: Optuna's RandomSampler draws a log int uniformly in
                # [log(low - 0.5), log(high + 0.5)] and rounds (_SearchSpaceTransform).
                lo, hi = math.log(self.low - 0.5), math.log(self.high + 0.5)
                x = np.rint(np.exp(rng.uniform(lo, hi, size=n)))  # (n,)
                return [int(v) for v in np.clip(x, self.low, self.high)]
            return [int(v) for v in rng.integers(int(self.low), int(self.high) + 1, size=n)]
        if self.log:
            x = np.exp(rng.uniform(math.log(self.low), math.log(self.high), size=n))  # (n,)
        else:
            x = rng.uniform(self.low, self.high, size=n)  # (n,)
        return [float(v) for v in np.clip(x, self.low, self.high)]


def _f(name: str, low: float, high: float, log: bool = False, cond: Any = None) -> Param:
    return Param(name, "float", low, high, log, (), cond)


def _i(name: str, low: int, high: int, log: bool = False, cond: Any = None) -> Param:
    return Param(name, "int", low, high, log, (), cond)


# The bounds are those of yahpo's config_space.json of each scenario (data v1.0.2).
_TREE = ("booster", ("gbtree", "dart"))
_DART = ("booster", ("dart",))
_XGB_COMMON = (
    _f("alpha", 0.0009118819655545162, 1096.6331584284585, log=True),
    _f("lambda", 0.0009118819655545162, 1096.6331584284585, log=True),
    _i("nrounds", 7, 2981, log=True),
    _f("subsample", 0.1, 1.0),
)


def _xgb_tree(cond: Any) -> tuple[Param, ...]:
    return (
        _f("eta", 0.0009118819655545162, 1.0, log=True, cond=cond),
        _f("gamma", 4.5399929762484854e-05, 7.38905609893065, log=True, cond=cond),
        _i("max_depth", 1, 15, cond=cond),
        _f("min_child_weight", 2.718281828459045, 148.4131591025766, log=True, cond=cond),
        _f("colsample_bytree", 0.01, 1.0, cond=cond),
        _f("colsample_bylevel", 0.01, 1.0, cond=cond),
    )


XGB_FIXED_SPACE = _XGB_COMMON + _xgb_tree(None)
XGB_CONDITIONAL_SPACE = (
    Param("booster", "cat", choices=("gblinear", "gbtree", "dart")),
    *_XGB_COMMON,
    *_xgb_tree(_TREE),
    _f("rate_drop", 0.0, 1.0, cond=_DART),
    _f("skip_drop", 0.0, 1.0, cond=_DART),
)
RPART_SPACE = (
    _f("cp", 0.0009118819655545162, 1.0, log=True),
    _i("maxdepth", 1, 30),
    _i("minbucket", 1, 100),
    _i("minsplit", 1, 100),
)
LCBENCH_SPACE = (
    _i("batch_size", 16, 512, log=True),
    _f("learning_rate", 0.00010000000000000009, 0.10000000000000002, log=True),
    _f("max_dropout", 0.0, 1.0),
    _i("max_units", 64, 1024, log=True),
    _f("momentum", 0.1, 0.99),
    _i("num_layers", 1, 5),
    _f("weight_decay", 1e-05, 0.1),
)
GLMNET_SPACE = (
    _f("alpha", 0.0, 1.0),
    _f("s", 0.00010000000000000009, 999.9999999999998, log=True),
)


# -- scenarios ------------------------------------------------------------------------------


def _rbv2_error(y: Mapping[str, float]) -> float:
    return 1.0 - float(y["acc"])


def _lcbench_error(y: Mapping[str, float]) -> float:
    return 1.0 - float(y["val_accuracy"]) / 100.0


def _iaml_error(y: Mapping[str, float]) -> float:
    return float(y["mmce"])


@dataclass(frozen=True)
class _Scenario:
    instance_key: str  # yahpo's instance parameter
    openml_id_kind: str  # what the instance id is on OpenML ("dataset" or "task")
    fidelity: str
    fidelity_steps: tuple[float, ...]
    fidelity_resumes: bool  # True: a rung continues the previous one (pays the increment)
    runtime: str
    metric: str
    error: Callable[[Mapping[str, float]], float]
    fixed: tuple[tuple[str, Any], ...] = ()  # non-fidelity constants


# NOTE(metrics): misclassification error on every scenario, so that values are comparable
# across the "real" group: rbv2's acc is YAHPO's own single-objective target for rbv2 (its v1.0
# suite), lcbench's val_accuracy is in percent (its suite target too; val_balanced_accuracy
# would weigh classes equally, which the other scenarios do not), iaml reports mmce directly.
# NOTE(repl): rbv2's "repl" is the outer-CV fold of the logged run; it is fixed to 10 as YAHPO's
# suites and other wrappers (e.g. mfpbench) fix it; "num.impute.selected.cpo" is fixed to
# impute.mean (it only matters on datasets with missing values and is a preprocessing choice,
# not a learner knob).
_RBV2_FIXED = (("repl", 10), ("num.impute.selected.cpo", "impute.mean"))
_SCENARIO_INFO = {
    "rbv2_xgboost": _Scenario(
        instance_key="task_id",
        openml_id_kind="dataset",
        fidelity="trainsize",
        fidelity_steps=_TRAINSIZE_STEPS,
        fidelity_resumes=False,
        runtime="timetrain",
        metric="1 - acc",
        error=_rbv2_error,
        fixed=_RBV2_FIXED,
    ),
    "rbv2_rpart": _Scenario(
        instance_key="task_id",
        openml_id_kind="dataset",
        fidelity="trainsize",
        fidelity_steps=_TRAINSIZE_STEPS,
        fidelity_resumes=False,
        runtime="timetrain",
        metric="1 - acc",
        error=_rbv2_error,
        fixed=_RBV2_FIXED,
    ),
    "lcbench": _Scenario(
        instance_key="OpenML_task_id",
        openml_id_kind="task",
        fidelity="epoch",
        fidelity_steps=tuple(float(e) for e in range(1, 53)),
        fidelity_resumes=True,
        runtime="time",
        metric="1 - val_accuracy/100",
        error=_lcbench_error,
    ),
    "iaml_glmnet": _Scenario(
        instance_key="task_id",
        openml_id_kind="dataset",
        fidelity="trainsize",
        fidelity_steps=_TRAINSIZE_STEPS,
        fidelity_resumes=False,
        runtime="timetrain",
        metric="mmce",
        error=_iaml_error,
    ),
}
METRICS = {name: info.metric for name, info in _SCENARIO_INFO.items()}


# -- data and yahpo_gym ---------------------------------------------------------------------


def yahpo_data_dir(scenarios: Sequence[str] = SCENARIOS) -> Path:
    """The folder holding yahpo's data (one subfolder per scenario, ``model.onnx`` inside).

    ``$COSTBO_YAHPO_DATA`` if set, else ``$COSTBO_DATA_DIR/yahpo``.

    Raises:
        FileNotFoundError: Neither is set, or the folder lacks a scenario's files.
    """
    if os.environ.get(DATA_ENV):
        root = Path(os.environ[DATA_ENV]).expanduser()
        origin = f"${DATA_ENV}"
    elif os.environ.get(DATA_DIR_ENV):
        root = Path(os.environ[DATA_DIR_ENV]).expanduser() / "yahpo"
        origin = f"${DATA_DIR_ENV}/yahpo"
    else:
        raise FileNotFoundError(
            f"YAHPO data not found: set {DATA_ENV} to a folder holding the scenario folders "
            f"({', '.join(SCENARIOS)}) of the yahpo_data repository (v1.0.2), or set "
            f"{DATA_DIR_ENV} to a folder with such a 'yahpo' subfolder "
            "(see benchmarks/problems/README_yahpo.md)"
        )
    needed = ("model.onnx", "config_space.json", "encoding.json")
    missing = [f"{s}/{f}" for s in scenarios for f in needed if not (root / s / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"YAHPO data folder {root} (from {origin}) lacks {', '.join(missing)}; "
            "see benchmarks/problems/README_yahpo.md"
        )
    return root.resolve()


def apply_configspace_shim(cs_class: type | None = None) -> bool:
    """Give ConfigSpace 1.x's ConfigurationSpace the ``_sort_hyperparameters`` yahpo calls.

    yahpo_gym 1.0.2 calls ``config_space._sort_hyperparameters()`` before encoding every
    configuration (``BenchmarkSet._config_to_xs``). ConfigSpace <= 0.6 had that private method;
    1.x removed it because it keeps its hyperparameters topologically sorted at all times. yahpo
    only reads that order to filter a configuration's keys (the surrogate's input order comes
    from its own ``cont_names``/``cat_names``), so a no-op is the faithful replacement.

    Args:
        cs_class: The class to patch; default ``ConfigSpace.ConfigurationSpace``.

    Returns:
        True if the method was missing and added, False if it was already there.
    """
    target: Any = cs_class
    if target is None:
        import ConfigSpace

        target = ConfigSpace.ConfigurationSpace
    if hasattr(target, "_sort_hyperparameters"):
        return False

    def _sort_hyperparameters(self: Any) -> None:
        return None

    target._sort_hyperparameters = _sort_hyperparameters
    return True


@functools.cache
def _benchmark_set(scenario: str, data_dir: str) -> Any:
    apply_configspace_shim()
    import yahpo_gym
    from yahpo_gym import BenchmarkSet

    # NOTE: yahpo reads its data folder from ~/.config/yahpo_gym (written by
    # LocalConfiguration.init_config); it is set in memory here so nothing is written to $HOME.
    yahpo_gym.local_config._config = {"data_path": data_dir}
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        # yahpo prints citation requests; ConfigSpace 1.x warns about the 0.6 JSON format.
        warnings.simplefilter("ignore")
        # NOTE: one ONNX thread (the machine is shared; runs are parallel over processes) and
        # no ConfigSpace check per row (Param.check validates at our boundary, 4x faster).
        bench = BenchmarkSet(scenario, multithread=False, check=False)
    return bench


def benchmark_set(scenario: str) -> Any:
    """yahpo_gym's ``BenchmarkSet`` of a scenario (cached per process; no instance set)."""
    if scenario not in _SCENARIO_INFO:
        raise ValueError(f"scenario must be one of {tuple(_SCENARIO_INFO)}, got {scenario!r}")
    return _benchmark_set(scenario, str(yahpo_data_dir((scenario,))))


@functools.lru_cache(maxsize=4)
def _calibration(path: str) -> dict[str, Any]:
    with open(path) as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def load_calibration(path: Path = CALIBRATION_PATH) -> dict[str, Any]:
    """The committed calibration (budgets, f_star) written by ``benchmarks/yahpo_calibrate.py``."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: run `python -m benchmarks suite calibrate-yahpo` "
            "(needs the YAHPO data)"
        )
    return _calibration(str(path))


# -- instances ------------------------------------------------------------------------------


@dataclass(frozen=True)
class YahpoInstance:
    """One YAHPO surrogate problem: a scenario, an OpenML dataset/task and a search space.

    Args:
        name: Unique name, e.g. ``"yahpo-xgb-cond-46"``.
        scenario: yahpo scenario (:data:`SCENARIOS`).
        instance: yahpo's instance id: the OpenML dataset id for rbv2/iaml, the OpenML task id
            for lcbench (:attr:`openml_id_kind`).
        params: The searched parameters, parents before children.
        fixed: Parameters set inside and never searched (besides the instance id and the
            fidelity) as ``(name, value)`` pairs, e.g. ``(("booster", "gbtree"),)`` for the
            fixed XGBoost space.
        description: One line for tables.

    Example:
        .. code-block:: python

            inst = get_instance("yahpo-lcbench-189905")
            params = inst.sample(1, np.random.default_rng(0))[0]
            value, cost = inst.evaluate(params)  # at epoch 52
            curve = inst.evaluate_curve(params)  # [(epoch, value, cumulative cost), ...]
    """

    name: str
    scenario: str
    instance: str
    params: tuple[Param, ...]
    fixed: tuple[tuple[str, Any], ...] = ()
    description: str = ""
    group: str = "real"

    def __post_init__(self) -> None:
        if self.scenario not in _SCENARIO_INFO:
            raise ValueError(f"scenario must be one of {SCENARIOS}, got {self.scenario!r}")
        names = [p.name for p in self.params]
        for i, p in enumerate(self.params):
            if p.condition is not None and p.condition[0] not in names[:i]:
                raise ValueError(f"{p.name}: its parent {p.condition[0]!r} must come before it")

    # -- description --

    @property
    def _info(self) -> _Scenario:
        return _SCENARIO_INFO[self.scenario]

    @property
    def conditional(self) -> bool:
        """Whether some parameters are active only under a parent's values."""
        return any(p.condition is not None for p in self.params)

    @property
    def dim(self) -> int:
        """Number of searched parameters (active or not)."""
        return len(self.params)

    @property
    def metric(self) -> str:
        return self._info.metric

    @property
    def openml_id_kind(self) -> str:
        return self._info.openml_id_kind

    @property
    def fidelity_name(self) -> str:
        return self._info.fidelity

    @property
    def fidelity_steps(self) -> tuple[float, ...]:
        """The rungs of :meth:`evaluate_curve` (the last is :attr:`max_fidelity`)."""
        return self._info.fidelity_steps

    @property
    def max_fidelity(self) -> float:
        return self._info.fidelity_steps[-1]

    @property
    def min_fidelity(self) -> float:
        return 1.0 if self.fidelity_name == "epoch" else 0.03

    @property
    def fidelity_resumes(self) -> bool:
        """True (epochs): a rung continues training, its cumulative cost is the surrogate's time
        at that rung. False (trainsize): each rung trains anew, the costs of rungs add up."""
        return self._info.fidelity_resumes

    @property
    def budget(self) -> float:
        """The cost budget (seconds) from the committed calibration JSON."""
        return float(self._calibration_entry()["budget"])

    @property
    def f_star(self) -> float:
        """Best value known (random search + local polish) from the committed calibration."""
        return float(self._calibration_entry()["f_star"])

    def _calibration_entry(self) -> dict[str, Any]:
        entries = load_calibration()["instances"]
        if self.name not in entries:
            raise KeyError(
                f"{self.name} is not in {CALIBRATION_PATH.name}: "
                "re-run `python -m benchmarks suite calibrate-yahpo`"
            )
        entry: dict[str, Any] = entries[self.name]
        return entry

    # -- search space --

    def active(self, params: Mapping[str, Any]) -> list[Param]:
        """The parameters active under ``params`` (parents are decided first)."""
        return [p for p in self.params if p.is_active(params)]

    def check(self, params: Mapping[str, Any]) -> None:
        """Raise ValueError unless ``params`` holds exactly the active parameters, legally."""
        active = self.active(params)
        names = {p.name for p in active}
        extra = sorted(set(params) - names)
        missing = sorted(names - set(params))
        if extra or missing:
            raise ValueError(
                f"{self.name}: params must hold exactly the active parameters; "
                f"missing {missing}, not active or unknown {extra}"
            )
        for p in active:
            p.check(params[p.name])

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Ask an Optuna trial define-by-run: a child only when its parent activates it."""
        out: dict[str, Any] = {}
        for p in self.params:
            if not p.is_active(out):
                continue
            if p.kind == "float":
                out[p.name] = trial.suggest_float(p.name, p.low, p.high, log=p.log)
            elif p.kind == "int":
                out[p.name] = trial.suggest_int(p.name, int(p.low), int(p.high), log=p.log)
            else:
                out[p.name] = trial.suggest_categorical(p.name, list(p.choices))
        return out

    def sample(self, n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
        """``n`` random configurations (active parameters only), as RandomSampler draws them."""
        draws = {p.name: p.sample(n, rng) for p in self.params}
        out: list[dict[str, Any]] = []
        for i in range(n):
            cfg: dict[str, Any] = {}
            for p in self.params:
                if p.is_active(cfg):
                    cfg[p.name] = draws[p.name][i]
            out.append(cfg)
        return out

    # -- evaluation --

    def _check_fidelity(self, fidelity: float | None) -> float:
        if fidelity is None:
            return self.max_fidelity
        f = float(fidelity)
        if not self.min_fidelity <= f <= self.max_fidelity or (
            self.fidelity_name == "epoch" and f != round(f)
        ):
            kind = "an integer epoch" if self.fidelity_name == "epoch" else "a trainsize"
            raise ValueError(
                f"fidelity must be {kind} in [{self.min_fidelity}, {self.max_fidelity}], "
                f"got {fidelity!r}"
            )
        return f

    def _row(self, params: Mapping[str, Any], fidelity: float) -> dict[str, Any]:
        row: dict[str, Any] = dict(params)
        for p in self.params:
            if p.kind == "int" and p.name in row:
                row[p.name] = int(row[p.name])
        row.update(dict(self._info.fixed))
        row.update(dict(self.fixed))
        row[self._info.instance_key] = self.instance
        row[self.fidelity_name] = int(fidelity) if self.fidelity_name == "epoch" else fidelity
        return row

    def _run(self, rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
        bench = benchmark_set(self.scenario)
        values = np.empty(len(rows))  # (n,)
        times = np.empty(len(rows))  # (n,)
        for start in range(0, len(rows), _CHUNK):
            with warnings.catch_warnings():
                # ConfigSpace 1.x deprecates the 0.6 calls yahpo makes for every row.
                warnings.simplefilter("ignore", DeprecationWarning)
                out = bench.objective_function(rows[start : start + _CHUNK])
            for k, y in enumerate(out):
                values[start + k] = self._info.error(y)
                times[start + k] = float(y[self._info.runtime])
        return values, times

    def predict(
        self,
        params_list: Sequence[Mapping[str, Any]],
        fidelity: float | None = None,
        *,
        check: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Raw surrogate outputs at one fidelity, in batches.

        Args:
            params_list: Configurations (active parameters only).
            fidelity: Epoch or trainsize; default :attr:`max_fidelity`.
            check: Validate every configuration first (:meth:`check`).

        Returns:
            ``(values, times)``, each of shape (n,): the error, not clipped to [0, 1], and the
            surrogate's time, not clipped and (lcbench) not made monotone in the epoch.
        """
        f = self._check_fidelity(fidelity)
        if check:
            for params in params_list:
                self.check(params)
        return self._run([self._row(params, f) for params in params_list])

    def _epochs(self, params: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """(values, times) of one configuration at every epoch 1..52, one ONNX call."""
        return self._run([self._row(params, e) for e in self.fidelity_steps])  # (52,), (52,)

    def evaluate_batch(
        self, params_list: Sequence[Mapping[str, Any]], fidelity: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(values, costs)`` of many configurations at one fidelity, each of shape (n,).

        Values are clipped to [0, 1]; costs at least :data:`COST_FLOOR`. For lcbench the cost at
        epoch e is the largest surrogate time over epochs 1..e (the surrogate's cumulative time
        is not always monotone in the epoch), so that it equals :meth:`evaluate_curve`'s
        cumulative cost at e. Each configuration is one surrogate call (see :meth:`predict`
        for batched raw outputs), so the results are those of :meth:`evaluate`, bit for bit.
        """
        f = self._check_fidelity(fidelity)
        for params in params_list:
            self.check(params)
        values = np.empty(len(params_list))  # (n,)
        times = np.empty(len(params_list))  # (n,)
        # NOTE(batch effects): onnxruntime's float32 kernels give outputs that depend on the
        # batch size at the 1e-5 relative level; one call per configuration (lcbench: all 52
        # epochs) makes a configuration's value and cost independent of what else is evaluated,
        # so evaluate, evaluate_batch and evaluate_curve agree exactly.
        for i, params in enumerate(params_list):
            if self.fidelity_resumes:
                v, t = self._epochs(params)  # (52,), (52,)
                values[i], times[i] = v[int(f) - 1], t[: int(f)].max()
            else:
                (values[i],), (times[i],) = self._run([self._row(params, f)])
        return np.clip(values, 0.0, 1.0), np.maximum(times, COST_FLOOR)

    def evaluate(
        self, params: Mapping[str, Any], fidelity: float | None = None
    ) -> tuple[float, float]:
        """``(value, cost)``: validation error to minimize in [0, 1] and training seconds > 0.

        Args:
            params: The active parameters (as :meth:`suggest` returns them).
            fidelity: Epoch (lcbench, integer 1..52) or trainsize (rbv2/iaml, 0.03..1);
                default :attr:`max_fidelity`.
        """
        values, costs = self.evaluate_batch([params], fidelity)
        return float(values[0]), float(costs[0])

    def evaluate_curve(self, params: Mapping[str, Any]) -> list[tuple[float, float, float]]:
        """``[(step, value, cumulative_cost), ...]`` over :attr:`fidelity_steps`.

        lcbench (training resumes): the cumulative cost at epoch e is the running maximum of
        the surrogate's time, i.e. ``evaluate(params, e)[1]``. rbv2/iaml (each trainsize rung
        trains anew): it is the sum of ``evaluate(params, s)[1]`` over the rungs s so far.
        Every value is ``evaluate(params, step)[0]``, the last one ``evaluate(params)[0]``.
        """
        self.check(params)
        steps = self.fidelity_steps
        if self.fidelity_resumes:
            values, times = self._epochs(params)  # (k,), (k,)
        else:
            values, times = np.empty(len(steps)), np.empty(len(steps))  # (k,), (k,)
            for k, s in enumerate(steps):  # one call per rung, as evaluate(params, s) makes
                (values[k],), (times[k],) = self._run([self._row(params, s)])
        values = np.clip(values, 0.0, 1.0)  # (k,)
        times = np.maximum(times, COST_FLOOR)  # (k,)
        cum = np.maximum.accumulate(times) if self.fidelity_resumes else np.cumsum(times)  # (k,)
        return [(s, float(v), float(c)) for s, v, c in zip(steps, values, cum, strict=True)]


def _xgb(instance: str, conditional: bool) -> YahpoInstance:
    if conditional:
        return YahpoInstance(
            f"yahpo-xgb-cond-{instance}",
            "rbv2_xgboost",
            instance,
            XGB_CONDITIONAL_SPACE,
            description="XGBoost, booster in {gblinear, gbtree, dart}; tree knobs for tree "
            "boosters, rate_drop/skip_drop for dart",
        )
    return YahpoInstance(
        f"yahpo-xgb-gbtree-{instance}",
        "rbv2_xgboost",
        instance,
        XGB_FIXED_SPACE,
        fixed=(("booster", "gbtree"),),
        description="XGBoost, booster fixed to gbtree, tree knobs always active",
    )


# NOTE(instances): chosen from a screen of every instance of the four scenarios (random
# configurations at full fidelity; `benchmarks suite calibrate-yahpo --screen` writes it to
# benchmarks/results/yahpo_screen.md): cost spread over the space, good configurations costlier
# than the median (the cost-aware case) or cheaper, and no surrogate artefacts in random
# configurations. The rbv2_xgboost surrogate extrapolates badly for dart with many rounds: on
# many datasets it predicts acc = 1.0 (some in its 0.123 s time floor), far below every gblinear
# or gbtree error (on dataset 1590, 1 random configuration in 2000 has error 0); the four XGBoost
# datasets have no random dart configuration beating the best non-dart one by 0.01 in 9000
# (16 is also in YAHPO's v1.0 single-objective suite, as is 167168 for lcbench).
# NOTE(extreme): the group extreme-real (issue 59) holds the gbtree instances whose costs span
# most: a ratio of the 95th to the 5th percentile of 130-190 over 1,000 random configurations
# (the real group's gbtree ones: 14-29), no artefacts in the screen; good configurations dearer
# than the median (41168, 40668), about at it (41278) and cheaper (41162).
EXTREME_IDS = ("41278", "40668", "41168", "41162")
INSTANCES: tuple[YahpoInstance, ...] = (
    *(_xgb(i, conditional=False) for i in ("16", "46", "4534", "40978")),
    *(_xgb(i, conditional=True) for i in ("16", "46", "4534", "40978")),
    *(
        YahpoInstance(
            f"yahpo-rpart-{i}", "rbv2_rpart", i, RPART_SPACE, description="decision tree (rpart)"
        )
        for i in ("41161", "41159", "1485")
    ),
    *(
        YahpoInstance(
            f"yahpo-lcbench-{i}",
            "lcbench",
            i,
            LCBENCH_SPACE,
            description="MLP (Auto-PyTorch funnel), SGD, 52 epochs",
        )
        for i in ("189905", "167185", "168908", "7593", "167168")
    ),
    *(
        YahpoInstance(
            f"yahpo-glmnet-{i}", "iaml_glmnet", i, GLMNET_SPACE, description="elastic net"
        )
        for i in ("41146", "40981")
    ),
    *(dataclasses.replace(_xgb(i, conditional=False), group="extreme-real") for i in EXTREME_IDS),
)
INSTANCES_BY_NAME = {inst.name: inst for inst in INSTANCES}


def get_instance(name: str) -> YahpoInstance:
    """The instance called ``name`` (see :data:`INSTANCES`)."""
    if name not in INSTANCES_BY_NAME:
        raise KeyError(f"unknown YAHPO instance {name!r}; known: {sorted(INSTANCES_BY_NAME)}")
    return INSTANCES_BY_NAME[name]


# -- the suite's "real" group ------------------------------------------------------------------

REAL_MAX_TRIALS = 150
"""Trials per run at most on the real group (a random search starts about 40 in the budget; a
method that settles where trials are 100 times cheaper could buy thousands)."""


class _Evaluate:
    """``(params, previous) -> (validation error, training seconds)`` of one instance, by name
    (picklable: runs go to worker processes)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[float, float]:
        return get_instance(self.name).evaluate(params)


class _Suggest:
    """The instance's define-by-run ``suggest`` (picklable)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, trial: Any) -> dict[str, Any]:
        return get_instance(self.name).suggest(trial)


def as_problem(inst: YahpoInstance) -> Any:
    """The instance as a ``benchmarks.harness.problem.Problem`` of the suite's ``real`` group
    (objective = validation error, cost = the surrogate's training time, reported; budget and
    f* from the calibration). Conditional spaces are asked define-by-run, as a user writes
    them; the BoTorch references, which need a fixed space, skip those."""
    from benchmarks.harness.problem import Param as HarnessParam
    from benchmarks.harness.problem import Problem

    params = tuple(
        HarnessParam(p.name, p.kind, p.low, p.high, p.log, tuple(p.choices), condition=p.condition)
        for p in inst.params
    )
    return Problem(
        name=inst.name,
        group=inst.group,
        budget=inst.budget,
        evaluator=_Evaluate(inst.name),
        params=params,
        suggest_fn=_Suggest(inst.name) if inst.conditional else None,
        f_star=inst.f_star,
        description=inst.description,
        max_trials=REAL_MAX_TRIALS,
    )


def real_problems() -> dict[str, Any]:
    """The real group: every instance as a suite problem (needs yahpo-gym and the data)."""
    return {inst.name: as_problem(inst) for inst in INSTANCES if inst.group == "real"}


EXTREME_MULTIPLE = 30.0
"""The extreme-real group's budget: this x the calibration's mean cost (issue 59's rule)."""


def extreme_real_problems() -> dict[str, Any]:
    """The extreme-real group (issue 59): the widest-cost gbtree instances, budget 30 x the
    mean cost of random configurations."""
    out = {}
    for inst in INSTANCES:
        if inst.group == "extreme-real":
            mean = float(inst._calibration_entry()["cost_mean"])
            out[inst.name] = dataclasses.replace(as_problem(inst), budget=EXTREME_MULTIPLE * mean)
    return out


# -- the suite's "noisy-real" group (issue 51) --------------------------------------------------

REPLICATIONS = tuple(range(1, 11))
"""rbv2's ``repl`` (1..10): the outer-CV fold of the logged run, fixed to 10 above."""
NOISY_REAL = (
    *(f"yahpo-xgb-gbtree-{i}" for i in ("16", "46", "4534", "40978")),
    *(f"yahpo-rpart-{i}" for i in ("41161", "41159", "1485")),
)
"""The rbv2 instances observed with the replication drawn per trial (the conditional XGBoost
spaces are left out: their best values are the surrogate's dart extrapolations)."""
NOISY_SUFFIX = "-noisy"
NOISY_CALIBRATION_PATH = CALIBRATION_PATH.with_name("yahpo_noisy_calibration.json")


def replication(inst: YahpoInstance, repl: int) -> YahpoInstance:
    """``inst`` evaluated at rbv2's replication ``repl`` instead of 10."""
    if inst.scenario not in ("rbv2_xgboost", "rbv2_rpart") or repl not in REPLICATIONS:
        raise ValueError(f"{inst.name}: no replication {repl!r} (rbv2 only, 1..10)")
    return dataclasses.replace(inst, fixed=(*inst.fixed, ("repl", repl)))


def mean_over_replications(
    inst: YahpoInstance, params: Mapping[str, Any]
) -> tuple[float, float, np.ndarray]:
    """``(mean value, mean cost, values)`` of ``params`` over the ten replications, each one
    :meth:`YahpoInstance.evaluate` (values of shape (10,))."""
    out = np.array([replication(inst, r).evaluate(params) for r in REPLICATIONS])  # (10, 2)
    return float(out[:, 0].mean()), float(out[:, 1].mean()), out[:, 0]


@functools.cache
def _noisy_calibration(path: str) -> dict[str, Any]:
    table: dict[str, Any] = json.loads(Path(path).read_text())
    return table


class _MeanEvaluate:
    """The noise-free evaluation: value and cost averaged over the replications."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[float, float]:
        value, cost, _ = mean_over_replications(get_instance(self.name), params)
        return value, cost


class _ReplicationEvaluate:
    """One observation: the replication drawn uniformly from 1..10 by ``rng``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None, rng: np.random.Generator
    ) -> tuple[float, float]:
        repl = int(rng.integers(REPLICATIONS[0], REPLICATIONS[-1] + 1))
        return replication(get_instance(self.name), repl).evaluate(params)


def as_noisy_problem(inst: YahpoInstance, path: Path = NOISY_CALIBRATION_PATH) -> Any:
    """The instance of the ``noisy-real`` group: each trial observed at a replication drawn
    per trial (``Problem.observe``), the noise-free value the mean over the ten; the budget is
    the instance's, f* the best mean found by ``suite calibrate-yahpo --noisy``."""
    base = as_problem(inst)
    entry = _noisy_calibration(str(path))["instances"][inst.name]
    return dataclasses.replace(
        base,
        name=inst.name + NOISY_SUFFIX,
        group="noisy-real",
        evaluator=_MeanEvaluate(inst.name),
        noisy_evaluator=_ReplicationEvaluate(inst.name),
        f_star=float(entry["f_star"]),
        settings={"noise": "rbv2 repl uniform in 1..10 per trial; noise-free: the mean"},
        description=f"{inst.description}; repl drawn per trial (sd across replications, "
        f"median over random configurations: {entry['repl_sd_median']:.3g})",
    )


def noisy_real_problems() -> dict[str, Any]:
    """The noisy-real group (needs yahpo-gym and the data to run, the committed
    ``yahpo_noisy_calibration.json`` to be defined)."""
    return {name + NOISY_SUFFIX: as_noisy_problem(get_instance(name)) for name in NOISY_REAL}
