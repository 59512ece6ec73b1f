"""The one problem type of the benchmarks: a search space, an evaluation, a budget.

:class:`Problem` is what the runner needs of any benchmark, synthetic or live:

- ``suggest(trial)``: define-by-run, the only place a sampler is asked; by default it asks
  for every :class:`Param` of ``params`` in order (a conditional parameter only when its
  parent has one of the listed values); a problem can give its own ``suggest_fn`` instead;
- ``evaluate(params, previous) -> (value, cost)``: the value to minimize and what the trial
  cost; ``previous`` is the previous trial's params (None before the first), for costs that
  depend on the state (moving sensors);
- ``budget``, and ``clock``: ``"reported"`` (the runner reports each trial's cost with
  ``report_cost`` and a trial starts while the finished trials have spent less than the
  budget) or ``"wall"`` (the budget is the wall clock of the whole study, sampler included;
  nothing is reported, so ``CostRolloutSampler`` measures the trials and charges its own time);
- ``f_star``: the known optimum (results are regrets), or None (raw values);
- ``cost_fn``: a known cost handed to ``CostRolloutSampler`` (``cost_fn(params, previous)``);
  :attr:`Problem.known_cost` is it, or a :class:`Separate` evaluator's cost formula, for the
  methods given the cost by the spec option ``known_cost=true``;
  and ``sampler_options``: further keyword arguments for it (``n_startup_trials``);
- ``params``: a fixed space, also the unit-box codec of the BoTorch references
  (:meth:`Problem.encode` / :meth:`Problem.decode`);
- ``group``: a label for aggregated results (the suite: "adversarial", "control"), and
  :func:`split` cuts a list of problems into a tuning and a confirmation half by group;
- ``constraints_fn(params)``: constraint values, feasible when all are <= 0 (Optuna's
  ``constraints_func`` semantics; the runner stores them and every sampler that takes
  constraints gets them); name the constraint in ``settings`` so the fingerprint tells a
  constrained variant apart;
- :attr:`Problem.fingerprint`: identifies the definition in the cached runs (name, budget,
  space, f*, ``version``, ``settings``, ``steps``); bump ``version`` when the definition
  changes;
- problems with steps (the pruning benchmark): ``curve_fn(params)`` gives the learning curve
  as ``(step, value, cumulative_cost)`` for each of ``steps`` in order (integers, the resource
  an Optuna pruner sees: epochs, or rungs), lazily if it likes (a live problem trains one step
  when the next is asked for, so a pruned trial stops training);
  :meth:`Problem.evaluate_curve` checks what it yields; ``evaluator`` is then
  :class:`LastStep` of the same curve (the whole curve, the last step's value and cost). The
  runner reports every step to the trial and its pruner (``runner.py``);
- noisy problems (issue 51): ``noisy_evaluator(params, previous, rng) -> (value, cost)`` is
  one observation, its noise drawn from ``rng``; the runner calls it with
  :func:`noise_rng` of the run's seed and the trial's number (the same draw for a (seed,
  trial) on every method and every run: deterministic runs, common random numbers), and
  ``evaluator`` is then the noise-free evaluation (:meth:`Problem.true_value`), by which the
  reports score the incumbents. :class:`AdditiveNoise` is the synthetic case (a noise-free
  evaluator plus a Gaussian of a fixed sd); name the noise in ``settings`` so the fingerprint
  tells a noisy variant apart;
- multi-objective problems (issue 52): ``reference_point`` set (m >= 2 values, one per
  objective, every objective minimized) makes the evaluator's value a sequence of m floats
  (:meth:`Problem.evaluate_objectives`); ``hv_star`` is the hypervolume of the best known front
  within the box bounded by the reference point (both fixed with the problem and part of the
  fingerprint); the runner creates a study with m ``"minimize"`` directions and records every
  objective, the reports score a run by its normalized hypervolume regret
  (``stats.hv_regret_trace``). ``f_star`` is then None.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass
from dataclasses import field
import hashlib
import math
from typing import Any

import numpy as np


CLOCKS = ("reported", "wall")
SPLITS = ("all", "tuning", "confirmation")


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` "float", "int" or "cat".

    ``condition=(parent, values)``: the parameter exists only when the parameter ``parent``
    (earlier in the space) took one of ``values``.
    """

    name: str
    kind: str
    low: float = 0.0
    high: float = 1.0
    log: bool = False
    choices: tuple[Any, ...] = ()
    condition: tuple[str, tuple[Any, ...]] | None = None

    @property
    def width(self) -> int:
        """Columns in the unit-box encoding."""
        return len(self.choices) if self.kind == "cat" else 1

    def active(self, params: Mapping[str, Any]) -> bool:
        """Whether the parameter exists given the values chosen so far."""
        if self.condition is None:
            return True
        parent, values = self.condition
        return parent in params and params[parent] in values

    def suggest(self, trial: Any) -> Any:
        """Ask an Optuna trial for this parameter."""
        if self.kind == "float":
            return trial.suggest_float(self.name, self.low, self.high, log=self.log)
        if self.kind == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_categorical(self.name, list(self.choices))

    def to_unit(self, value: Any) -> float:
        """Position of a float/int value in [0, 1] (log space if ``log``)."""
        if self.log:
            return (math.log(value) - math.log(self.low)) / (
                math.log(self.high) - math.log(self.low)
            )
        return (float(value) - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> Any:
        u = min(max(float(u), 0.0), 1.0)
        if self.log:
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            value = self.low + u * (self.high - self.low)
        if self.kind == "int":
            return int(min(max(round(value), self.low), self.high))
        return min(max(value, self.low), self.high)

    def fingerprint_text(self) -> str:
        # NOTE: the text of the suite's first Param dataclass (no condition field), so that
        # the committed cache's fingerprints stay valid; a condition is appended when set.
        text = (
            f"Param(name={self.name!r}, kind={self.kind!r}, low={self.low!r}, "
            f"high={self.high!r}, log={self.log!r}, choices={self.choices!r}"
        )
        if self.condition is not None:
            text += f", condition={self.condition!r}"
        return text + ")"


class _Text(str):
    """A string whose repr is itself (to rebuild a tuple's repr from element texts)."""

    def __repr__(self) -> str:
        return str(self)


Evaluator = Callable[[dict[str, Any], "dict[str, Any] | None"], tuple[Any, float]]
"""``evaluate(params, previous)`` -> ``(value, cost)``: value a float, or a sequence of m floats
on a multi-objective problem (``Problem.reference_point``)."""
NoisyEvaluator = Callable[
    [dict[str, Any], "dict[str, Any] | None", np.random.Generator], tuple[float, float]
]
"""``noisy(params, previous, rng)`` -> ``(value, cost)``: one observation, its noise from rng."""
Curve = Callable[[dict[str, Any]], Iterable[tuple[float, float, float]]]
"""``curve(params)`` -> ``(step, value, cumulative_cost)`` for each step, in order."""


class Separate:
    """``evaluate(params, previous)`` from an objective and a cost of the params alone."""

    def __init__(
        self,
        objective: Callable[[dict[str, Any]], float],
        cost: Callable[[dict[str, Any]], float],
    ) -> None:
        self.objective = objective
        self.cost = cost

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[float, float]:
        return float(self.objective(params)), float(self.cost(params))


class LastStep:
    """``evaluate(params, previous)`` of a problem with steps: the whole curve, then the last
    step's value and cumulative cost (what a trial run to the end gives and costs)."""

    def __init__(self, curve: Curve) -> None:
        self.curve = curve

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[float, float]:
        last: tuple[float, float, float] | None = None
        for point in self.curve(params):
            last = point
        if last is None:
            raise ValueError("the curve has no step")
        return float(last[1]), float(last[2])


_NOISE_STREAM = 0x6E6F697379  # "noisy": keeps the noise apart from any other use of the seed


def noise_rng(seed: int, trial: int) -> np.random.Generator:
    """The generator of the noise of trial number ``trial`` in a run with ``seed``: a function
    of the two alone, so a run is deterministic and every method of a seed sees the same draw
    at the same trial number (common random numbers for the paired comparisons)."""
    if seed < 0 or trial < 0:
        raise ValueError(f"seed and trial must be >= 0, got seed={seed}, trial={trial}")
    return np.random.default_rng([_NOISE_STREAM, int(seed), int(trial)])


class AdditiveNoise:
    """``noisy_evaluator`` of a noise-free ``evaluator`` plus Gaussian noise of sd ``sd`` on
    the value (the cost is the noise-free one)."""

    def __init__(self, evaluator: Evaluator, sd: float) -> None:
        if not (math.isfinite(sd) and sd > 0):
            raise ValueError(f"sd must be a positive finite number, got {sd!r}")
        self.evaluator = evaluator
        self.sd = float(sd)

    def __call__(
        self, params: dict[str, Any], previous: dict[str, Any] | None, rng: np.random.Generator
    ) -> tuple[float, float]:
        value, cost = self.evaluator(params, previous)
        return float(value) + self.sd * float(rng.standard_normal()), float(cost)


_F_STAR_ULPS = 4
"""Ulps of f* within which two fingerprints name one definition (``Problem.fingerprints``)."""


@dataclass(frozen=True)
class Problem:
    """A benchmark problem (see the module docstring)."""

    name: str
    group: str
    budget: float
    evaluator: Evaluator
    params: tuple[Param, ...] = ()
    suggest_fn: Callable[[Any], dict[str, Any]] | None = None
    f_star: float | None = None
    description: str = ""
    version: int = 1
    cost_fn: Callable[..., float] | None = None
    sampler_options: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    max_trials: int = 1000
    clock: str = "reported"
    record_params: bool = False  # write every trial's params to the cached run
    constraints_fn: Callable[[dict[str, Any]], Sequence[float]] | None = None
    curve_fn: Curve | None = None
    steps: tuple[int, ...] = ()
    noisy_evaluator: NoisyEvaluator | None = None  # set: noisy; evaluator is then noise-free
    reference_point: tuple[float, ...] = ()  # set: multi-objective (m values, all minimized)
    hv_star: float | None = None  # multi-objective: HV of the best known front

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise ValueError(f"clock must be one of {CLOCKS}, got {self.clock!r}")
        if not self.params and self.suggest_fn is None:
            raise ValueError(f"problem {self.name!r} needs params or a suggest_fn")
        if (self.curve_fn is None) != (not self.steps):
            raise ValueError(f"problem {self.name!r}: give both curve_fn and steps, or neither")
        if self.steps:
            if any(int(s) != s or s < 1 for s in self.steps) or list(self.steps) != sorted(
                set(self.steps)
            ):
                raise ValueError(
                    f"problem {self.name!r}: steps must be increasing positive integers, "
                    f"got {self.steps!r}"
                )
            if self.clock != "reported":
                raise ValueError(
                    f"problem {self.name!r}: a problem with steps reports its costs "
                    f"(clock='reported'), got clock={self.clock!r}"
                )
        if self.noisy_evaluator is not None and (self.steps or self.constraints_fn):
            raise ValueError(
                f"problem {self.name!r}: a noisy problem has neither steps nor constraints"
            )
        if self.reference_point:
            if len(self.reference_point) < 2 or self.hv_star is None or not self.hv_star > 0:
                raise ValueError(
                    f"problem {self.name!r}: a multi-objective problem needs a reference point "
                    f"of 2 or more values and a positive hv_star, got "
                    f"{self.reference_point!r} and {self.hv_star!r}"
                )
            if self.f_star is not None or self.noisy_evaluator is not None or self.steps:
                raise ValueError(
                    f"problem {self.name!r}: a multi-objective problem has no f_star, noise "
                    "or steps"
                )

    @property
    def n_objectives(self) -> int:
        """Number of objectives (1 unless ``reference_point`` is set)."""
        return max(1, len(self.reference_point))

    @property
    def multi(self) -> bool:
        """Whether the problem has several objectives (``reference_point`` set)."""
        return bool(self.reference_point)

    def evaluate_objectives(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[tuple[float, ...], float]:
        """(the m values to minimize, cost) of a multi-objective problem."""
        values, cost = self.evaluator(params, previous)
        out = tuple(float(v) for v in values)
        if len(out) != self.n_objectives:
            raise ValueError(
                f"{self.name}: the evaluator gave {len(out)} values, expected {self.n_objectives}"
            )
        return out, float(cost)

    @property
    def noisy(self) -> bool:
        """Whether an observation is noisy (``noisy_evaluator``; ``evaluator`` noise-free)."""
        return self.noisy_evaluator is not None

    def observe(
        self, params: dict[str, Any], previous: dict[str, Any] | None, seed: int, trial: int
    ) -> tuple[float, float]:
        """(value, cost) of trial number ``trial`` of a run with ``seed``: with its noise
        drawn from :func:`noise_rng` on a noisy problem, else :meth:`evaluate`."""
        if self.noisy_evaluator is None:
            return self.evaluate(params, previous)
        value, cost = self.noisy_evaluator(params, previous, noise_rng(seed, trial))
        return float(value), float(cost)

    def true_value(self, params: dict[str, Any]) -> float:
        """The noise-free value of ``params`` (the value itself on a problem without noise)."""
        return float(self.evaluator(params, None)[0])

    @property
    def known_cost(self) -> Callable[..., float] | None:
        """The problem's own cost of a configuration, for a method that is given it (the spec
        option ``known_cost=true``): :attr:`cost_fn` when set, else the cost formula of a
        :class:`Separate` evaluator (the synthetic problems); None when the cost is not a
        function the harness can hand over (a surrogate's prediction, a measured time)."""
        if self.cost_fn is not None:
            return self.cost_fn
        if isinstance(self.evaluator, Separate):
            return self.evaluator.cost
        return None

    @property
    def has_steps(self) -> bool:
        """Whether the problem has a learning curve (steps an Optuna pruner sees)."""
        return bool(self.steps)

    @property
    def max_step(self) -> int:
        """The last step (a pruner's maximum resource); 0 without steps."""
        return int(self.steps[-1]) if self.steps else 0

    def evaluate_curve(self, params: dict[str, Any]) -> Iterator[tuple[int, float, float]]:
        """``(step, value, cumulative_cost)`` for each of :attr:`steps`, in order, as the
        curve yields them (lazily); the steps must be all of :attr:`steps` and the cumulative
        cost non-decreasing, else ValueError (when the faulty step is reached)."""
        if self.curve_fn is None:
            raise ValueError(f"problem {self.name!r} has no steps")
        expected = iter(self.steps)
        spent = 0.0
        for step, value, cost in self.curve_fn(params):
            want = next(expected, None)
            if want is None or int(step) != want:
                raise ValueError(f"{self.name}: the curve gave step {step}, expected {want}")
            if not cost >= spent:  # also catches nan
                raise ValueError(
                    f"{self.name}: cumulative cost {cost!r} at step {step} is below {spent!r}"
                )
            spent = float(cost)
            yield int(step), float(value), spent
        missing = next(expected, None)
        if missing is not None:
            raise ValueError(f"{self.name}: the curve ended before step {missing}")

    @property
    def dim(self) -> int:
        """Number of parameters (the ``d`` of the start-up rules: d + 1 for the package's default,
        2(d+1) for the BoTorch references)."""
        return len(self.params)

    @property
    def encoded_dim(self) -> int:
        return sum(p.width for p in self.params)

    @property
    def n_startup(self) -> int:
        """Quasi-random start-up points of the BoTorch references: 2(d+1), at least 4."""
        return max(4, 2 * (self.dim + 1))

    @property
    def fingerprint(self) -> str:
        """Identifies the definition in cached run files."""
        return self._fingerprint(self.f_star)

    @property
    def fingerprints(self) -> frozenset[str]:
        """The fingerprints a cached run of this definition may carry: :attr:`fingerprint`
        and those of f* a few ulps away.

        NOTE: some f* are computed numerically (L-BFGS-B polish of Hartmann's published
        minimizers); numpy 1.26 and 2.x give results 1-2 ulps apart, so the same problem had
        two fingerprints and a cache written in one benchmark environment was silently not
        read in the other. Up to 4 ulps is the same definition.
        """
        if self.f_star is None or not math.isfinite(self.f_star):
            return frozenset({self.fingerprint})
        out, up, down = {self.fingerprint}, self.f_star, self.f_star
        for _ in range(_F_STAR_ULPS):
            up, down = math.nextafter(up, math.inf), math.nextafter(down, -math.inf)
            out |= {self._fingerprint(up), self._fingerprint(down)}
        return frozenset(out)

    def accepts(self, fingerprint: object) -> bool:
        """Whether a cached run's ``fingerprint`` is of this definition (:attr:`fingerprints`)."""
        return fingerprint in self.fingerprints

    def _fingerprint(self, f_star: float | None) -> str:
        parts: list[Any] = [
            self.name,
            self.budget,
            tuple(_Text(p.fingerprint_text()) for p in self.params),
            f_star,
            self.version,
        ]
        # Only when set, so that the suite's first fingerprints stay what they were.
        extra = {**self.settings}
        if self.sampler_options:
            extra["sampler_options"] = dict(self.sampler_options)
        if self.clock != "reported":
            extra["clock"] = self.clock
        if self.steps:
            extra["steps"] = list(self.steps)
        if self.reference_point:
            extra["reference_point"] = list(self.reference_point)
            extra["hv_star"] = self.hv_star
        if extra:
            parts.append(_Text(repr(sorted(extra.items()))))
        return hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()[:12]

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Ask an Optuna trial for every (active) parameter."""
        if self.suggest_fn is not None:
            return self.suggest_fn(trial)
        out: dict[str, Any] = {}
        for p in self.params:
            if p.active(out):
                out[p.name] = p.suggest(trial)
        return out

    def evaluate(
        self, params: dict[str, Any], previous: dict[str, Any] | None = None
    ) -> tuple[float, float]:
        """(value to minimize, cost)."""
        value, cost = self.evaluator(params, previous)
        return float(value), float(cost)

    def encode(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params -> point of the unit box, shape (encoded_dim,); inactive parameters 0."""
        cols: list[float] = []
        for p in self.params:
            if p.name not in params:
                cols.extend([0.0] * p.width)
            elif p.kind == "cat":
                cols.extend(1.0 if c == params[p.name] else 0.0 for c in p.choices)
            else:
                cols.append(p.to_unit(params[p.name]))
        return np.asarray(cols, dtype=float)

    def decode(self, u: np.ndarray) -> dict[str, Any]:
        """Unit-box point (encoded_dim,) -> params (ints rounded, one-hot argmax, inactive
        parameters left out)."""
        out: dict[str, Any] = {}
        k = 0
        for p in self.params:
            if p.active(out):
                if p.kind == "cat":
                    out[p.name] = p.choices[int(np.argmax(u[k : k + p.width]))]
                else:
                    out[p.name] = p.from_unit(u[k])
            k += p.width
        return out

    def variant(self, suffix: str, **changes: Any) -> Problem:
        """A copy named ``<name>-<suffix>`` with some fields changed (e.g. a smoke budget)."""
        return dataclasses.replace(self, name=f"{self.name}-{suffix}", **changes)


def split(problems: Sequence[Problem], which: str) -> list[Problem]:
    """The ``"tuning"`` or ``"confirmation"`` half of ``problems`` (``"all"``: every one).

    Stratified by group and deterministic: within each group, the problems are ordered by the
    SHA-256 of their names and dealt alternately, tuning first (so a group of n gives
    ceil(n/2) to tuning). The halves depend only on the names and groups of ``problems``;
    adding a problem to a group can move others of that group, so freeze a split (and say so)
    before tuning on it.
    """
    if which not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {which!r}")
    if which == "all":
        return list(problems)
    chosen: set[str] = set()
    for group in dict.fromkeys(p.group for p in problems):
        members = sorted(
            (p.name for p in problems if p.group == group),
            key=lambda name: hashlib.sha256(name.encode()).hexdigest(),
        )
        start = 0 if which == "tuning" else 1
        chosen.update(members[start::2])
    return [p for p in problems if p.name in chosen]
