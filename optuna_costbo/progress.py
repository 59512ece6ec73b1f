"""A progress bar over the cost budget, as an Optuna callback.

Optuna's own progress bar knows ``n_trials`` and ``timeout`` only; a study run by
:class:`~optuna_costbo.CostRolloutSampler` has neither, and ends when its cost budget is spent.
:class:`CostProgressBar` shows that budget filling up.
"""

from __future__ import annotations

import math
import threading
from typing import IO
from typing import Any

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo import budget as ledger_mod


__all__ = ["CostProgressBar"]

PROGRESS_EXTRA_HINT = 'pip install "optuna-costbo[progress]"'

_BAR_FORMAT = (
    "{desc}: {percentage:3.0f}%|{bar}| {n:.4g}/{total:.4g} [{elapsed}<{remaining}{postfix}]"
)


class CostProgressBar:
    """A tqdm progress bar whose total is the cost budget, advanced after each trial.

    Pass it as a callback: after each finished trial it recomputes the spent cost from
    storage (the same ledger as the sampler: COMPLETE, PRUNED and FAIL trials all count, so
    the bar is right with several workers sharing the study), moves the bar to it (capped at
    the budget), and shows the best value so far and the number of finished trials. It closes
    itself once the spent cost reaches the budget; later calls do nothing. Call :meth:`close`
    (or use it as a context manager) if the optimization ends before that.

    Args:
        budget: The bar's total, in cost units. ``None`` reads the study's ``cost_budget``
            user attr (stored by :class:`~optuna_costbo.CostRolloutSampler`) at the first call.
        cost_attr: The trial user attr holding each trial's cost (the sampler's
            ``cost_attr``).
        charge_sampler_time: Count the sampler's own time, as the sampler option of the same
            name; pass the sampler's value so that the bar shows the sampler's ledger.
        desc: Text in front of the bar.
        file: Where tqdm writes; default ``sys.stderr``. Works on a non-tty (log files, CI).
        **tqdm_kwargs: Other keyword arguments for :class:`tqdm.tqdm` (``ncols``, ``leave``,
            ``disable``, ...).

    Raises:
        ImportError: tqdm is not installed (``pip install "optuna-costbo[progress]"``).
        ValueError: ``budget`` is not a positive finite number.

    Example:

        .. code-block:: python

            import optuna
            from optuna_costbo import CostRolloutSampler, report_cost
            from optuna_costbo.progress import CostProgressBar


            def objective(trial):
                x = trial.suggest_float("x", 0.0, 1.0)
                report_cost(trial, 1.0 + x)
                return (x - 0.3) ** 2


            sampler = CostRolloutSampler(budget=10.0, n_startup_trials=10, seed=0)
            study = optuna.create_study(sampler=sampler)
            study.optimize(objective, callbacks=[CostProgressBar()])
            # Cost: 100%|██████████| 10/10 [00:00<00:00, best=1.84e-5, trials=7]
    """

    def __init__(
        self,
        budget: float | None = None,
        *,
        cost_attr: str = "cost",
        charge_sampler_time: bool = False,
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
        self._budget = None if budget is None else ledger_mod.validate_budget(budget)
        self._cost_attr = cost_attr
        self._charge_sampler_time = charge_sampler_time
        self._desc = desc
        self._file = file
        self._tqdm_kwargs = tqdm_kwargs
        self._bar: Any = None
        self._closed = False
        self._lock = threading.Lock()
        self.spent = 0.0
        """Spent cost at the latest update (not capped at the budget)."""
        self.best_value: float | None = None
        """Best objective value among COMPLETE trials at the latest update."""
        self.n_trials = 0
        """Number of finished trials at the latest update."""

    @property
    def budget(self) -> float | None:
        """The bar's total: the given budget, or the study's once the first trial finished."""
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
                self._budget = ledger_mod.stored_budget(study)
                if self._budget is None:
                    raise ValueError(
                        f"CostProgressBar has no budget: study {study.study_name!r} has no "
                        f"{ledger_mod.BUDGET_ATTR!r} user attr (it is stored by "
                        "CostRolloutSampler); pass CostProgressBar(budget=...)"
                    )
            trials = ledger_mod.storage_trials(study)  # the one storage read per update
            ledger = ledger_mod.compute_ledger(
                trials, self._budget, self._cost_attr, self._charge_sampler_time
            )
            self.spent = ledger.spent
            self.n_trials = ledger.n_finished
            if len(study.directions) == 1:
                self.best_value = _best_value(trials, study.direction)
            bar = self._ensure_bar()
            postfix: dict[str, Any] = {}
            if self.best_value is not None:
                postfix["best"] = self.best_value
            postfix["trials"] = self.n_trials
            bar.set_postfix(postfix, refresh=False)
            # Set the position and redraw once (bar.update would redraw before the postfix).
            bar.n = min(ledger.spent, self._budget)
            bar.refresh()
            if ledger.exhausted:
                self._close_locked()

    def close(self) -> None:
        """Close the bar (idempotent). Later calls of the callback do nothing."""
        with self._lock:
            self._close_locked()

    def __enter__(self) -> CostProgressBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _ensure_bar(self) -> Any:
        if self._bar is None:
            # NOTE: tqdm.auto picks a notebook widget in Jupyter, which ignores ``file``.
            if self._file is None:
                from tqdm.auto import tqdm
            else:
                from tqdm import tqdm

            kwargs: dict[str, Any] = {
                "total": self._budget,
                "desc": self._desc,
                "bar_format": _BAR_FORMAT,
                "dynamic_ncols": self._file is None,
            }
            if self._file is not None:
                kwargs["file"] = self._file
            kwargs.update(self._tqdm_kwargs)
            self._bar = tqdm(**kwargs)
        return self._bar

    def _close_locked(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()


def _best_value(trials: list[FrozenTrial], direction: StudyDirection) -> float | None:
    values = [
        t.value
        for t in trials
        if t.state == TrialState.COMPLETE and t.value is not None and not math.isnan(t.value)
    ]
    if not values:
        return None
    return max(values) if direction == StudyDirection.MAXIMIZE else min(values)
