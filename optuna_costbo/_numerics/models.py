"""The models of one suggestion, built in one place for both routes.

:func:`build_models` fits (the full route) or rebuilds from the last hyperparameters (the
quick route) the objective model, chooses the cost model (:func:`_cost_model`: the user's
known cost, else a GP on log cost, else none) and conditions the objective model on the
running trials (:func:`with_pending`, a kriging believer). A new kind of cost model is chosen
in :func:`_cost_model` and reaches both routes. Trials a pruner stopped enter the objective
model as censored observations when the request gives their bounds (:func:`_censored_model`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from optuna_costbo._numerics.acquisition.strategies import Choice
from optuna_costbo._numerics.budget_fit import budget_fit
from optuna_costbo._numerics.censored import impute_censored
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import PrunedCost
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.feasibility import feasible_rows
from optuna_costbo._numerics.feasibility import fit_constraints
from optuna_costbo._numerics.feasibility import with_completion
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.gp.model import standardization
from optuna_costbo._numerics.gp.subsets import model_subset
from optuna_costbo._numerics.request import CostData
from optuna_costbo._numerics.request import FitSchedule
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import Route
from optuna_costbo._numerics.request import WarmStart


__all__ = [
    "Models",
    "build_models",
    "cost_model_of",
    "finite_values",
    "with_pending",
    "working_set",
]

_FULL_ROUTE = Route()

# NOTE: noise floor of the log-cost model (standardized units): measured costs are noisy.
_COST_MIN_NOISE_VAR = 1e-4


@dataclass(frozen=True)
class Models:
    """The models of one suggestion, as :func:`build_models` makes them.

    Attributes:
        fitted: The objective model of the observations.
        model: ``fitted`` conditioned on the running trials (kriging believer).
        cost: The cost model, or ``None`` (not needed, or no costs yet).
        warm: The warm start for the next suggestion.
        X: The observations' points, (n, D).
        y: Their values, infinities replaced (see :func:`finite_values`), (n,).
        feasibility: The constraints' models and, under a hard budget, the probability of
            fitting the budget left; ``None`` without either.
        feasible: Which observations are feasible, (n,), or ``None`` without constraints.
    """

    fitted: GPModel
    model: GPModel
    cost: CostModel | None
    warm: WarmStart
    X: np.ndarray  # (n, D)
    y: np.ndarray  # (n,)
    feasibility: Feasibility | None = None
    feasible: np.ndarray | None = None  # (n,) bool, with constraints

    @property
    def best(self) -> float | None:
        """The incumbent: the smallest value, of a feasible observation with constraints
        (None while none is feasible).

        NOTE: noisy EI's plug-in incumbent (the smallest posterior mean at the observations,
        Letham et al. 2019) did not confirm on the noisy suite
        (benchmarks/results/noisy/report.md); the observed values set the bar."""
        values = self.y  # (n,)
        if self.feasible is None:
            return float(np.min(values))
        return float(np.min(values[self.feasible])) if self.feasible.any() else None

    def recommended(self, request: ProposalRequest) -> int | None:
        """The row of the observation with the best posterior mean of the objective: among the
        completed ones (not those a pruner stopped), feasible ones with constraints; None if
        there is none. Under noise it is a better guess of the best configuration than the
        best observed value, which favours lucky draws."""
        allowed = np.ones(len(self.y), dtype=bool)
        if request.stopped is not None:
            allowed &= ~request.stopped
        if self.feasible is not None:
            allowed &= self.feasible
        if not allowed.any():
            return None
        mean = self.fitted.predict_mean(self.X)  # (n,)
        return int(np.argmin(np.where(allowed, mean, np.inf)))

    def proposal(
        self,
        choice: Choice,
        request: ProposalRequest,
        best_log_rate: float | None = None,
        chosen_log_ei: float | None = None,
    ) -> Proposal:
        """The proposal of ``choice`` made with these models."""
        return Proposal(
            z=choice.z,
            value=choice.value,
            objective_model=self.model,
            cost_model=self.cost,
            warm=self.warm,
            message=choice.message,
            fitted=self.fitted,
            cost_data=request.cost_data,
            observed=(self.X, self.y),
            best_log_rate=best_log_rate,
            chosen_log_ei=chosen_log_ei,
            recommended=self.recommended(request),
        )


def working_set(
    X: np.ndarray, y: np.ndarray, rng: np.random.Generator, schedule: FitSchedule
) -> np.ndarray | None:
    """Indices of the observations a model is conditioned on, (m,): None (all of them) up to
    ``schedule.max_model_points``, then the working set of :func:`.gp.subsets.model_subset` (the
    best, the newest, the rest spread out farthest first). Hyperparameters are still fitted
    on all of them (on :func:`.gp.subsets.fit_subset`).

    NOTE(scale): past a few thousand observations the Cholesky factorization (O(n^3)) and
    every prediction (O(n) per point) dominate a suggestion: 35 s at 10,000 trials (D = 5)
    before this bound (docs/design-decisions.md, "Fits as the data grow").
    """
    if len(y) <= schedule.max_model_points:
        return None
    keep: np.ndarray = model_subset(y, schedule.max_model_points, rng, X)  # (m,)
    return keep


def finite_values(y: np.ndarray) -> np.ndarray:
    """Replace +-inf objective values by the largest / smallest finite ones (GPSampler's
    clip); +inf ones are then modelled as unknown where enough values are finite
    (:func:`_censoring`)."""
    finite = np.isfinite(y)
    if finite.all():
        return y
    if not finite.any():
        return np.zeros_like(y)
    out: np.ndarray = np.clip(y, y[finite].min(), y[finite].max())
    return out


def _fit(
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    warm: GPHyperparams | None,
    n_fits: int,
    rng: np.random.Generator,
    min_noise_var: float,
    schedule: FitSchedule,
    fixed_noise: bool = False,
    last_n: int = 0,
) -> tuple[GPModel, bool]:
    """The fitted model, and whether its hyperparameters were optimized (not kept)."""
    # NOTE: a warm start from the previous suggestion's hyperparameters makes most fits a few
    # L-BFGS-B iterations; every 5th fit adds a run from the default start so the fit can
    # leave a poor basin as data accumulate (Optuna's GPSampler fits from the last
    # hyperparameters alone, from its default only if that fails). Without a warm start: the
    # default and 2 random starts.
    n_restarts = 3 if warm is None else (1 if n_fits % 5 == 0 else 0)
    if warm is not None and warm.lengthscales.shape != (X.shape[1],):
        warm = None
        n_restarts = 3
    # NOTE: refit schedule. Past refit_from observations one more point hardly moves the
    # hyperparameters, and optimizing them is most of a suggestion's time: they are kept
    # until the data have grown by refit_growth (then optimized from the kept ones, with the
    # restarts of every 5th fit; docs/design-decisions.md, "Fits as the data grow").
    n = X.shape[0]
    optimize = (
        warm is None or n <= schedule.refit_from or n >= last_n * (1.0 + schedule.refit_growth)
    )
    model = fit_gp(
        X,
        y,
        rng=rng,
        n_restarts=n_restarts,
        min_noise_var=min_noise_var,
        fixed_noise=fixed_noise,
        warm_start=warm,
        max_points=schedule.max_fit_points,
        optimize=optimize,
        condition_on=working_set(X, y, rng, schedule),
    )
    return model, optimize


def _rebuild(
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    hyper: GPHyperparams | None,
    rng: np.random.Generator,
    min_noise_var: float,
    fixed_noise: bool,
    schedule: FitSchedule,
) -> GPModel:
    """A model with the hyperparameters ``hyper`` (one Cholesky factorization); without
    usable ones, fitted once without restarts."""
    keep = working_set(X, y, rng, schedule)  # (m,) or None: all
    if hyper is not None and hyper.lengthscales.shape == (X.shape[1],):
        if keep is None:
            return GPModel(X, y, hyper)
        mu, sd = standardization(y)
        return GPModel(X[keep], y[keep], hyper, y_mean=mu, y_std=sd)
    return fit_gp(
        X,
        y,
        rng=rng,
        n_restarts=0,
        min_noise_var=min_noise_var,
        fixed_noise=fixed_noise,
        max_points=schedule.max_fit_points,
        condition_on=keep,
    )


def _objective_model(
    request: ProposalRequest,
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    warm: WarmStart,
    rng: np.random.Generator,
    route: Route,
) -> tuple[GPModel, bool]:
    """The objective model of the route, and whether its hyperparameters were optimized."""
    if not route.quick:
        return _fit(
            X,
            y,
            warm.objective,
            warm.n_fits,
            rng,
            request.min_noise_var,
            request.schedule,
            request.deterministic,
            last_n=warm.objective_n,
        )
    if route.refit and warm.objective is not None:
        fitted = fit_gp(
            X,
            y,
            rng=rng,
            n_restarts=0,
            min_noise_var=request.min_noise_var,
            fixed_noise=request.deterministic,
            warm_start=warm.objective,
            max_points=request.schedule.max_fit_points,
            condition_on=working_set(X, y, rng, request.schedule),
        )
        return fitted, True
    fitted = _rebuild(
        X, y, warm.objective, rng, request.min_noise_var, request.deterministic, request.schedule
    )
    return fitted, warm.objective is None


def _censoring(request: ProposalRequest, failed: np.ndarray) -> np.ndarray | None:
    """The bounds of censored observations (n,), NaN where exact, -inf where the value is
    unknown (``failed``, (n,): +inf); None when every value is taken as exact (no bounds, or
    fewer than 2 exact observations to fit a model of them).

    NOTE(inf): a +inf value clipped to the largest finite one is a spike that kept the search
    away from its neighbourhood (an objective infinite on a small interval next to its
    minimum: no later proposal near it). It is a failure to avoid (a +1 label of the
    feasibility models, as a pruned trial's) and, for the objective model, no value at all.
    """
    lower = request.y_lower
    if failed.any():
        lower = np.full(len(failed), np.nan) if lower is None else lower.copy()
        lower[failed] = -np.inf
    if lower is None:
        return None
    censored = np.isfinite(lower) | np.isneginf(lower)  # (n,)
    if not censored.any() or int((~censored).sum()) < 2:
        return None
    return lower


def _censored_model(
    request: ProposalRequest,
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    lower: np.ndarray,  # (n,) finite: censored at this bound, -inf: unknown, NaN: exact
    warm: WarmStart,
    rng: np.random.Generator,
    route: Route,
) -> tuple[GPModel, bool, np.ndarray, int]:
    """The objective model with censored observations at their posterior means given their
    bounds (see :mod:`.censored`): hyperparameters fitted (or kept) on the exact
    observations, the model conditioned on all. Also whether the hyperparameters were
    optimized, the values the model sees (n,) and how many observations they were fitted on.

    NOTE: a parallel clash's reuse of the fits is skipped with censoring (the values seen
    are not the request's), so the fit is redone; clashes are rare.
    """
    censored = np.isfinite(lower) | np.isneginf(lower)  # (n,)
    exact = ~censored
    on_exact, optimized = _objective_model(request, X[exact], y[exact], warm, rng, route)
    seen = y.copy()  # (n,)
    seen[censored] = impute_censored(on_exact, X[censored], lower[censored])
    fitted = _rebuild(
        X,
        seen,
        on_exact.hyper,
        rng,
        request.min_noise_var,
        request.deterministic,
        request.schedule,
    )
    return fitted, optimized, seen, int(exact.sum())


def _cost_model(
    request: ProposalRequest, warm: WarmStart, rng: np.random.Generator, route: Route
) -> tuple[CostModel | None, int]:
    """The one place that chooses the cost model (None: no costs yet), and the observations
    when a fitted one's hyperparameters were last optimized.

    The user's known cost, else a GP on log(cost): fitted on the full route, rebuilt from the
    last hyperparameters on the quick one (none before a full route has fitted them).
    """
    if request.known_cost is not None:
        return request.known_cost, warm.cost_n
    data = request.cost_data
    if data is None or len(data.costs) == 0:
        return None, warm.cost_n
    log_costs = np.log(data.costs)  # (k,)
    if route.quick:
        if warm.cost is None:
            return None, warm.cost_n
        model = _rebuild(
            data.X, log_costs, warm.cost, rng, _COST_MIN_NOISE_VAR, False, request.schedule
        )
        return FittedLogCost(model), warm.cost_n
    model, optimized = _fit(
        data.X,
        log_costs,
        warm.cost,
        warm.n_fits,
        rng,
        _COST_MIN_NOISE_VAR,
        request.schedule,
        last_n=warm.cost_n,
    )
    return FittedLogCost(model), len(data.costs) if optimized else warm.cost_n


def with_pending(
    model: GPModel, X_running: np.ndarray | None, y_running: np.ndarray | None = None
) -> GPModel:
    """``model`` conditioned on the running trials' points (r, D): at what their reports say
    of their final values (``y_running``, (r,)) where finite, else at its own mean.

    NOTE: trials still running are pending points: a kriging believer conditions the model
    on its own mean there (hyperparameters fixed), which takes their EI to about zero, so
    parallel workers do not propose the same point. A running trial that has reported
    intermediate values is conditioned on its imputed final value instead: better news.
    """
    if X_running is not None:
        for i, x_r in enumerate(X_running):
            told = np.nan if y_running is None else float(y_running[i])
            value = told if np.isfinite(told) else float(model.predict(x_r[None, :])[0][0])
            model = model.condition_on(x_r, value)
    return model


def _with_pruning(
    cost: CostModel | None, fitted: GPModel, y: np.ndarray, request: ProposalRequest
) -> CostModel | None:
    """The cost model of full trials, or its expected cost under the study's pruning."""
    stats = request.pruning
    if cost is None or stats is None or stats.pruned_share <= 0.0:
        return cost
    threshold = float(np.quantile(y, 1.0 - stats.pruned_share))
    return PrunedCost(cost, fitted, threshold, stats.pruned_share, stats.run_fraction)


def build_models(
    request: ProposalRequest,
    rng: np.random.Generator,
    *,
    needs_cost: bool,
    route: Route = _FULL_ROUTE,
    reuse: Proposal | None = None,
) -> Models:
    """The objective model (conditioned on the running trials), the cost model if
    ``needs_cost``, and the next warm start, for ``route``.

    ``reuse``: an earlier proposal of the same suggestion (before a parallel clash); its fits
    are reused when the request has the same observations.
    """
    X = request.X  # (n, D)
    failed = np.isposinf(np.asarray(request.y, dtype=float))  # (n,)
    y = finite_values(np.asarray(request.y, dtype=float))  # (n,)
    warm = request.warm or WarmStart()
    lower = _censoring(request, failed)
    if (
        reuse is not None
        and lower is None
        and reuse.fitted is not None
        and _same_data(reuse, X, y, request.cost_data)
    ):
        # NOTE: a proposal repeated after a parallel clash: the data are the same, so are the
        # fits; only the pending points (the other trial's point) changed.
        fitted, cost, new_warm = reuse.fitted, reuse.cost_model, reuse.warm
        if request.known_cost is not None and needs_cost:
            cost = request.known_cost  # the current state (moving costs) may have changed
    else:
        if lower is None:
            fitted, optimized = _objective_model(request, X, y, warm, rng, route)
            fit_n = len(y)
        else:
            fitted, optimized, y, fit_n = _censored_model(request, X, y, lower, warm, rng, route)
        cost, cost_n = (
            _cost_model(request, warm, rng, route) if needs_cost else (None, warm.cost_n)
        )
        if route.quick:
            # NOTE(quick): the warm start is handed back unchanged (the next full suggestion
            # starts its fit from the last full one's and keeps its restart schedule), but
            # for a first fit or a refit of the objective model.
            new_warm = WarmStart(fitted.hyper, warm.cost, warm.n_fits) if optimized else warm
        else:
            fitted_cost = cost.model if isinstance(cost, FittedLogCost) else None
            new_warm = WarmStart(
                objective=fitted.hyper,
                cost=fitted_cost.hyper if fitted_cost is not None else warm.cost,
                n_fits=warm.n_fits + 1,
                objective_n=fit_n if optimized else warm.objective_n,
                cost_n=cost_n,
            )
    if reuse is None or cost is not reuse.cost_model:
        cost = _with_pruning(cost, fitted, y, request)
    model = with_pending(fitted, request.X_running, request.y_running)
    fit = budget_fit(request, cost)
    constraints = with_completion(request.constraints, request.stopped)  # (n, k) or None
    constraints = with_completion(constraints, failed)  # +inf: a failure, as a pruned trial
    if constraints is None:
        feasibility = None if fit is None else Feasibility([], fit)
        return Models(fitted, model, cost, new_warm, X, y, feasibility)
    feasibility = fit_constraints(X, constraints, rng, warm.constraints, restarts=not route.quick)
    new_warm = dataclasses.replace(new_warm, constraints=feasibility.hypers)
    feasible = feasible_rows(constraints)
    if fit is not None:
        feasibility = feasibility.with_budget(fit)
    return Models(fitted, model, cost, new_warm, X, y, feasibility, feasible)


def cost_model_of(request: ProposalRequest, rng: np.random.Generator) -> CostModel | None:
    """The cost model of ``request`` alone (the full route's choice, fitted from scratch
    without a warm start); None before anything predicts a cost."""
    return _cost_model(request, WarmStart(), rng, _FULL_ROUTE)[0]


def _same_data(proposal: Proposal, X: np.ndarray, y: np.ndarray, costs: CostData | None) -> bool:
    """Whether ``proposal``'s models were fitted to exactly these observations."""
    observed, before = proposal.observed, proposal.cost_data
    if observed is None or not (np.array_equal(observed[0], X) and np.array_equal(observed[1], y)):
        return False
    if before is None or costs is None:
        return before is costs
    return np.array_equal(before.X, costs.X) and np.array_equal(before.costs, costs.costs)
