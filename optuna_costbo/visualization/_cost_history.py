"""The cost-history plots' data as plain arrays, for the plotly and matplotlib front ends."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np
import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._front import hypervolume_history
from optuna_costbo._ledger.costs import charged_cost
from optuna_costbo._ledger.costs import validate_budget
from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._ledger.keys import FINISHED_STATES
from optuna_costbo._ledger.ledger import storage_trials
from optuna_costbo._ledger.ledger import stored_budget
from optuna_costbo._ledger.units import charges_sampler_time
from optuna_costbo._ledger.units import cost_unit as _cost_unit
from optuna_costbo._optuna_compat import trial_constraints


COST_AXIS_TITLE = "Cumulative Cost"
BEST_VALUE_NAME = "Best Value"
HYPERVOLUME_NAME = "Hypervolume"
BUDGET_NAME = "Budget"
PLOT_TITLE = "Cost History Plot"
HYPERVOLUME_TITLE = "Hypervolume Cost History Plot"
SAMPLER_TIME_NOTE = "incl. sampler time"


@dataclass(frozen=True)
class CostHistory:
    """One study's finished trials in completion order; arrays of shape (n,)."""

    label: str  # legend label
    trial_numbers: np.ndarray
    states: tuple[TrialState, ...]  # COMPLETE, PRUNED or FAIL
    costs: np.ndarray  # what the ledger charged each trial
    cumulative_costs: np.ndarray
    values: np.ndarray  # NaN but for COMPLETE trials (and for all trials of a front)
    best_values: np.ndarray | None  # best feasible so far, or hypervolume; None with a target
    budget: float | None  # the budget line, if any
    cost_unit: str | None = None
    feasible: np.ndarray | None = None  # constraints all <= 0; None without constraints
    hypervolume: bool = False  # several objectives: best_values is the front's hypervolume
    sampler_costs: np.ndarray | None = None  # the sampler's seconds in costs, when charged

    @property
    def complete(self) -> np.ndarray:
        """The COMPLETE trials, (n,) bool."""
        return np.array([s == TrialState.COMPLETE for s in self.states], dtype=bool)

    @property
    def infeasible(self) -> np.ndarray:
        """The COMPLETE trials that break a constraint, (n,) bool."""
        if self.feasible is None:
            return np.zeros(len(self.states), dtype=bool)
        out: np.ndarray = self.complete & ~self.feasible
        return out


