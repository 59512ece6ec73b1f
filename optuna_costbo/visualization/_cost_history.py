"""Data behind the cost-history plots: best value so far (the hypervolume, for several
objectives) against cumulative cost.

Plain arrays only: the plotly and matplotlib front ends draw them, the dashboard saves them,
and the tests check them against hand computations. No plotting library is imported here.
"""

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
from optuna_costbo._ledger import BUDGET_ATTR
from optuna_costbo._ledger import COST_ATTR
from optuna_costbo._ledger import FINISHED_STATES
from optuna_costbo._ledger import charged_cost
from optuna_costbo._ledger import charges_sampler_time
from optuna_costbo._ledger import cost_unit as _cost_unit
from optuna_costbo._ledger import storage_trials
from optuna_costbo._ledger import validate_budget
from optuna_costbo._optuna_compat import trial_constraints


COST_AXIS_TITLE = "Cumulative Cost"
BEST_VALUE_NAME = "Best Value"
HYPERVOLUME_NAME = "Hypervolume"
BUDGET_NAME = "Budget"
PLOT_TITLE = "Cost History Plot"
HYPERVOLUME_TITLE = "Hypervolume Cost History Plot"
SAMPLER_TIME_NOTE = "incl. sampler time"

# NOTE: labels are capitalized as in Optuna's plots ("Objective Value", "Best Value"), which
# these plots sit next to; a study's label is added as "... of <label>" when overlaying.


@dataclass(frozen=True)
class CostHistory:
    """One study's finished trials in completion order, with their costs and values.

    Attributes:
        label: Legend label (the study name unless the caller gave labels).
        trial_numbers: Trial numbers, in completion order. Shape ``(n,)``, int.
        states: Each trial's state (COMPLETE, PRUNED or FAIL). Length ``n``.
        costs: What the ledger charged each trial, the sampler's time included when it
            counts against the budget. Shape ``(n,)``.
        cumulative_costs: Summed cost up to and including each trial. Shape ``(n,)``.
        values: Objective (or ``target``) value of COMPLETE trials, NaN for the others.
            Shape ``(n,)``.
        best_values: Best value among the COMPLETE (and feasible, with constraints) trials so
            far, respecting the study's direction; NaN before the first such trial. Shape
            ``(n,)``. ``None`` when a ``target`` was given (no direction is known for it, as
            in Optuna's plots).
        budget: The budget line's position, or ``None`` for no line.
        cost_unit: The unit of the costs (``"s"`` for measured wall-clock time, or the one
            the caller named), or ``None`` when unknown.
        feasible: Which trials satisfy their constraints (all values <= 0), shape ``(n,)``;
            ``None`` when no trial has constraints.
        hypervolume: A multi-objective study without ``target``: ``best_values`` is the
            hypervolume of the front so far (:mod:`optuna_costbo._front`), and ``values`` are
            NaN (a trial has no one value to draw).
        sampler_costs: The sampler's seconds within each of ``costs``, shape ``(n,)``;
            ``None`` when the sampler's time is not charged (or is zero throughout).
    """

    label: str
    trial_numbers: np.ndarray
    states: tuple[TrialState, ...]
    costs: np.ndarray
    cumulative_costs: np.ndarray
    values: np.ndarray
    best_values: np.ndarray | None
    budget: float | None
    cost_unit: str | None = None
    feasible: np.ndarray | None = None
    hypervolume: bool = False
    sampler_costs: np.ndarray | None = None

    @property
    def complete(self) -> np.ndarray:
        """Mask of the COMPLETE trials, the ones with a value. Shape ``(n,)``, bool."""
        return np.array([s == TrialState.COMPLETE for s in self.states], dtype=bool)

    @property
    def infeasible(self) -> np.ndarray:
        """Mask of the COMPLETE trials that break a constraint, (n,) bool (none without
        constraints)."""
        if self.feasible is None:
            return np.zeros(len(self.states), dtype=bool)
        out: np.ndarray = self.complete & ~self.feasible
        return out


