"""The rollout acquisition: screen first actions and score them with Lambda_h.

The estimator of Lambda_h (Lee et al., UAI 2021) on a finite action set is
:func:`.rollout_values.rollout_values`; this module builds that action set from the current
model and cost model, polishes the best first actions and returns the best affordable one.
Two strategies use it: :class:`PaperRollout` (the paper's value, :data:`PAPER`) and
:class:`Rollout` (the shipped one, :data:`RATE`). A benchmark that measures another variant
registers a strategy of its own that calls :func:`rollout_choice` with its
:class:`Valuation` and :class:`Screening`.

This module imports only numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.ei import cool_exponent
from optuna_costbo._numerics.acquisition.ei import ei
from optuna_costbo._numerics.acquisition.rollout_values import qmc_normals
from optuna_costbo._numerics.acquisition.rollout_values import rollout_values
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.acquisition.strategies import Choice
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.optimize import local_maximize
from optuna_costbo._numerics.search_space import BoxCodec


__all__ = [
    "PAPER",
    "RATE",
    "PaperRollout",
    "Rollout",
    "Screening",
    "Valuation",
    "rollout_choice",
    "rollout_values_on",
    "top_indices",
]

Draws = Callable[[int, int, np.random.Generator], np.ndarray]
"""``(n_samples, horizon, rng) -> (n_samples, max(horizon - 1, 1))`` standard normal draws."""

_CHEAP_FACTOR = 1.25
"""When nothing is affordable, candidates may cost this many times the cheapest one."""


@dataclass(frozen=True)
class Screening:
    """How first actions are screened and scored: sizes of the package's choosing, measured
    by ``benchmarks/inner_candidates.py`` and ``benchmarks/rollout_agreement.py``.

    Attributes:
        n_pool: Sobol points screened by EI and EIpu under the current model; the first
            actions and the inner candidates are chosen from them.
        n_inner: Candidates of the inner argmax of the base policy: the best ``n_inner`` of
            the pool by EI and the best by EIpu (their union), besides the first actions.
        n_shortlist: First actions screened from the pool by EI and by EIpu (each).
        n_refine: Best first actions polished locally and scored again.
        refine_radius: Half-width of the box in which they are polished.
    """

    n_pool: int = 1024
    n_inner: int = 64
    n_shortlist: int = 8
    n_refine: int = 3
    refine_radius: float = 0.05


@dataclass(frozen=True)
class Valuation:
    """What a rollout value is: the arguments of :func:`.rollout_values.rollout_values` that
    tell the paper's estimator (:data:`PAPER`) from the shipped one (:data:`RATE`).

    Attributes:
        noise_free: Condition fantasies on the latent value drawn (keeps the posterior's total
            variance); the paper's estimator conditions on it as a noisy observation.
        per_unit_cost: Value a first action per unit of the budget its trajectories consume.
        last_overruns: Roll out under the sampler's own budget rule (a trial starts while
            any budget is left) instead of the paper's (a step only where the budget left
            covers its predicted cost).
        best_prefix: With ``per_unit_cost``, the best rate over the trajectories' prefixes.
        final_factor: The few polished finalists are scored again on ``final_factor`` times
            ``n_samples`` fresh trajectories, which decide the choice (1: on the screening
            draws, as the paper).
    """

    noise_free: bool
    per_unit_cost: bool
    last_overruns: bool
    best_prefix: bool
    final_factor: int


PAPER = Valuation(
    noise_free=False, per_unit_cost=False, last_overruns=False, best_prefix=False, final_factor=1
)
"""The paper's Lambda_h (Lee et al., UAI 2021), as published."""

# NOTE: final_factor 8: benchmarks/rollout_agreement.py, the choice then agrees across QMC
# scramblings (0.90 -> 0.98 on mid-run states).
RATE = Valuation(
    noise_free=True, per_unit_cost=True, last_overruns=True, best_prefix=True, final_factor=8
)
"""The shipped rollout's value: per unit of budget consumed, best prefix, noise-free
fantasies, under the study's own budget rule."""