def completion_order(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """Finished trials by completion time, or by number if one lacks it (a hand-made trial)."""
    finished = [t for t in trials if t.state in FINISHED_STATES]
    if any(t.datetime_complete is None for t in finished):
        return sorted(finished, key=lambda t: t.number)
    return sorted(finished, key=lambda t: (t.datetime_complete, t.number))


def history_arrays(
    trials: Sequence[FrozenTrial],
    *,
    direction: StudyDirection | None,
    cost_attr: str = COST_ATTR,
    target: Callable[[FrozenTrial], float] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``(trial_numbers, costs, cumulative_costs, values, best_values)`` of the finished
    ``trials`` in completion order, each (n,); costs as the ledger charges them."""
    ordered = completion_order(trials)
    n = len(ordered)
    numbers = np.array([t.number for t in ordered], dtype=int)  # (n,)
    charge = charges_sampler_time(trials)
    costs = np.array([charged_cost(t, cost_attr, charge) for t in ordered], dtype=float)  # (n,)
    cumulative = np.cumsum(costs)  # (n,)
    values = np.full(n, np.nan)  # (n,)
    for i, trial in enumerate(ordered):
        if trial.state != TrialState.COMPLETE:
            continue
        value = target(trial) if target is not None else trial.value
        values[i] = np.nan if value is None else float(value)
    best: np.ndarray | None = None
    if target is None:
        # fmin/fmax skip NaN: non-COMPLETE and infeasible trials carry the best forward.
        counted = np.where(feasible_mask(ordered), values, np.nan)  # (n,)
        best = (np.fmax if direction == StudyDirection.MAXIMIZE else np.fmin).accumulate(counted)
    return numbers, costs, cumulative, values, best


def feasible_mask(trials: Sequence[FrozenTrial]) -> np.ndarray:
    """Which trials satisfy their constraints (all values <= 0), (n,) bool."""
    out: np.ndarray = np.array(
        [all(v <= 0.0 for v in (trial_constraints(t) or ())) for t in trials], dtype=bool
    )
    return out


def as_study_list(study_or_studies: optuna.Study | Sequence[optuna.Study]) -> list[optuna.Study]:
    if isinstance(study_or_studies, optuna.Study):
        return [study_or_studies]
    studies = list(study_or_studies)
    if not studies:
        raise ValueError("study_or_studies must be a Study or a non-empty sequence of studies")
    for study in studies:
        if not isinstance(study, optuna.Study):
            raise ValueError(
                "study_or_studies must be a Study or a sequence of Study objects, "
                f"got an element of type {type(study).__name__}"
            )
    return studies


def get_cost_histories(
    study_or_studies: optuna.Study | Sequence[optuna.Study],
    *,
    budget: float | None = None,
    cost_attr: str = COST_ATTR,
    target: Callable[[FrozenTrial], float] | None = None,
    labels: Sequence[str] | None = None,
    trials: Sequence[FrozenTrial] | None = None,
    cost_unit: str | None = None,
    reference_point: Sequence[float] | None = None,
) -> list[CostHistory]:
    """One :class:`CostHistory` per study, from one read of its trials (``trials``: the single
    study's, already read); the other arguments as in ``plot_cost_history``."""
    studies = as_study_list(study_or_studies)
    if labels is not None:
        labels = [str(label) for label in labels]
        if len(labels) != len(studies):
            raise ValueError(
                f"labels must have one entry per study: got {len(labels)} labels for "
                f"{len(studies)} studies"
            )
    if trials is not None and len(studies) != 1:
        raise ValueError("trials can only be given with a single study")
    if budget is not None:
        budget = validate_budget(budget)
    histories = []
    for i, study in enumerate(studies):
        study_trials = trials if trials is not None else storage_trials(study)
        ordered = completion_order(study_trials)
        front = target is None and len(study.directions) > 1
        numbers, costs, cumulative, values, best = history_arrays(
            study_trials,
            direction=study.direction if target is None and not front else None,
            cost_attr=cost_attr,
            target=(lambda t: math.nan) if front else target,
        )
        if front:
            best = hypervolume_history(ordered, study.directions, reference_point)
        by_number = {t.number: t.state for t in study_trials}
        sampler = costs - np.array([charged_cost(t, cost_attr, False) for t in ordered])  # (n,)
        constrained = any(trial_constraints(t) for t in ordered)
        histories.append(
            CostHistory(
                label=labels[i] if labels is not None else study.study_name,
                trial_numbers=numbers,
                states=tuple(by_number[int(n)] for n in numbers),
                costs=costs,
                cumulative_costs=cumulative,
                values=values,
                best_values=best,
                budget=budget if budget is not None else stored_budget(study),
                cost_unit=_cost_unit(
                    study_trials,
                    cost_attr,
                    cost_unit,
                    study._storage.get_study_user_attrs(study._study_id),
                ),
                feasible=feasible_mask(ordered) if constrained else None,
                hypervolume=front,
                sampler_costs=sampler if sampler.any() else None,
            )
        )
    return histories


def value_title(histories: Sequence[CostHistory], target_name: str) -> str:
    """The hypervolume's name when every history is a front's, else ``target_name``."""
    return HYPERVOLUME_NAME if histories and all(h.hypervolume for h in histories) else target_name


def plot_title(histories: Sequence[CostHistory]) -> str:
    return HYPERVOLUME_TITLE if value_title(histories, "") == HYPERVOLUME_NAME else PLOT_TITLE


def cost_axis_title(histories: Sequence[CostHistory]) -> str:
    notes = [figure_cost_unit(histories) or ""]
    if any(h.sampler_costs is not None for h in histories):
        notes.append(SAMPLER_TIME_NOTE)
    note = ", ".join(n for n in notes if n)
    return f"{COST_AXIS_TITLE} ({note})" if note else COST_AXIS_TITLE


def line_name(history: CostHistory) -> str:
    return HYPERVOLUME_NAME if history.hypervolume else BEST_VALUE_NAME


def figure_cost_unit(histories: Sequence[CostHistory]) -> str | None:
    units = {h.cost_unit for h in histories}
    return units.pop() if len(units) == 1 else None


def format_cost(value: float, unit: str | None) -> str:
    return f"{value:.4g} {unit}" if unit else f"{value:.4g}"


@dataclass(frozen=True)
class BudgetLine:
    """A budget line: shared (``study_index`` None, gray) or one study's (its color)."""

    budget: float
    study_index: int | None
    name: str


def budget_lines(histories: Sequence[CostHistory]) -> list[BudgetLine]:
    with_budget = [(i, h) for i, h in enumerate(histories) if h.budget is not None]
    budgets = {h.budget for _, h in with_budget}
    if len(budgets) <= 1:
        return [BudgetLine(b, None, BUDGET_NAME) for b in budgets if b is not None]
    return [
        BudgetLine(h.budget, i, f"{BUDGET_NAME} of {h.label}")
        for i, h in with_budget
        if h.budget is not None
    ]


def color_indices(study_index: int, n_studies: int, single_line: int = 1) -> tuple[int, int]:
    """Palette indices of a study's points and line, as Optuna's ``plot_optimization_history``:
    0 and ``single_line`` for one study, ``2i`` and ``2i + 1`` for study ``i`` of several."""
    if n_studies == 1:
        return 0, single_line
    return 2 * study_index, 2 * study_index + 1


def value_range(
    histories: Sequence[CostHistory], padding: float = 0.1
) -> tuple[float, float] | None:
    """The plotted values' range padded by ``padding`` of its span (plotly pads by the marker
    size only, hiding the best-value line on the axis); None below two distinct values."""
    arrays = [h.values for h in histories]
    arrays += [h.best_values for h in histories if h.best_values is not None]
    values = np.concatenate([a[np.isfinite(a)] for a in arrays]) if arrays else np.empty(0)
    if values.size == 0 or values.min() == values.max():
        return None
    low, high = float(values.min()), float(values.max())
    pad = padding * (high - low)
    return low - pad, high + pad
