"""The progress bar: a tqdm bar whose total is the cost budget, moved to the ledger's spent."""

from __future__ import annotations

import math
import threading
from typing import IO
from typing import Any

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._front import front_size_and_hypervolume
from optuna_costbo._ledger.costs import validate_budget
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_ATTR
from optuna_costbo._ledger.keys import STOP_REASON_ATTR
from optuna_costbo._ledger.ledger import compute_ledger
from optuna_costbo._ledger.ledger import imported_rule
from optuna_costbo._ledger.ledger import storage_trials
from optuna_costbo._ledger.ledger import stored_budget
from optuna_costbo._ledger.units import charges_sampler_time
from optuna_costbo._ledger.units import cost_unit as _cost_unit
from optuna_costbo.progress._log_routing import BarLogRoute
from optuna_costbo.progress.hint import OPEN_BARS
from optuna_costbo.progress.hint import PROGRESS_EXTRA_HINT


__all__ = ["CostProgressBar"]

_BAR_FORMAT = (
    "{{desc}}: {{percentage:3.0f}}%|{{bar}}| {{n:.4g}}/{{total:.4g}}{unit} "
    "[{{elapsed}}<{{remaining}}{{postfix}}]"
)


class CostProgressBar:
    """A tqdm progress bar over the cost budget, moved after each trial to the spent of the
    sampler's ledger (every worker's trials), with the best value, trials and overrun.

    It closes itself once the budget is spent; call :meth:`close` (or use it as a context
    manager) if the optimization ends before. Optuna's log lines print above it.

    Args:
        budget: The bar's total; ``None`` reads the study's ``cost_budget`` user attr.
        cost_attr: The trial user attr holding costs (the sampler's ``cost_attr``).
        unit: The unit after the numbers (``"$"``; ``""`` for none). ``None``: the study user
            attr ``cost_unit``, else ``"s"`` for measured wall-clock costs.
        desc: Text in front of the bar.
        file: Where tqdm writes (default ``sys.stderr``); a non-tty gets each state once.
        **tqdm_kwargs: Other :class:`tqdm.tqdm` arguments (``ncols``, ``leave``, ...).

    Raises:
        ImportError: tqdm is not installed (``pip install "optuna-costbo[progress]"``).
        ValueError: ``budget`` is not a positive finite number.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo import CostRolloutSampler, report_cost
            from optuna_costbo.progress import CostProgressBar


            def objective(trial):
                report_cost(trial, 1.0)
                return trial.suggest_float("x", 0.0, 1.0) ** 2


            study = optuna.create_study(sampler=CostRolloutSampler(budget=10.0, seed=0))
            study.optimize(objective, callbacks=[CostProgressBar(unit="$")])
    """

    def __init__(
        self,
        budget: float | None = None,
        *,
        cost_attr: str = COST_ATTR,
        unit: str | None = None,
        desc: str = "Cost",
        file: IO[str] | None = None,
        **tqdm_kwargs: Any,
    ) -> None:
        try:
            import tqdm  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                f"CostProgressBar needs tqdm, which is not installed: {PROGRESS_EXTRA_HINT}"
            ) from exc
        self._budget = None if budget is None else validate_budget(budget)
        self._cost_attr = cost_attr
        self._unit = unit
        self._desc = desc
        self._file = file
        self._tqdm_kwargs = tqdm_kwargs
        self._bar: Any = None
        self._drawn = False  # whether the bar's current state is on screen
        self._route: BarLogRoute | None = None  # Optuna's log lines, while the bar is open
        self._closed = False
        self._lock = threading.Lock()
        # At the latest update: the spent cost (not capped), best value and finished trials.
        self.spent = 0.0
        self.best_value: float | None = None
        self.n_trials = 0
        OPEN_BARS.add(self)

    @property
    def budget(self) -> float | None:
        """The bar's total: the given budget, or the study's after the first trial."""
        return self._budget

    @property
    def closed(self) -> bool:
        """Whether the bar is closed (budget spent or :meth:`close` called)."""
        return self._closed

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Update the bar after ``trial`` finished (the Optuna callback protocol)."""
        with self._lock:
            if self._closed:
                return
            if self._budget is None:
                self._budget = stored_budget(study)
                if self._budget is None:
                    raise ValueError(
                        f"CostProgressBar has no budget: study {study.study_name!r} has no "
                        f"{BUDGET_ATTR!r} user attr (it is stored by "
                        "CostRolloutSampler); pass CostProgressBar(budget=...)"
                    )
            trials = storage_trials(study)  # the one storage read per update
            ledger = compute_ledger(
                trials,
                self._budget,
                self._cost_attr,
                charges_sampler_time(trials),
                imported=imported_rule(study, trials),
            )
            self.spent = ledger.spent
            self.n_trials = ledger.n_finished
            postfix: dict[str, Any] = {}
            if len(study.directions) == 1:
                self.best_value = _best_value(trials, study.direction)
                if self.best_value is not None:
                    postfix["best"] = self.best_value
            else:
                size, volume = front_size_and_hypervolume(trials, study.directions)
                if size:
                    postfix["front"] = size
                if volume is not None:
                    postfix["hv"] = volume
            postfix["trials"] = self.n_trials
            if ledger.n_imported:
                postfix["imported"] = ledger.n_imported  # added trials, not charged
            if ledger.overrun > 0.0:
                postfix["overrun"] = ledger.overrun  # the bar stops at the budget
            position = min(ledger.spent, self._budget)
            if self._bar is None:
                attrs = study._storage.get_study_user_attrs(study._study_id)
                unit = _cost_unit(trials, self._cost_attr, self._unit, attrs)
                self._open(position, postfix, unit)  # tqdm draws the first state itself
            else:
                self._bar.set_postfix(postfix, refresh=False)
                self._bar.n = position  # bar.update would redraw before the postfix
                self._drawn = False
            stopped = STOP_REASON_ATTR in study._storage.get_study_user_attrs(study._study_id)
            if ledger.exhausted or stopped:  # spent, or stopped short of it (a hard budget)
                self._close_locked()  # draws the final state, once
            elif not self._drawn:
                self._bar.refresh()
                self._drawn = True
                if self._route is not None:
                    self._route.line_open = True

    def close(self) -> None:
        """Close the bar (idempotent). Later calls of the callback do nothing."""
        with self._lock:
            self._close_locked()

    def __enter__(self) -> CostProgressBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _open(self, position: float, postfix: dict[str, Any], unit: str | None) -> None:
        # NOTE: tqdm.auto picks a notebook widget in Jupyter, which ignores ``file``.
        if self._file is None:
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm

        suffix = "" if not unit else " " + unit.replace("{", "{{").replace("}", "}}")
        kwargs: dict[str, Any] = {
            "total": self._budget,
            "initial": position,
            "postfix": postfix,
            "desc": self._desc,
            "bar_format": _BAR_FORMAT.format(unit=suffix),
            "dynamic_ncols": self._file is None,
        }
        if self._file is not None:
            kwargs["file"] = self._file
        kwargs.update(self._tqdm_kwargs)
        self._bar = tqdm(**kwargs)
        self._drawn = True
        if not self._bar.disable:  # tqdm(disable=True) draws nothing to keep clear of
            self._route = BarLogRoute(self._bar, tqdm)

    def _close_locked(self) -> None:
        if self._closed:
            return
        self._closed = True
        OPEN_BARS.discard(self)
        bar = self._bar
        if bar is not None:
            if self._drawn and bar.leave is not False:
                # NOTE: tqdm's close() redraws before its newline: a log would show it twice.
                bar.display = lambda *args, **kwargs: True
            bar.close()
        if self._route is not None:
            self._route.close()


def _best_value(trials: list[FrozenTrial], direction: StudyDirection) -> float | None:
    values = [
        t.value
        for t in trials
        if t.state == TrialState.COMPLETE and t.value is not None and not math.isnan(t.value)
    ]
    if not values:
        return None
    return max(values) if direction == StudyDirection.MAXIMIZE else min(values)