@dataclass(frozen=True)
class _RolloutOptions:
    """What the two rollouts share: the user's horizon and samples, and internal sizes.

    Attributes:
        horizon: Steps rolled out, h >= 1 (h = 1 is EI over affordable points for the
            paper's rollout, EI per unit cost with budget to spare for the shipped one).
        n_samples: Quasi-Monte Carlo trajectories per first action.
        screening: Candidate-set sizes (the package's; tests and benchmarks vary them).
        draws: The source of the QMC normal draws (scrambled Sobol; a benchmark varies it).
    """

    needs_cost: ClassVar[bool] = True
    uses_options: ClassVar[tuple[str, ...]] = ("horizon", "n_samples")
    horizon: int = 2
    n_samples: int = 64
    screening: Screening = Screening()
    draws: Draws = qmc_normals

    def _roll_out(
        self,
        ctx: AcquisitionContext,
        exponents: tuple[float, ...],
        valuation: Valuation,
        cost_exponent: float,
    ) -> Choice:
        """:func:`rollout_choice` from the maximizers of ``EI / c^e`` for each ``e`` of
        ``exponents`` (0: EI, 1: EIpu), with the budget left after the running trials."""
        assert ctx.cost is not None
        if ctx.best is None:
            # NOTE: no feasible observation yet: nothing to improve on; look for a feasible
            # point first, the most probable per unit cost (as Optuna's GPSampler does).
            return Choice(*ctx.maximize(cost_exponent))
        seeds = np.vstack([ctx.maximize(e)[0] for e in exponents])  # (s, D)
        return rollout_choice(
            ctx.model,
            ctx.codec,
            ctx.rng,
            ctx.best,
            ctx.remaining - ctx.reserved(),
            seeds,
            ctx.cost,
            horizon=self.horizon,
            n_samples=self.n_samples,
            valuation=valuation,
            screening=self.screening,
            excluded=ctx.excluded,
            draws=self.draws,
            cost_exponent=cost_exponent,
            feasibility=ctx.feasibility,
        )


@dataclass(frozen=True)
class PaperRollout(_RolloutOptions):
    """The paper's nonmyopic CMDP rollout, as published: Lambda_h = EI plus the expected
    improvement of rolling out EI-per-unit-cost steps and a last EI step over the remaining
    budget (Lee et al., UAI 2021). Kept unchanged for reproduction.

    Its fields are those of :class:`_RolloutOptions`.
    """

    name: ClassVar[str] = "rollout-paper"

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> PaperRollout:
        return cls(options.horizon, options.n_samples)

    def choose(self, ctx: AcquisitionContext) -> Choice:
        return self._roll_out(ctx, (0.0, 1.0), PAPER, cost_exponent=1.0)


@dataclass(frozen=True)
class Rollout(_RolloutOptions):
    """The rollout, cost-aware at every budget level: the paper's trajectories, scored per
    unit of the budget they consume, with fantasies that keep the posterior's variance.

    Lambda_h (the paper's value) depends on cost only through truncation, so while the budget
    affords all h steps it ranks first actions as if every point cost the same. Dividing by
    the budget each trajectory consumes (its summed predicted costs, or all of the remaining
    budget when it strands what is left) values what a first action makes possible per unit
    spent. When one step remains it is EI; with h = 1 and budget to spare it is EI per unit
    cost.

    A first action is valued by the best rate over its trajectories' prefixes (its own EI
    per unit cost, or the two-step rate, ...): the ratio rule for a chain of jobs, which
    orders work to keep the best-value-against-cost curve low at every budget level, not only
    at the end (see :func:`.rollout_values.rollout_values`, ``best_prefix``).

    The rates are cooled as EI-cool cools EI per unit cost: the budget consumed counts to the
    power alpha = remaining / total budget, so the value moves from a rate at the start
    towards Lambda_h at the end, and the first step alone is then worth exactly EI-cool. The
    first actions start from the maximizers of EI, EIpu and EI-cool (EI / c^alpha).

    Its fields are those of :class:`_RolloutOptions`.
    """

    name: ClassVar[str] = "rollout"

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> Rollout:
        return cls(options.horizon, options.n_samples)

    def choose(self, ctx: AcquisitionContext) -> Choice:
        alpha = cool_exponent(ctx.remaining, ctx.budget)
        return self._roll_out(ctx, (0.0, 1.0, alpha), RATE, cost_exponent=alpha)


