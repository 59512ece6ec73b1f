"""The models of one suggestion, fitted in one place for every route: the objective (censored
values imputed), the cost model's one choice, the constraints and the hard budget's fit."""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass

import numpy as np

from optuna_costbo._numerics.acquisition.strategies import Choice
from optuna_costbo._numerics.budget_fit import BudgetFit
from optuna_costbo._numerics.budget_fit import budget_fit
from optuna_costbo._numerics.censored import censoring
from optuna_costbo._numerics.censored import finite_values
from optuna_costbo._numerics.censored import impute_censored
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.cost_model import FittedLogCost
from optuna_costbo._numerics.cost_model import with_pruning
from optuna_costbo._numerics.feasibility import CONSTRAINT_MIN_NOISE_VAR
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.feasibility import feasible_rows
from optuna_costbo._numerics.feasibility import with_completion
from optuna_costbo._numerics.gp.fit import fit_gp
from optuna_costbo._numerics.gp.hyperparams import GPHyperparams
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.gp.model import standardization
from optuna_costbo._numerics.gp.model import with_pending
from optuna_costbo._numerics.gp.subsets import model_subset
from optuna_costbo._numerics.request import CostData
from optuna_costbo._numerics.request import FitSchedule
from optuna_costbo._numerics.request import Proposal
from optuna_costbo._numerics.request import ProposalRequest
from optuna_costbo._numerics.request import Route
from optuna_costbo._numerics.request import WarmStart


_FULL_ROUTE = Route()

# NOTE: noise floor of the log-cost model (standardized units): measured costs are noisy.
_COST_MIN_NOISE_VAR = 1e-4


@dataclass(frozen=True)
class Models:
    """The models of one suggestion: ``fitted`` (the objective's), ``model`` (it conditioned on
    the running trials), the cost model, the next warm start, the observations X (n, D) and y
    (n,) (infinities replaced), the feasibility (constraints and the budget fit) and which
    observations are feasible (n,)."""

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
        """The incumbent: the smallest observed value, of a feasible observation with
        constraints (None while none is); docs/design-decisions.md on noisy EI's plug-in."""
        if self.feasible is None:
            return float(np.min(self.y))
        return float(np.min(self.y[self.feasible])) if self.feasible.any() else None

    @property
    def budget_fit(self) -> BudgetFit | None:
        """Under a hard budget, whether a trial's cost fits the budget left; built once."""
        return None if self.feasibility is None else self.feasibility.budget

    def recommended(self, request: ProposalRequest) -> int | None:
        """The row of the completed (feasible) observation with the best posterior mean: under
        noise a better guess of the best configuration than the best value observed."""
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


def build_models(
    request: ProposalRequest,
    rng: np.random.Generator,
    *,
    needs_cost: bool,
    route: Route = _FULL_ROUTE,
    reuse: Proposal | None = None,
) -> Models:
    """The objective model (conditioned on the running trials), the cost model if ``needs_cost``,
    the constraints' and the budget's, the next warm start, for ``route``; ``reuse``: this
    suggestion's proposal before a parallel clash, its fits kept while the data are the same."""
    X = request.X  # (n, D)
    failed = np.isposinf(np.asarray(request.y, dtype=float))  # (n,)
    y = finite_values(np.asarray(request.y, dtype=float))  # (n,)
    warm = request.warm or WarmStart()
    lower = censoring(request.y_lower, failed)  # (n,) or None
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
        # NOTE: censored values (trials a pruner stopped, +inf ones) are imputed from a model
        # of the exact ones; a clash's reuse is then skipped (the values seen differ).
        exact = np.ones(len(y), dtype=bool)  # (n,)
        if lower is not None:
            exact = ~(np.isfinite(lower) | np.isneginf(lower))
        fitted, optimized = _objective_model(request, X[exact], y[exact], warm, rng, route)
        fit_n = int(exact.sum())
        if lower is not None:
            y = y.copy()
            y[~exact] = impute_censored(fitted, X[~exact], lower[~exact])
            fitted = _rebuild(X, y, fitted.hyper, rng, request, request.min_noise_var)
        cost, cost_n = (
            _cost_model(request, warm, rng, route) if needs_cost else (None, warm.cost_n)
        )
        if route.quick:
            # NOTE(quick): the warm start is handed back unchanged (the next full suggestion
            # starts its fit from the last full one's), but for a first fit or a refit.
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
        cost = with_pruning(cost, fitted, y, request.pruning)
    model = with_pending(fitted, request.X_running, request.y_running)
    fit = budget_fit(request, cost)
    constraints = with_completion(request.constraints, request.stopped)  # (n, k) or None
    constraints = with_completion(constraints, failed)  # +inf: a failure, as a pruned trial
    if constraints is None:
        feasibility = None if fit is None else Feasibility([], fit)
        return Models(fitted, model, cost, new_warm, X, y, feasibility)
    feasibility = fit_constraints(X, constraints, rng, warm.constraints, restarts=not route.quick)
    new_warm = dataclasses.replace(new_warm, constraints=feasibility.hypers)
    if fit is not None:
        feasibility = feasibility.with_budget(fit)
    return Models(fitted, model, cost, new_warm, X, y, feasibility, feasible_rows(constraints))


def cost_model_of(request: ProposalRequest, rng: np.random.Generator) -> CostModel | None:
    """The cost model of ``request`` alone (the full route's, fitted without a warm start);
    None before anything predicts a cost."""
    return _cost_model(request, WarmStart(), rng, _FULL_ROUTE)[0]


