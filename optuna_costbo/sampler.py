"""CostRolloutSampler: cost-aware Bayesian optimization under a budget, as an Optuna sampler.

This module is glue: it gathers trials from storage, hands encoded arrays to
:func:`optuna_costbo.policy.propose`, and writes costs and the ledger back to storage.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
import datetime
import inspect
import logging
import math
import threading
import time
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.samplers import RandomSampler
from optuna.samplers._base import _INDEPENDENT_SAMPLING_WARNING_TEMPLATE
from optuna.search_space import intersection_search_space
from optuna.storages._heartbeat import get_heartbeat_thread
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_costbo import budget as ledger_mod
from optuna_costbo._space import SpaceBridge
from optuna_costbo.policy import ACQUISITIONS
from optuna_costbo.policy import KnownCost
from optuna_costbo.policy import RolloutSettings
from optuna_costbo.policy import WarmStart
from optuna_costbo.policy import needs_cost_model
from optuna_costbo.policy import propose


_logger = logging.getLogger(__name__)

_CHART_INTERVAL_SECONDS = 2.0

PROPOSED_ATTR = "costbo:proposed_params"
"""Trial system attr: the parameters the sampler proposed for a running trial."""

CHECKED_ATTR = "costbo:proposal_checked"
"""Trial system attr, set once the proposal in PROPOSED_ATTR is final (checked for clashes)."""

# NOTE: how long a proposal waits for a later trial that holds the same point to say whether it
# keeps it (that trial is between two storage calls; it only takes long if its worker died),
# and how many times one trial proposes again after clashes (three workers clashing at once).
_CLASH_WAIT_SECONDS = 30.0
_CLASH_POLL_SECONDS = 0.02
_MAX_CLASH_ROUNDS = 4

# NOTE: the smallest cost recorded for a measured trial, so that log(cost) is always defined
# even for an objective that returns in less than the clock's resolution.
_MIN_MEASURED_COST = 1e-6


class CostRolloutSampler(BaseSampler):
    """Cost-aware Bayesian optimization that stops the study when its cost budget is spent.

    Each trial's cost is the user attr ``cost_attr`` if the objective reports one (money,
    energy, simulated seconds; see :func:`optuna_costbo.report_cost`), else the trial's
    wall-clock duration less the sampler's own time. The ledger (budget, spent, remaining) is
    recomputed from storage and stored as study user attrs, so several workers sharing a
    study share one budget. Once the spent cost reaches ``budget``, ``study.optimize`` returns
    by itself; trials that a worker starts after that are pruned at their first suggestion.

    After ``n_startup_trials`` quasi-random (scrambled Sobol) trials, a Gaussian process with a
    Matern-5/2 ARD kernel models the objective, a second one models log(cost), and the chosen
    acquisition is maximized over the encoded search space (floats, log floats, integers,
    steps, one-hot categoricals). Parameters outside the search space shared by all completed
    trials (conditional or dynamic ones) are sampled by ``independent_sampler``.

    Example:

        .. code-block:: python

            import time

            import optuna
            from optuna_costbo import CostRolloutSampler


            def objective(trial):
                x = trial.suggest_float("x", -1.0, 1.0)
                time.sleep(0.1 * (1.0 + x))  # expensive on the right
                return (x - 0.5) ** 2


            study = optuna.create_study(sampler=CostRolloutSampler(budget=2.0, seed=0))
            study.optimize(objective)  # no n_trials: returns once 2 s of trial time are spent

    Args:
        budget: Total budget in cost units (seconds by default). A positive finite number.
        acquisition: ``"rollout"`` (default: the paper's nonmyopic CMDP rollout, which rolls
            out EI per unit cost and then EI over the remaining budget), ``"ei"`` (log
            expected improvement, ignores cost), ``"eipu"`` (EI per unit predicted cost) or
            ``"ei-cool"`` (EI / cost^alpha with alpha = remaining budget over total budget:
            cost-aware early, plain EI late).
        horizon: Rollout steps h (1 = EI over affordable points). Used by ``"rollout"``.
        n_samples: Quasi-Monte Carlo trajectories per candidate. Used by ``"rollout"``.
        cost_fn: A known cost, used instead of a fitted cost model and charged to the budget
            when the objective reports none: ``cost_fn(params) -> float``, or, for costs that
            depend on where you come from (moving sensors, reconfiguring a machine),
            ``cost_fn(params, previous_params) -> float`` with ``previous_params`` the
            parameters of the latest earlier trial (``None`` for the first). Values must be
            finite and non-negative.
        n_startup_trials: Quasi-random trials before the models take over; ``None`` means
            ``2 * (number of parameters + 1)``, at least 4. They count against the budget.
        cost_attr: Name of the trial user attr holding a trial's cost. The objective may set
            it; otherwise the sampler records the measured wall-clock cost there, where
            optuna-dashboard shows and sorts it.
        seed: Seed for all of the sampler's randomness.
        independent_sampler: Sampler for parameters outside the relative search space;
            defaults to :class:`~optuna.samplers.RandomSampler`.
        warn_independent_sampling: Log a warning when a parameter is sampled independently
            after the startup trials.
        charge_sampler_time: Also charge the sampler's own computation time to the budget.
            Turn it on when the budget is wall-clock you pay for as a whole (a job's time
            limit, a cloud bill) and the objective is cheap enough that suggestion time
            matters. Off by default: the budget then measures the objective alone.
        dashboard_chart: Keep a "Best value vs cumulative cost" chart for optuna-dashboard
            up to date: redrawn after a trial at most every 2 seconds, and when the budget is
            spent. ``None`` (default): when optuna-dashboard and plotly are installed and the
            storage is not in memory.
    """

    def __init__(
        self,
        budget: float,
        *,
        acquisition: str = "rollout",
        horizon: int = 2,
        n_samples: int = 64,
        cost_fn: Callable[..., float] | None = None,
        n_startup_trials: int | None = None,
        cost_attr: str = "cost",
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        warn_independent_sampling: bool = True,
        charge_sampler_time: bool = False,
        dashboard_chart: bool | None = None,
    ) -> None:
        self._budget = ledger_mod.validate_budget(budget)
        for name, value, low in (("horizon", horizon, 1), ("n_samples", n_samples, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self._cost_fn_arity = _cost_fn_arity(cost_fn)
        self._cost_fn = cost_fn
        self._rollout = RolloutSettings(horizon=horizon, n_samples=n_samples)
        if acquisition not in ACQUISITIONS:
            raise ValueError(
                f"acquisition must be one of {', '.join(map(repr, ACQUISITIONS))}, "
                f"got {acquisition!r}"
            )
        if n_startup_trials is not None and (
            isinstance(n_startup_trials, bool)
            or not isinstance(n_startup_trials, int)
            or n_startup_trials < 0
        ):
            raise ValueError(
                f"n_startup_trials must be None or a non-negative int, got {n_startup_trials!r}"
            )
        if not isinstance(cost_attr, str) or not cost_attr:
            raise ValueError(f"cost_attr must be a non-empty str, got {cost_attr!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"seed must be None or an int, got {seed!r}")
        self._acquisition = acquisition
        self._n_startup_trials = n_startup_trials
        self._cost_attr = cost_attr
        self._seed = seed
        self._rng = np.random.default_rng(seed)
        self._sobol_seed = int(self._rng.integers(2**31))
        self._independent_sampler = independent_sampler or RandomSampler(seed=seed)
        self._warn_independent_sampling = warn_independent_sampling
        self._charge_sampler_time = charge_sampler_time
        self._dashboard_chart = dashboard_chart
        self._lock = threading.RLock()
        self._warm: dict[tuple[Any, ...], WarmStart] = {}
        self._sampler_seconds: dict[int, float] = {}
        self._skipped: set[int] = set()
        self._pending: dict[int, dict[str, Any]] = {}  # trial id -> params proposed for it
        self._chart_times: dict[int, float] = {}  # study id -> time of the last chart redraw

    # -- pickling: a lock cannot be pickled ------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -- public API -------------------------------------------------------------------------

    @property
    def budget(self) -> float:
        """The total budget, in cost units."""
        return self._budget

    def ledger(self, study: optuna.Study) -> ledger_mod.Ledger:
        """The study's budget ledger, recomputed from storage now."""
        return ledger_mod.study_ledger(
            study, self._budget, self._cost_attr, self._charge_sampler_time
        )

    def remaining_budget(self, study: optuna.Study) -> float:
        """Budget minus the cost of every finished trial of ``study`` (may be negative).

        Under ask-and-tell there is no optimize loop to stop: check this before ``ask``.
        """
        return self.ledger(study).remaining

    def reseed_rng(self) -> None:
        with self._lock:
            self._rng = np.random.default_rng()
        self._independent_sampler.reseed_rng()

    # -- BaseSampler ------------------------------------------------------------------------

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        space = intersection_search_space(complete)
        return {name: dist for name, dist in space.items() if not dist.single()}

    def sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        _check_single_objective(study)
        if not search_space:
            return {}
        start = time.perf_counter()
        try:
            self._raise_if_skipped(study, trial)
            return self._sample_relative(study, trial, search_space)
        finally:
            self._add_sampler_seconds(trial, time.perf_counter() - start)

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        _check_single_objective(study)
        start = time.perf_counter()
        try:
            self._raise_if_skipped(study, trial)
            if self._warn_independent_sampling:
                n_complete = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
                if n_complete >= self._startup_count(1):
                    _logger.warning(
                        _INDEPENDENT_SAMPLING_WARNING_TEMPLATE.format(
                            param_name=param_name,
                            trial_number=trial.number,
                            independent_sampler_name=type(self._independent_sampler).__name__,
                            sampler_name=type(self).__name__,
                            fallback_reason=(
                                "the parameter is not in the search space shared by all "
                                "completed trials (conditional or dynamic search space)"
                            ),
                        )
                    )
            return self._independent_sampler.sample_independent(
                study, trial, param_name, param_distribution
            )
        finally:
            self._add_sampler_seconds(trial, time.perf_counter() - start)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._independent_sampler.before_trial(study, trial)
        if self._wants_dashboard(study):
            # Import plotly now, while no heartbeat is running: the first import takes
            # seconds, and after_trial runs after Optuna has stopped the trial's heartbeat.
            import optuna_dashboard  # noqa: F401
            import plotly.graph_objects  # noqa: F401

            import optuna_costbo.dashboard  # noqa: F401
        ledger = self.ledger(study)
        if ledger_mod.stored_budget(study) != self._budget:
            ledger_mod.write_ledger(study, ledger)
        if not ledger.exhausted:
            return
        if _in_optimize_loop(study):
            # Another worker (or an earlier session) spent the budget: end this optimize loop
            # and prune the new trial at its first suggestion, before the objective's work.
            _stop(study)
            with self._lock:
                self._skipped.add(trial._trial_id)
        else:
            _logger.warning(
                f"The cost budget of study {study.study_name!r} is spent "
                f"({ledger.spent:.6g} of {ledger.budget:.6g}); trial {trial.number} "
                "was asked for anyway (ask-and-tell: check sampler.remaining_budget(study))."
            )

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._independent_sampler.after_trial(study, trial, state, values)
        # NOTE: Optuna has stopped this trial's heartbeat by now; keep it beating while the
        # cost, the ledger and the chart are written, or another worker's fail_stale_trials
        # could fail a trial that finished fine.
        with get_heartbeat_thread(trial._trial_id, study._storage):
            self._after_trial(study, trial, state, values)

    def _after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        storage, trial_id = study._storage, trial._trial_id
        with self._lock:
            seconds = self._sampler_seconds.pop(trial_id, 0.0)
            self._skipped.discard(trial_id)
            self._pending.pop(trial_id, None)
        storage.set_trial_system_attr(trial_id, ledger_mod.SAMPLER_SECONDS_ATTR, seconds)

        # A trial cut short because the budget was already spent costs nothing; any other
        # trial gets its cost recorded, after which the ledger counts it as spent although
        # its state is stored only after this method (see compute_ledger).
        skipped = bool(trial.system_attrs.get(ledger_mod.SKIPPED_ATTR))
        error = None if skipped else self._record_cost(study, trial, seconds)
        ledger = self.ledger(study)
        spent = ledger.spent
        ledger_mod.write_ledger(study, ledger)
        # Last writer wins: a worker that computed an older ledger may have written after us.
        # Read back once and store the newer figure if it moved.
        again = self.ledger(study)
        if again.spent != spent:
            ledger_mod.write_ledger(study, again)
            spent = again.spent
        if self._wants_dashboard(study) and self._chart_due(study, spent):
            from optuna_costbo.dashboard import update_dashboard

            update_dashboard(
                study,
                cost_attr=self._cost_attr,
                budget=self._budget,
                trial=trial,
                state=state,
                values=values,
            )
        if spent >= self._budget:
            _stop(study)
        if error is not None:
            raise error

    def _chart_due(self, study: optuna.Study, spent: float) -> bool:
        """Redraw the chart at most every few seconds, and always when the budget is spent.

        NOTE: a redraw reads every trial and writes the figure (tens of ms on SQLite, growing
        with the number of trials); for cheap objectives that would dominate the loop.
        """
        now = time.monotonic()
        with self._lock:
            last = self._chart_times.get(study._study_id, -math.inf)
            if spent < self._budget and now - last < _CHART_INTERVAL_SECONDS:
                return False
            self._chart_times[study._study_id] = now
        return True

    def _wants_dashboard(self, study: optuna.Study) -> bool:
        if self._dashboard_chart is False:
            return False
        if self._dashboard_chart is None:
            if isinstance(study._storage, optuna.storages.InMemoryStorage):
                return False
            import importlib.util

            return all(
                importlib.util.find_spec(m) is not None for m in ("optuna_dashboard", "plotly")
            )
        return True

    # -- internals --------------------------------------------------------------------------

    def _record_cost(
        self, study: optuna.Study, trial: FrozenTrial, sampler_seconds: float
    ) -> ValueError | None:
        """Store the trial's cost as a numeric user attr; return an error for a bad report."""
        storage, trial_id = study._storage, trial._trial_id
        raw = trial.user_attrs.get(self._cost_attr)
        if raw is not None:
            try:
                ledger_mod.validate_cost(raw, name=f"the reported cost {self._cost_attr!r}")
                storage.set_trial_system_attr(trial_id, ledger_mod.COST_SOURCE_ATTR, "reported")
                return None
            except ValueError as exc:
                error = ValueError(
                    f"{exc}. Trial {trial.number} was charged its wall-clock time instead; "
                    f"its reported value is kept in system attr "
                    f"{ledger_mod.INVALID_COST_ATTR!r}."
                )
                storage.set_trial_system_attr(trial_id, ledger_mod.INVALID_COST_ATTR, repr(raw))
        else:
            error = None
        if self._cost_fn is not None and error is None:
            params = dict(trial.params)
            args = (
                (params,)
                if self._cost_fn_arity == 1
                else (params, self._previous_params(ledger_mod.storage_trials(study), trial))
            )
            cost = float(_checked_costs([self._cost_fn(*args)], f"trial {trial.number}")[0])
            source = "cost_fn"
        else:
            start = trial.datetime_start or datetime.datetime.now()
            elapsed = (datetime.datetime.now() - start).total_seconds()
            cost = max(elapsed - sampler_seconds, _MIN_MEASURED_COST)
            source = "wall_clock"
        storage.set_trial_user_attr(trial_id, self._cost_attr, cost)
        storage.set_trial_system_attr(trial_id, ledger_mod.COST_SOURCE_ATTR, source)
        return error

    def _startup_count(self, n_params: int) -> int:
        if self._n_startup_trials is not None:
            return self._n_startup_trials
        return max(4, 2 * (n_params + 1))

    def _raise_if_skipped(self, study: optuna.Study, trial: FrozenTrial) -> None:
        with self._lock:
            skipped = trial._trial_id in self._skipped
        if skipped:
            # Marked only now, when the trial is really cut short: a trial that never calls
            # the sampler (all parameters fixed or enqueued) runs and is charged as usual.
            study._storage.set_trial_system_attr(trial._trial_id, ledger_mod.SKIPPED_ATTR, True)
            raise optuna.TrialPruned("the cost budget is spent; this trial was not run")

    def _add_sampler_seconds(self, trial: FrozenTrial, seconds: float) -> None:
        with self._lock:
            self._sampler_seconds[trial._trial_id] = (
                self._sampler_seconds.get(trial._trial_id, 0.0) + seconds
            )

    def _sample_relative(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        search_space: dict[str, BaseDistribution],
    ) -> dict[str, Any]:
        bridge = SpaceBridge(search_space)
        # The lock covers reading the trials too: a thread that proposes meanwhile must see
        # this one's proposal as pending, and this one must see its.
        with self._lock:
            trials = study.get_trials(deepcopy=False)
            params = self._propose_params(study, trial, bridge, trials)
            if params is None:
                return self._startup_params(bridge, trial.number)
            self._pending[trial._trial_id] = params
        # Other workers see the proposal at once, before Optuna stores the parameters one by
        # one as the objective suggests them. Every proposal is written before the other
        # workers' proposals are read, so of two workers proposing the same point at the same
        # moment, at least the one that wrote last sees the other (see _must_repropose).
        storage = study._storage
        storage.set_trial_system_attr(trial._trial_id, PROPOSED_ATTR, params)
        for _ in range(_MAX_CLASH_ROUNDS):
            if not self._must_repropose(study, trial, params):
                break
            # Same data, same maximizer: propose again with the other trial as pending.
            with self._lock:
                trials = study.get_trials(deepcopy=False)
                params = self._propose_params(study, trial, bridge, trials) or params
                self._pending[trial._trial_id] = params
            storage.set_trial_system_attr(trial._trial_id, PROPOSED_ATTR, params)
        storage.set_trial_system_attr(trial._trial_id, CHECKED_ATTR, True)
        return params

    def _must_repropose(
        self, study: optuna.Study, trial: FrozenTrial, params: dict[str, Any]
    ) -> bool:
        """Whether another running trial holds ``params`` and ``trial`` is the one to move.

        The rule does not depend on timing. A later trial that proposed the same point moves
        if it saw this trial's proposal, and it says whether it did by marking its own final
        proposal (CHECKED_ATTR); so this trial moves when the other one is earlier, or later
        but kept the point (it wrote first and read before this trial wrote), or holds the
        point without proposing it (enqueued or fixed parameters). Waits go only from earlier
        to later trials, so they cannot form a cycle.
        """
        for t in ledger_mod.storage_trials(study):
            if t.state != TrialState.RUNNING or t._trial_id == trial._trial_id:
                continue
            if not _holds(t, params):
                continue
            if t.number < trial.number or PROPOSED_ATTR not in t.system_attrs:
                return True
            if self._later_trial_keeps(study, t, params):
                return True
        return False

    def _later_trial_keeps(
        self, study: optuna.Study, later: FrozenTrial, params: dict[str, Any]
    ) -> bool:
        """Wait until ``later`` finalized its proposal; whether it still holds ``params``."""
        deadline = time.monotonic() + _CLASH_WAIT_SECONDS
        while True:
            t = study._storage.get_trial(later._trial_id)
            if t.state != TrialState.RUNNING:
                # Failed or pruned: the point is free again; completed: it is taken.
                return t.state == TrialState.COMPLETE and _holds(t, params)
            if t.system_attrs.get(CHECKED_ATTR):
                return _holds(t, params)
            if time.monotonic() > deadline:
                # Its worker is stuck or dead: assume it keeps the point.
                return True
            time.sleep(_CLASH_POLL_SECONDS)

    def _propose_params(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        bridge: SpaceBridge,
        trials: list[FrozenTrial],
    ) -> dict[str, Any] | None:
        """The model's proposal for ``trial``; None while the startup design is not done."""
        complete = [t for t in trials if t.state == TrialState.COMPLETE and bridge.holds(t)]
        if len(complete) < self._startup_count(len(bridge.names)):
            return None

        sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
        X = bridge.encode_trials(complete)  # (n, D)
        y = sign * np.array([t.value for t in complete], dtype=float)  # (n,)

        X_cost = np.empty((0, bridge.codec.dim))
        costs = np.empty(0)
        known = None
        if needs_cost_model(self._acquisition) and self._cost_fn is None:
            X_cost, costs = self._cost_data(bridge, trials)
        elif self._cost_fn is not None:
            known = self._known_cost(bridge, trials, trial)
        X_running = self._pending_points(bridge, trials, trial)  # (r, D) or None

        ledger = ledger_mod.compute_ledger(
            trials, self._budget, self._cost_attr, self._charge_sampler_time
        )
        key = (
            study._study_id,
            tuple((n, repr(d)) for n, d in zip(bridge.names, bridge.distributions, strict=True)),
        )
        proposal = propose(
            bridge.codec,
            X,
            y,
            X_cost,
            costs,
            acquisition=self._acquisition,
            rng=self._rng,
            remaining=ledger.remaining,
            budget=self._budget,
            warm=self._warm.get(key),
            X_running=X_running,
            known_cost=known,
            rollout=self._rollout,
        )
        self._warm[key] = proposal.warm
        if proposal.message is not None:
            _logger.warning(f"Trial {trial.number}: {proposal.message}")
        return bridge.decode(proposal.z)

    def _pending_points(
        self, bridge: SpaceBridge, trials: list[FrozenTrial], trial: FrozenTrial
    ) -> np.ndarray | None:
        """Encoded points of the other running trials (r, D), or None if there are none.

        A running trial's point is what it has stored, completed by what a sampler proposed
        for it (this one in memory, or any worker through the trial's system attrs).
        """
        with self._lock:
            pending = dict(self._pending)
        points = []
        for t in trials:
            if t.state != TrialState.RUNNING or t._trial_id == trial._trial_id:
                continue
            merged = _point_of(t, pending.get(t._trial_id))
            if bridge.holds_params(merged):
                points.append(merged)
        return bridge.encode_params(points) if points else None

    def _cost_data(
        self, bridge: SpaceBridge, trials: list[FrozenTrial]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Encoded points (k, D) and costs (k,) of every priced finished trial in the space."""
        priced = [
            t
            for t in trials
            if t.state in ledger_mod.FINISHED_STATES
            and not t.system_attrs.get(ledger_mod.SKIPPED_ATTR)
            and bridge.holds(t)
        ]
        cost_list = [ledger_mod.objective_cost(t, self._cost_attr) for t in priced]
        keep = [i for i, c in enumerate(cost_list) if c > 0.0 and math.isfinite(c)]
        if not keep:
            return np.empty((0, bridge.codec.dim)), np.empty(0)
        return bridge.encode_trials([priced[i] for i in keep]), np.array(
            [cost_list[i] for i in keep]
        )

    def _previous_params(
        self, trials: list[FrozenTrial], trial: FrozenTrial
    ) -> dict[str, Any] | None:
        """Parameters of the latest trial before ``trial``: where a moving cost starts from."""
        earlier = [
            t
            for t in trials
            if t.number < trial.number
            and t.state in (*ledger_mod.FINISHED_STATES, TrialState.RUNNING)
            and not t.system_attrs.get(ledger_mod.SKIPPED_ATTR)
        ]
        return dict(max(earlier, key=lambda t: t.number).params) if earlier else None

    def _known_cost(
        self, bridge: SpaceBridge, trials: list[FrozenTrial], trial: FrozenTrial
    ) -> KnownCost:
        """The user's cost_fn as a function of box points."""
        cost_fn = self._cost_fn
        assert cost_fn is not None
        if self._cost_fn_arity == 1:

            def single(Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
                params = bridge.decode_many(Z)
                return _checked_costs([cost_fn(p) for p in params], "these parameters")

            return KnownCost(fn=single)

        previous = self._previous_params(trials, trial)

        def first(Z: np.ndarray) -> np.ndarray:  # (m, D) -> (m,)
            params = bridge.decode_many(Z)
            return _checked_costs([cost_fn(p, previous) for p in params], "these parameters")

        def pair(Z_from: np.ndarray, Z_to: np.ndarray) -> np.ndarray:  # (k, D), (m, D) -> (k, m)
            sources, targets = bridge.decode_many(Z_from), bridge.decode_many(Z_to)
            rows = [[cost_fn(q, p) for q in targets] for p in sources]
            return _checked_costs(rows, "these parameters").reshape(len(sources), len(targets))

        origin = None
        if previous is not None and bridge.holds_params(previous):
            origin = bridge.encode_params([previous])[0]  # (D,)
        return KnownCost(fn=first, pair_fn=pair, origin=origin)

    def _startup_params(self, bridge: SpaceBridge, trial_number: int) -> dict[str, Any]:
        # NOTE: the trial number indexes one scrambled Sobol sequence, so workers sharing a
        # study take distinct points of the same low-discrepancy design.
        n = 1 << max(trial_number, 1).bit_length()
        points = bridge.codec.sobol_points(n, seed=self._sobol_seed)  # (n, D)
        return bridge.decode(points[trial_number % n])


def _point_of(trial: FrozenTrial, proposed: dict[str, Any] | None = None) -> dict[str, Any]:
    """A running trial's point: its stored params over what was proposed for it.

    ``proposed`` is this process's own record, if any; else the trial's PROPOSED_ATTR.
    """
    return {**(proposed or trial.system_attrs.get(PROPOSED_ATTR) or {}), **trial.params}


def _holds(trial: FrozenTrial, params: dict[str, Any]) -> bool:
    """Whether ``trial`` holds or was proposed exactly ``params``."""
    other = _point_of(trial)
    return bool(params) and all(other.get(k) == v for k, v in params.items())


def _cost_fn_arity(cost_fn: Callable[..., float] | None) -> int:
    """1 for ``cost_fn(params)``, 2 for ``cost_fn(params, previous_params)``; 0 for None."""
    if cost_fn is None:
        return 0
    if not callable(cost_fn):
        raise ValueError(f"cost_fn must be callable or None, got {cost_fn!r}")
    try:
        params = inspect.signature(cost_fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if any(p.kind == p.VAR_POSITIONAL for p in params) or len(positional) == 2:
        return 2
    if len(positional) == 1:
        return 1
    raise ValueError(
        "cost_fn must take (params) or (params, previous_params); got a function with "
        f"{len(positional)} required positional arguments"
    )


def _checked_costs(values: list[Any], what: str) -> np.ndarray:
    """Costs from the user's cost_fn as an array, >= 0 and finite, or a clear ValueError."""
    try:
        costs = np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"cost_fn must return numbers; got {values[:3]!r}... for {what}"
        ) from None
    bad = ~np.isfinite(costs) | (costs < 0.0)
    if bad.any():
        raise ValueError(
            f"cost_fn must return non-negative finite numbers; got {costs[bad][0]!r} for {what}"
        )
    # NOTE: a state-dependent cost is 0 for staying put; a tiny floor keeps EI / cost finite.
    out: np.ndarray = np.maximum(costs, _MIN_MEASURED_COST)
    return out


def _check_single_objective(study: optuna.Study) -> None:
    if len(study.directions) > 1:
        raise ValueError(
            "CostRolloutSampler supports single-objective studies only; this study has "
            f"{len(study.directions)} objectives."
        )


def _root_study(study: optuna.Study) -> optuna.Study:
    """The user's study behind HyperbandPruner's per-bracket view of it."""
    while isinstance(getattr(study, "_study", None), optuna.Study):
        study = study._study  # type: ignore[attr-defined]
    return study


def _in_optimize_loop(study: optuna.Study) -> bool:
    return bool(_root_study(study)._thread_local.in_optimize_loop)


def _stop(study: optuna.Study) -> None:
    """Stop the optimize loop if there is one (``study.stop`` raises under ask-and-tell)."""
    root = _root_study(study)
    if not root._thread_local.in_optimize_loop:
        return
    try:
        root.stop()
    except RuntimeError:
        pass