def rollout_choice(
    model: GPModel,
    codec: BoxCodec,
    rng: np.random.Generator,
    best: float,
    tau: float,
    seeds: np.ndarray,  # (s, D) maximizers of EI and EIpu
    cost: CostModel,
    *,
    horizon: int,
    n_samples: int,
    valuation: Valuation,
    screening: Screening = Screening(),
    excluded: Callable[[np.ndarray], np.ndarray] | None = None,
    cost_exponent: float = 1.0,
    draws: Draws = qmc_normals,
    feasibility: Feasibility | None = None,
) -> Choice:
    """Screen first actions with Lambda_h and return the best affordable one.

    ``horizon`` and ``n_samples``: steps and QMC trajectories; ``valuation``: what a value is
    (:data:`PAPER`, :data:`RATE`); ``screening``: candidate-set sizes. ``excluded``: which
    first actions (rows of a (m, D) array) must not be chosen (evaluated points); they score
    -inf unless every candidate is excluded. ``cost_exponent``: the rates' cost exponent (see
    :func:`.rollout_values.rollout_values`), also that of the per-unit-cost polish.
    ``draws``: the source of the standard normal draws, ``(n, h, rng) -> (n, max(h-1, 1))``
    (scrambled Sobol points; ``benchmarks/rollout_agreement.py`` gives other scramblings).
    ``feasibility``: with constraints, every improvement counts as much as the point is likely
    feasible (screening, trajectories, polish and the fallback).
    """

    def masked(Z: np.ndarray, values: np.ndarray) -> np.ndarray:  # (m, D), (m,) -> (m,)
        if excluded is None:
            return values
        out = np.where(excluded(Z), -np.inf, values)
        return out if np.isfinite(out).any() else values

    pool = codec.sobol_points(screening.n_pool, seed=int(rng.integers(2**31)))  # (M, D)
    mean_p, var_p = model.predict(pool)  # (M,), (M,)
    cost_p = cost.cost(pool)  # (M,)
    pf_p = feasibility.pf(pool) if feasibility is not None else None  # (M,)
    ei_p = ei(mean_p, var_p, best) * (pf_p if pf_p is not None else 1.0)  # (M,)
    eipu_p = ei_p / cost_p  # (M,)
    affordable = cost_p <= tau if not valuation.last_overruns else np.full(len(pool), tau > 0.0)
    k = screening.n_shortlist
    first = np.unique(
        np.vstack(
            [
                seeds,
                pool[top_indices(ei_p, affordable, k)],
                pool[top_indices(eipu_p, affordable, k)],
            ]
        ),
        axis=0,
    )  # (B, D)
    # NOTE: the inner argmax runs over the first actions plus the pool's best points by EI and
    # by EIpu: a trajectory's later steps pick points the current model already rates well.
    # benchmarks/inner_candidates.py: the best 64 of 1024 agree with all 1024 (the reference)
    # on Lambda_h's choice at least as often as all of 256 points did, in each of its 12
    # settings, at 0.2-0.4 times the cost. With a state-independent cost a point unaffordable
    # now stays unaffordable along every trajectory; with a state-dependent one it may not.
    if cost.pair_cost is None:
        eligible = affordable
    else:
        eligible = np.ones_like(affordable)
    keep = np.union1d(
        top_indices(ei_p, eligible, screening.n_inner),
        top_indices(eipu_p, eligible, screening.n_inner),
    )
    inner, mean_c = pool[keep], mean_p[keep]  # (M', D), (M',)
    pf_c = pf_p[keep] if pf_p is not None else None  # (M',)
    normals = draws(n_samples, horizon, rng)

    def score(actions: np.ndarray, normals: np.ndarray) -> np.ndarray:  # (B, D) -> (B,)
        values = rollout_values_on(
            model, actions, inner, mean_c, best, tau, normals, cost, horizon, valuation,
            cost_exponent, feasibility=feasibility, pf_inner=pf_c,
        )  # fmt: skip
        return masked(actions, values)

    values = score(first, normals)
    if np.isfinite(values).any():
        # Refine: polish the best few first actions locally by EI (the sharp part of
        # Lambda_h = EI + future value) and score them again with Lambda_h, next to the
        # unpolished ones, on the same draws and candidates.
        top = np.argsort(-values)[: screening.n_refine]
        top = top[np.isfinite(values[top])]
        polished, _ = local_maximize(
            LogEIPerCost(model, best, feasibility=feasibility).value_and_grad,
            codec,
            first[top],
            screening.refine_radius,
        )
        more = [first[top], polished]
        if valuation.per_unit_cost:
            # Per unit cost, the sharp part is EI per unit cost: polish by it too.
            by_cost, _ = local_maximize(
                LogEIPerCost(
                    model,
                    best,
                    cost_model=cost,
                    cost_exponent=cost_exponent,
                    feasibility=feasibility,
                ).value_and_grad,
                codec,
                first[top],
                screening.refine_radius,
            )
            more.append(by_cost)
        again = np.unique(np.vstack(more), axis=0)  # (B2, D)
        if valuation.final_factor > 1:
            # NOTE: the finalists' values differ by less than the screening draws' error
            # (benchmarks/rollout_agreement.py); more draws on a few actions are cheap.
            normals = draws(valuation.final_factor * n_samples, horizon, rng)
        values2 = score(again, normals)
        if np.isfinite(values2).any():
            i = int(np.argmax(values2))
            return Choice(again[i], float(values2[i]))
        i = int(np.argmax(values))
        return Choice(first[i], float(values[i]))
    # Nothing affordable: the best EI among the points that cost at most 25% more than the
    # cheapest, so the unavoidable overrun stays close to the smallest possible one.
    cand = np.vstack([first, pool])
    mean, var = model.predict(cand)
    ei_all = ei(mean, var, best)
    if feasibility is not None:
        ei_all = ei_all * feasibility.pf(cand)
    cost_all = cost.cost(cand)
    near = cost_all <= _CHEAP_FACTOR * cost_all.min()
    if excluded is not None:
        # Not a point a finished or running trial has (a running one is the likeliest clash:
        # its kriging-believer EI is tiny, but other far points' EI may underflow to zero).
        fresh = near & ~excluded(cand)
        near = fresh if fresh.any() else near
    i = int(np.argmax(np.where(near, ei_all, -np.inf)))
    message = (
        f"no point is affordable with the remaining budget {tau:.6g} (cheapest predicted "
        f"cost {cost_all.min():.6g}); proposing the best of the near-cheapest points, "
        f"predicted cost {cost_all[i]:.6g}. Stop the study if the budget is final."
    )
    return Choice(cand[i], float(ei_all[i]), message)