def fit_constraints(
    X: np.ndarray,  # (n, D)
    C: np.ndarray,  # (n, k), NaN where a constraint is not known
    rng: np.random.Generator,
    warm: Sequence[GPHyperparams | None] | None = None,
    *,
    restarts: bool = True,
) -> Feasibility:
    """A GP per constraint on the rows where its value is known, from the last fits' ``warm``
    hyperparameters; ``restarts``: add random restarts (the full route) or not."""
    models = []
    for i in range(C.shape[1]):
        known = np.isfinite(C[:, i])
        if not known.any():  # no value of it yet: it constrains nothing
            continue
        start = warm[i] if warm is not None and i < len(warm) else None
        models.append(
            fit_gp(
                X[known],
                C[known, i],
                rng=rng,
                n_restarts=3 if restarts and start is None else 0,
                warm_start=start if start is not None and start.dim == X.shape[1] else None,
                max_points=256,
                min_noise_var=CONSTRAINT_MIN_NOISE_VAR,
            )
        )
    return Feasibility(models)


def _working_set(
    X: np.ndarray, y: np.ndarray, rng: np.random.Generator, schedule: FitSchedule
) -> np.ndarray | None:
    """The rows (m,) a model is conditioned on past ``max_model_points`` (None: all); its
    hyperparameters are still fitted on all (docs/design-decisions.md, "Fits as the data
    grow")."""
    if len(y) <= schedule.max_model_points:
        return None
    keep: np.ndarray = model_subset(y, schedule.max_model_points, rng, X)  # (m,)
    return keep


def _schedule(
    warm: GPHyperparams | None, n_fits: int, X: np.ndarray, last_n: int, schedule: FitSchedule
) -> tuple[GPHyperparams | None, int, bool]:
    """A full-route fit's warm start, random restarts and whether it optimizes at all.

    NOTE: a warm start from the last hyperparameters makes most fits a few L-BFGS-B
    iterations; every 5th fit adds the default start to leave a poor basin. Past refit_from
    observations the hyperparameters are kept until the data grew by refit_growth
    (docs/design-decisions.md, "Fits as the data grow").
    """
    n_restarts = 3 if warm is None else (1 if n_fits % 5 == 0 else 0)
    if warm is not None and warm.lengthscales.shape != (X.shape[1],):
        warm, n_restarts = None, 3
    n = X.shape[0]
    optimize = (
        warm is None or n <= schedule.refit_from or n >= last_n * (1.0 + schedule.refit_growth)
    )
    return warm, n_restarts, optimize


def _rebuild(
    X: np.ndarray,  # (n, D)
    y: np.ndarray,  # (n,)
    hyper: GPHyperparams | None,
    rng: np.random.Generator,
    request: ProposalRequest,
    min_noise_var: float,
    fixed_noise: bool | None = None,
) -> GPModel:
    """A model with the hyperparameters ``hyper`` (one Cholesky factorization); without
    usable ones, fitted once without restarts."""
    schedule = request.schedule
    keep = _working_set(X, y, rng, schedule)  # (m,) or None: all
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
        fixed_noise=request.deterministic if fixed_noise is None else fixed_noise,
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
    """The objective model of the route, and whether its hyperparameters were optimized: fitted
    on the full route, refitted from the last fit or rebuilt from it on the quick one."""
    if route.quick and not (route.refit and warm.objective is not None):
        fitted = _rebuild(X, y, warm.objective, rng, request, request.min_noise_var)
        return fitted, warm.objective is None
    start, n_restarts, optimize = (
        (warm.objective, 0, True)
        if route.quick
        else _schedule(warm.objective, warm.n_fits, X, warm.objective_n, request.schedule)
    )
    fitted = fit_gp(
        X,
        y,
        rng=rng,
        n_restarts=n_restarts,
        min_noise_var=request.min_noise_var,
        fixed_noise=request.deterministic,
        warm_start=start,
        max_points=request.schedule.max_fit_points,
        optimize=optimize,
        condition_on=_working_set(X, y, rng, request.schedule),
    )
    return fitted, optimize


def _cost_model(
    request: ProposalRequest, warm: WarmStart, rng: np.random.Generator, route: Route
) -> tuple[CostModel | None, int]:
    """The one place that chooses the cost model (None: no costs yet), and the observations
    when a fitted one's hyperparameters were last optimized: the user's known cost, else a GP
    on log(cost), fitted on the full route, rebuilt from the last fit on the quick one."""
    if request.known_cost is not None:
        return request.known_cost, warm.cost_n
    data = request.cost_data
    if data is None or len(data.costs) == 0:
        return None, warm.cost_n
    log_costs = np.log(data.costs)  # (k,)
    if route.quick:
        if warm.cost is None:
            return None, warm.cost_n
        model = _rebuild(data.X, log_costs, warm.cost, rng, request, _COST_MIN_NOISE_VAR, False)
        return FittedLogCost(model), warm.cost_n
    start, n_restarts, optimize = _schedule(
        warm.cost, warm.n_fits, data.X, warm.cost_n, request.schedule
    )
    model = fit_gp(
        data.X,
        log_costs,
        rng=rng,
        n_restarts=n_restarts,
        min_noise_var=_COST_MIN_NOISE_VAR,
        warm_start=start,
        max_points=request.schedule.max_fit_points,
        optimize=optimize,
        condition_on=_working_set(data.X, log_costs, rng, request.schedule),
    )
    return FittedLogCost(model), len(data.costs) if optimize else warm.cost_n


def _same_data(proposal: Proposal, X: np.ndarray, y: np.ndarray, costs: CostData | None) -> bool:
    """Whether ``proposal``'s models were fitted to exactly these observations."""
    observed, before = proposal.observed, proposal.cost_data
    if observed is None or not (np.array_equal(observed[0], X) and np.array_equal(observed[1], y)):
        return False
    if before is None or costs is None:
        return before is costs
    return np.array_equal(before.X, costs.X) and np.array_equal(before.costs, costs.costs)