def completion_order(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """Finished trials (COMPLETE, PRUNED, FAIL) sorted by completion time.

    Trials are sorted by ``datetime_complete`` (ties by number). If any finished trial has
    no completion time (a hand-made :class:`~optuna.trial.FrozenTrial`), all are sorted by
    number instead, so that the order stays total and reproducible.
    """
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
    """Costs, values and best values of ``trials`` in completion order.

    Each finished trial costs what the ledger charges it (``_ledger.charged_cost`` under
    ``_ledger.charges_sampler_time``), so the curve ends at the ledger's spent.
    COMPLETE, PRUNED and FAIL trials all add cost; only COMPLETE ones have a value and can
    improve the best. Unfinished trials are left out.

    Args:
        trials: Trials of one study, in any order.
        direction: The study's direction, used for the best value; ignored with ``target``.
        cost_attr: The trial user attr holding the cost.
        target: A function of a COMPLETE trial giving the value to plot instead of the
            objective value. With a target no best value is computed (``None`` is returned).

    Returns:
        ``(trial_numbers, costs, cumulative_costs, values, best_values)``, each of shape
        ``(n,)`` for the ``n`` finished trials; ``best_values`` is ``None`` with a target.

    Example:

        .. code-block:: python

            import optuna
            from optuna.study import StudyDirection
            from optuna_costbo.visualization._cost_history import history_arrays

            study = optuna.create_study()
            for cost, value in [(2.0, 3.0), (1.0, 1.0), (4.0, 2.0)]:
                study.add_trial(optuna.create_trial(value=value, user_attrs={"cost": cost}))
            numbers, costs, cumulative, values, best = history_arrays(
                study.trials, direction=StudyDirection.MINIMIZE
            )
            # cumulative == [2, 3, 7], best == [3, 1, 1]
    """
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
        # NOTE: fmin/fmax ignore NaN, so PRUNED and FAIL trials carry the best forward and
        # the curve is NaN (not drawn) until the first COMPLETE trial. An infeasible trial
        # (constraints) does not count, as in Optuna's study.best_trial.
        counted = np.where(feasible_mask(ordered), values, np.nan)  # (n,)
        if direction == StudyDirection.MAXIMIZE:
            best = np.fmax.accumulate(counted) if n else counted.copy()  # (n,)
        else:
            best = np.fmin.accumulate(counted) if n else counted.copy()  # (n,)
    return numbers, costs, cumulative, values, best


def feasible_mask(trials: Sequence[FrozenTrial]) -> np.ndarray:
    """Which trials satisfy their constraints (every value <= 0; a trial without
    constraints does), (n,) bool."""
    out: np.ndarray = np.array(
        [all(v <= 0.0 for v in (trial_constraints(t) or ())) for t in trials], dtype=bool
    )
    return out


def study_budget(study: optuna.Study) -> float | None:
    """The budget stored as the study user attr ``cost_budget``, if it is a usable number."""
    raw = study.user_attrs.get(BUDGET_ATTR)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    value = float(raw)
    return value if math.isfinite(value) and value > 0.0 else None


def as_study_list(study_or_studies: optuna.Study | Sequence[optuna.Study]) -> list[optuna.Study]:
    """One study or a sequence of studies, as a non-empty list (or a ValueError)."""
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
    """Read each study's trials once and return one :class:`CostHistory` per study.

    Args:
        study_or_studies: A study or a sequence of studies to overlay.
        budget: The budget line's position for every study; ``None`` reads each study's
            ``cost_budget`` user attr (no line for a study without one).
        cost_attr: The trial user attr holding the cost.
        target: Value to plot instead of the objective value (then no best value).
        labels: One legend label per study; default the study names.
        trials: The trials of the (single) study, if the caller already holds them: then
            storage is not read for trials.
        cost_unit: The unit of the costs (``"$"``, ``"kWh"``). ``None``: the study user attr
            ``cost_unit`` if set, else ``"s"`` for a study whose costs were all measured
            wall-clock time, unknown otherwise.
        reference_point: For a multi-objective study without ``target``, the hypervolume's
            reference point in the study's units; ``None``: the worst value of each
            objective over its trials plus a tenth of its range (:mod:`optuna_costbo._front`).

    Returns:
        One history per study, in the order given.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo.visualization._cost_history import get_cost_histories

            study = optuna.create_study(study_name="demo")
            study.add_trial(optuna.create_trial(value=1.0, user_attrs={"cost": 2.0}))
            (history,) = get_cost_histories(study, budget=10.0)
            # history.cumulative_costs == [2.0], history.budget == 10.0
    """
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
        # The sampler's share of each charge: the charge less the objective's own cost.
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
                budget=budget if budget is not None else study_budget(study),
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
    """The y axis title: "Hypervolume" when every history is a front's, else
    ``target_name``."""
    return HYPERVOLUME_NAME if histories and all(h.hypervolume for h in histories) else target_name


def plot_title(histories: Sequence[CostHistory]) -> str:
    """The plot's title: the hypervolume's when every history is a front's."""
    return HYPERVOLUME_TITLE if value_title(histories, "") == HYPERVOLUME_NAME else PLOT_TITLE


def cost_axis_title(histories: Sequence[CostHistory]) -> str:
    """``"Cumulative Cost (s, incl. sampler time)"``: the unit, and the sampler's time if
    charged."""
    notes = [figure_cost_unit(histories) or ""]
    if any(h.sampler_costs is not None for h in histories):
        notes.append(SAMPLER_TIME_NOTE)
    note = ", ".join(n for n in notes if n)
    return f"{COST_AXIS_TITLE} ({note})" if note else COST_AXIS_TITLE


def line_name(history: CostHistory) -> str:
    """The legend name of a history's line: "Best Value", or "Hypervolume" for a front."""
    return HYPERVOLUME_NAME if history.hypervolume else BEST_VALUE_NAME


def figure_cost_unit(histories: Sequence[CostHistory]) -> str | None:
    """The unit shared by all ``histories``, or ``None`` if unknown or mixed."""
    units = {h.cost_unit for h in histories}
    return units.pop() if len(units) == 1 else None


def format_cost(value: float, unit: str | None) -> str:
    """A cost for an annotation: ``"6 s"``, ``"12.5 $"``, ``"6"``."""
    return f"{value:.4g} {unit}" if unit else f"{value:.4g}"


@dataclass(frozen=True)
class BudgetLine:
    """A budget line to draw.

    Attributes:
        budget: Its position on the cost axis.
        study_index: The study it belongs to (its color), or ``None`` for the one budget
            shared by every study with a budget (gray).
        name: Its legend name: ``"Budget"``, or ``"Budget of <label>"``.
    """

    budget: float
    study_index: int | None
    name: str


def budget_lines(histories: Sequence[CostHistory]) -> list[BudgetLine]:
    """One gray line if all budgets agree, else one line per study in the study's color."""
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
    """Palette indices of a study's points and of its best-value line.

    As in Optuna's ``plot_optimization_history``: one study has blue points and a red line
    (palette colors 0 and ``single_line``: 1 in plotly's palette, 3 in tab10), and study ``i``
    of several has colors ``2i`` and ``2i + 1``, so that a line never has its points' color.
    """
    if n_studies == 1:
        return 0, single_line
    return 2 * study_index, 2 * study_index + 1


def value_range(
    histories: Sequence[CostHistory], padding: float = 0.1
) -> tuple[float, float] | None:
    """The y range of the plotted values, padded by ``padding`` of their span on both sides.

    NOTE: plotly pads an autorange by the marker size only, so the best-value line (which
    runs along the lowest points when minimizing) sat on the x axis, all the more in the
    dashboard's small chart. ``None`` when fewer than two distinct finite values are plotted
    (the plotting library's own range is fine then).

    Returns:
        ``(low, high)``, or ``None``.
    """
    arrays = [h.values for h in histories]
    arrays += [h.best_values for h in histories if h.best_values is not None]
    values = np.concatenate([a[np.isfinite(a)] for a in arrays]) if arrays else np.empty(0)
    if values.size == 0 or values.min() == values.max():
        return None
    low, high = float(values.min()), float(values.max())
    pad = padding * (high - low)
    return low - pad, high + pad