def top_indices(score: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Indices of the (at most) ``k`` largest scores where ``mask`` holds, best first."""
    order = np.argsort(np.where(mask, -score, np.inf), kind="stable")[:k]
    out: np.ndarray = order[mask[order]]
    return out


def rollout_values_on(
    model: GPModel,
    first: np.ndarray,  # (B, D) first actions
    inner: np.ndarray,  # (M, D) inner candidates
    mean_inner: np.ndarray,  # (M,) posterior mean at the inner candidates
    best: float,
    tau: float,
    normals: np.ndarray,  # (N, max(h-1, 1))
    cost: CostModel,
    horizon: int,
    valuation: Valuation,
    cost_exponent: float = 1.0,
    *,
    feasibility: Feasibility | None = None,
    pf_inner: np.ndarray | None = None,  # (M,) the inner candidates' PF, if known
) -> np.ndarray:
    """Lambda_h of each first action, with ``first`` and ``inner`` as the action set: (B,)."""
    points = np.vstack([first, inner])  # (P, D)
    feasible = None
    if feasibility is not None:
        pf_rest = pf_inner if pf_inner is not None else feasibility.pf(inner)
        feasible = np.concatenate([feasibility.pf(first), pf_rest])  # (P,)
    B = first.shape[0]
    mean = np.concatenate([model.predict(first)[0], mean_inner])  # (P,)
    cov = model.posterior_cov(points)  # (P, P)
    noise_var = model.hyper.noise_var * model.y_std**2
    pair_fn = cost.pair_cost
    if pair_fn is None:
        return rollout_values(
            mean,
            cov,
            noise_var,
            best,
            B,
            cost.cost(points),
            tau,
            horizon,
            normals,
            noise_free=valuation.noise_free,
            per_unit_cost=valuation.per_unit_cost,
            last_overruns=valuation.last_overruns,
            best_prefix=valuation.best_prefix,
            cost_exponent=cost_exponent,
            feasible=feasible,
        )
    rows: dict[int, np.ndarray] = {}

    def pair_cost(idx: np.ndarray) -> np.ndarray:  # (k,) -> (k, P)
        missing = [int(i) for i in idx if int(i) not in rows]
        if missing:
            block = np.asarray(pair_fn(points[missing], points), dtype=float)
            rows.update(zip(missing, block, strict=True))
        return np.stack([rows[int(i)] for i in idx])

    return rollout_values(
        mean,
        cov,
        noise_var,
        best,
        B,
        None,
        tau,
        horizon,
        normals,
        pair_cost=pair_cost,
        first_cost=cost.cost(first),
        noise_free=valuation.noise_free,
        per_unit_cost=valuation.per_unit_cost,
        last_overruns=valuation.last_overruns,
        best_prefix=valuation.best_prefix,
        cost_exponent=cost_exponent,
        feasible=feasible,
    )
