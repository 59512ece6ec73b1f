"""A progress bar over the cost budget, as an Optuna callback.

Optuna's own progress bar knows ``n_trials`` and ``timeout`` only; a study run by
:class:`~optuna_costbo.CostRolloutSampler` has neither, and ends when its cost budget is spent.
:class:`CostProgressBar` shows that budget filling up. ``study.optimize(...,
show_progress_bar=True)`` without ``n_trials`` or ``timeout`` only gets Optuna's warning
"Progress bar won't be displayed because n_trials and timeout are None." (from
``optuna/progress_bar.py``); :func:`hint_cost_progress_bar` points such a call to
:class:`CostProgressBar`.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import sys
import threading
from types import FrameType
from typing import IO
from typing import Any

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo._front import front_size_and_hypervolume
from optuna_costbo._ledger import BUDGET_ATTR
from optuna_costbo._ledger import COST_ATTR
from optuna_costbo._ledger import STOP_REASON_ATTR
from optuna_costbo._ledger import charges_sampler_time
from optuna_costbo._ledger import compute_ledger
from optuna_costbo._ledger import cost_unit as _cost_unit
from optuna_costbo._ledger import imported_rule
from optuna_costbo._ledger import storage_trials
from optuna_costbo._ledger import stored_budget
from optuna_costbo._ledger import validate_budget
from optuna_costbo._logging import get_logger
from optuna_costbo._optuna_compat import optimize_call_locals


__all__ = ["CostProgressBar", "hint_cost_progress_bar"]

_logger = get_logger(__name__)

PROGRESS_EXTRA_HINT = 'pip install "optuna-costbo[progress]"'

PROGRESS_BAR_HINT = (
    "Optuna's progress bar counts n_trials or timeout, and this study runs until its cost "
    "budget is spent: for a bar over the budget, pass callbacks=[CostProgressBar()] to "
    "study.optimize (from optuna_costbo.progress import CostProgressBar; "
    f"{PROGRESS_EXTRA_HINT})."
)
"""The hint :func:`hint_cost_progress_bar` logs."""

_BAR_FORMAT = (
    "{{desc}}: {{percentage:3.0f}}%|{{bar}}| {{n:.4g}}/{{total:.4g}}{unit} "
    "[{{elapsed}}<{{remaining}}{{postfix}}]"
)


class CostProgressBar:
    """A tqdm progress bar whose total is the cost budget, advanced after each trial.

    Pass it as a callback: after each finished trial it recomputes the spent cost from
    storage (the same ledger as the sampler: COMPLETE, PRUNED and FAIL trials all count, so
    the bar is right with several workers sharing the study), moves the bar to it (capped at
    the budget), and shows the best value so far, the number of finished trials and any overrun
    of the budget (spent beyond it, as the study attr ``cost_overrun`` has it). It closes
    itself once the spent cost reaches the budget; later calls do nothing. Call :meth:`close`
    (or use it as a context manager) if the optimization ends before that.

    Args:
        budget: The bar's total, in cost units. ``None`` reads the study's ``cost_budget``
            user attr (stored by :class:`~optuna_costbo.CostRolloutSampler`) at the first call.
        cost_attr: The trial user attr holding each trial's cost (the sampler's
            ``cost_attr``).
        unit: The unit printed after the numbers (``"$"``, ``"kWh"``; ``""`` for none).
            ``None`` (default): the study user attr ``cost_unit`` if set, else ``"s"`` when
            the trials' costs are measured wall-clock time, none when the objective reports
            them or a ``cost_fn`` gives them.
        desc: Text in front of the bar.
        file: Where tqdm writes; default ``sys.stderr``. Works on a non-tty (log files, CI):
            each state is written once.
        **tqdm_kwargs: Other keyword arguments for :class:`tqdm.tqdm` (``ncols``, ``leave``,
            ``disable``, ...).

    While the bar is open, Optuna's log lines ("Trial 3 finished ...") are written with
    ``tqdm.write`` to the stream they went to, so that they print above the bar instead of
    breaking into it (Optuna's own progress bar does the same); Optuna's handler is put back
    when the bar closes.

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
            study.optimize(objective, callbacks=[CostProgressBar(unit="$")])
            # Cost: 100%|██████████| 10/10 $ [00:00<00:00, best=1.84e-5, trials=7]
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
        self._line_open = False  # whether the bar's last frame awaits a newline
        self._log_handlers: tuple[logging.Handler, logging.Handler] | None = None
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
                self._drawn = self._line_open = True

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
        self._drawn = self._line_open = True
        if not self._bar.disable:  # tqdm(disable=True) draws nothing to keep clear of
            self._route_optuna_logs(tqdm)

    def _route_optuna_logs(self, tqdm: Any) -> None:
        """Send Optuna's log lines through ``tqdm.write`` while the bar is open."""
        root = logging.getLogger("optuna")
        default = getattr(optuna.logging, "_default_handler", None)
        # Not attached: disabled by the user, or Optuna's own bar has already rerouted it.
        if not isinstance(default, logging.StreamHandler) or default not in root.handlers:
            return
        handler = _BarLogHandler(self, tqdm, default.stream)
        handler.setLevel(default.level)
        handler.setFormatter(default.formatter)
        root.addHandler(handler)
        root.removeHandler(default)
        self._log_handlers = (handler, default)

    def _restore_optuna_logs(self) -> None:
        if self._log_handlers is None:
            return
        handler, default = self._log_handlers
        self._log_handlers = None
        root = logging.getLogger("optuna")
        if handler in root.handlers:
            root.removeHandler(handler)
            root.addHandler(default)

    def _close_locked(self) -> None:
        if self._closed:
            return
        self._closed = True
        bar = self._bar
        if bar is not None:
            if self._drawn and bar.leave is not False:
                # NOTE: tqdm's close() draws the bar once more before its newline. The state
                # on screen is current already, and a file that keeps every frame (a log, CI)
                # would show the final line twice; only the newline is wanted.
                bar.display = lambda *args, **kwargs: True
            bar.close()
            self._line_open = False
        self._restore_optuna_logs()


class _BarLogHandler(logging.Handler):
    """Writes Optuna's log records to their stream without breaking into an open bar.

    On a terminal, ``tqdm.write`` clears the bar, writes the line and redraws the bar. A file
    (a log, CI) keeps every frame, so a redraw would repeat a stale state there: the bar's line
    is ended with a newline instead, and the next update draws the new state.
    """

    def __init__(self, owner: CostProgressBar, tqdm: Any, stream: IO[str]) -> None:
        super().__init__()
        self._owner = owner
        self._tqdm = tqdm
        self._stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            owner, bar = self._owner, self._owner._bar
            same_stream = bar is not None and getattr(bar, "fp", None) == self._stream
            if same_stream and not _isatty(self._stream):
                prefix = "\n" if owner._line_open else ""
                owner._line_open = False
                self._stream.write(f"{prefix}{message}\n")
                self.flush()
            else:
                self._tqdm.write(message, file=self._stream)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def flush(self) -> None:
        with self.lock or contextlib.nullcontext():
            if hasattr(self._stream, "flush"):
                self._stream.flush()


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def hint_cost_progress_bar(study: optuna.Study) -> bool:
    """Log, once per process, a pointer to :class:`CostProgressBar` if Optuna's bar was refused.

    ``study.optimize(objective, show_progress_bar=True)`` without ``n_trials`` and ``timeout``,
    the way a study with a cost budget is run, gets Optuna's warning "Progress bar won't be
    displayed because n_trials and timeout are None." and no bar. Called while ``study`` is
    being optimized (from a sampler's ``before_trial``, or from the objective), this finds
    that ``optimize`` call on the stack and, if it is such a call, logs
    :data:`PROGRESS_BAR_HINT` as a warning. It never raises.

    Args:
        study: The study being optimized.

    Returns:
        Whether the hint was logged by this call.
    """
    global _hinted
    with _hint_lock:
        if _hinted:
            return False
        try:
            refused = _optuna_bar_refused(study)
        except Exception:  # a hint must never break an optimization
            return False
        if not refused:
            return False
        _hinted = True
    _logger.warning(PROGRESS_BAR_HINT)
    return True


_hint_lock = threading.Lock()
_hinted = False


def _optuna_bar_refused(study: optuna.Study) -> bool:
    """Whether an ``optimize`` call of ``study`` on a stack asked for Optuna's bar in vain."""
    # NOTE: with n_jobs > 1 the trials run in pool threads, and the optimize call is on the
    # stack of the thread that called it, so every thread's stack is searched.
    # NOTE: no garbage collection during sys._current_frames(): on CPython <= 3.11 a collection
    # there that frees a threading.local (every optuna.Study holds one) deadlocks the process
    # (python/cpython#106883; seen here as a hang of the sampler contract tests).
    collecting = gc.isenabled()
    gc.disable()
    try:
        frames = sys._current_frames()
    finally:
        if collecting:
            gc.enable()
    stacks: list[FrameType | None] = [sys._getframe(1), *frames.values()]
    local = optimize_call_locals(study, stacks)
    if local is None:
        return False
    return bool(
        local.get("show_progress_bar")
        and local.get("n_trials") is None
        and local.get("timeout") is None
    )


def _best_value(trials: list[FrozenTrial], direction: StudyDirection) -> float | None:
    values = [
        t.value
        for t in trials
        if t.state == TrialState.COMPLETE and t.value is not None and not math.isnan(t.value)
    ]
    if not values:
        return None
    return max(values) if direction == StudyDirection.MAXIMIZE else min(values)
