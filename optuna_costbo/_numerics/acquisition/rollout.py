"""The rollout acquisition: screen first actions and score them with Lambda_h.

The estimator of Lambda_h (Lee et al., UAI 2021) on a finite action set is
:func:`.rollout_values.rollout_values`; this module builds that action set from the current
model and cost model, polishes the best first actions and returns the best affordable one.
Two strategies use it: :class:`PaperRollout` (the paper's value, :data:`PAPER`) and
:class:`Rollout` (the shipped one, :data:`RATE`); another variant is a strategy of its own
that calls :func:`rollout_choice` with its :class:`Valuation` and :class:`Screening`.

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
from optuna_costbo._numerics.acquisition.scoring import HARD_RATE
from optuna_costbo._numerics.acquisition.scoring import PAPER
from optuna_costbo._numerics.acquisition.scoring import RATE
from optuna_costbo._numerics.acquisition.scoring import Valuation
from optuna_costbo._numerics.acquisition.scoring import decide
from optuna_costbo._numerics.acquisition.scoring import rollout_values_on
from optuna_costbo._numerics.acquisition.scoring import scorer
from optuna_costbo._numerics.acquisition.screening import Screen
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.acquisition.strategies import Choice
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.lbfgsb import local_maximize
from optuna_costbo._numerics.optimize import default_n_candidates
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

# NOTE: the polish is a few steps from points the screen or a maximizer found, inside a box of
# half-width 0.05: most runs took 2-10 evaluations, some near a corner of the box 20-50 on the
# last digits (measured, D = 2-10, 25-200 trials).
_POLISH_EVALS = 10

_CHEAP_FACTOR = 1.25
"""When nothing is affordable, candidates may cost this many times the cheapest one."""


@dataclass(frozen=True)
class Screening:
    """How first actions are screened and scored: sizes of the package's choosing
    (docs/design-decisions.md, "The rollout's candidate sets and draws").

    Attributes:
        n_pool: Sobol points screened by EI and EIpu under the current model (at
            least the maximizers' :func:`.optimize.default_n_candidates`): the maximizers of
            EI, EIpu and EI-cool start from them, and the first actions and the inner
            candidates are chosen from them.
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
class _RolloutOptions:
    """What the two rollouts share: the user's horizon and samples, and internal sizes.

    Attributes:
        horizon: Steps rolled out, h >= 1 (h = 1 is EI over affordable points for the
            paper's rollout, EI per unit cost with budget to spare for the shipped one).
        n_samples: Quasi-Monte Carlo trajectories per first action.
        screening: Candidate-set sizes (the package's; tests make them small).
        draws: The source of the QMC normal draws (scrambled Sobol; tests vary the
            scrambling).
    """

    needs_cost: ClassVar[bool] = True
    uses_options: ClassVar[tuple[str, ...]] = ("horizon", "n_samples")
    horizon: int = AcquisitionOptions.horizon
    n_samples: int = AcquisitionOptions.n_samples
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
        # NOTE: one screen for the maximizers and the pool of first actions and inner
        # candidates (see .screening).
        pool = ctx.screen(max(self.screening.n_pool, default_n_candidates(ctx.codec.dim)))
        seeds, _ = ctx.maximize_each(exponents, pool)  # (s, D)
        return rollout_choice(
            ctx.model,
            ctx.codec,
            ctx.rng,
            ctx.best,
            ctx.remaining - ctx.reserved(),
            seeds,
            ctx.cost,
            pool,
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
        # Under a hard budget the trajectories obey it too: a step starts only when the budget
        # left covers its predicted cost (the paper's rule), never the study's soft one.
        valuation = RATE if ctx.budget_fit is None else HARD_RATE
        return self._roll_out(ctx, (0.0, 1.0, alpha), valuation, cost_exponent=alpha)


def rollout_choice(
    model: GPModel,
    codec: BoxCodec,
    rng: np.random.Generator,
    best: float,
    tau: float,
    seeds: np.ndarray,  # (s, D) maximizers of EI and EIpu
    cost: CostModel,
    pool: Screen,
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
    (:data:`PAPER`, :data:`RATE`); ``pool``: the screened points first actions and inner
    candidates are chosen from; ``screening``: candidate-set sizes. ``excluded``: which
    first actions (rows of a (m, D) array) must not be chosen (evaluated points); they score
    -inf unless every candidate is excluded. ``cost_exponent``: the rates' cost exponent (see
    :func:`.rollout_values.rollout_values`), also that of the per-unit-cost polish.
    ``draws``: the source of the standard normal draws, ``(n, h, rng) -> (n, max(h-1, 1))``
    (scrambled Sobol points).
    ``feasibility``: with constraints, every improvement counts as much as the point is likely
    feasible (screening, trajectories, polish and the fallback).
    """

    seen: list[tuple[np.ndarray, np.ndarray]] = []  # (Z, excluded(Z)) of the arrays masked

    def masked(Z: np.ndarray, values: np.ndarray) -> np.ndarray:  # (m, D), (m,) -> (m,)
        if excluded is None:
            return values
        # NOTE: the finalists are masked once per block of draws: which are excluded is
        # looked up once per array.
        bad = next((b for z, b in seen if z is Z), None)  # (m,)
        if bad is None:
            bad = excluded(Z)
            seen.append((Z, bad))
        out = np.where(bad, -np.inf, values)
        return out if np.isfinite(out).any() else values

    mean_p, var_p, cost_p = pool.mean, pool.var, pool.cost()  # (M,) each
    pf_p = pool.pf()  # (M,) or None
    ei_p = ei(mean_p, var_p, best) * (pf_p if pf_p is not None else 1.0)  # (M,)
    eipu_p = ei_p / cost_p  # (M,)
    affordable = cost_p <= tau if not valuation.last_overruns else np.full(len(cost_p), tau > 0.0)
    k = screening.n_shortlist
    first = np.unique(
        np.vstack(
            [
                seeds,
                pool.points[top_indices(ei_p, affordable, k)],
                pool.points[top_indices(eipu_p, affordable, k)],
            ]
        ),
        axis=0,
    )  # (B, D)
    # NOTE: the inner argmax runs over the first actions plus the pool's best points by EI and
    # by EIpu: a trajectory's later steps pick points the current model already rates well
    # (docs/design-decisions.md, "The rollout's candidate sets and draws"). With a
    # state-independent cost a point unaffordable
    # now stays unaffordable along every trajectory; with a state-dependent one it may not.
    if cost.pair_cost is None:
        eligible = affordable
    else:
        eligible = np.ones_like(affordable)
    keep = np.union1d(
        top_indices(ei_p, eligible, screening.n_inner),
        top_indices(eipu_p, eligible, screening.n_inner),
    )
    inner, mean_c = pool.points[keep], mean_p[keep]  # (M', D), (M',)
    pf_c = pf_p[keep] if pf_p is not None else None  # (M',)
    normals = draws(n_samples, horizon, rng)

    values = masked(
        first,
        rollout_values_on(
            model, first, inner, mean_c, best, tau, normals, cost, horizon, valuation,
            cost_exponent, feasibility=feasibility, pf_inner=pf_c,
        ),
    )  # fmt: skip
    if np.isfinite(values).any():
        # Refine: polish the best few first actions locally by EI (the sharp part of
        # Lambda_h = EI + future value) and, per unit cost, by EI per unit cost (cooled), all
        # in one batch of L-BFGS-B runs, and score them again with Lambda_h next to the unpolished
        # ones, on the same candidates.
        top = np.argsort(-values)[: screening.n_refine]
        top = top[np.isfinite(values[top])]
        exponents = [0.0] + ([cost_exponent] if valuation.per_unit_cost else [])
        each = np.repeat(exponents, len(top))  # (R,) the exponent of each polished row

        every = LogEIPerCost(
            model, best, cost_model=cost, cost_exponent=each, feasibility=feasibility
        )  # (R,) exponents, checked once

        def polish(Z: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # row i polished under the exponent of its run
            return every.for_rows(runs).value_and_grad(Z)

        starts = np.tile(first[top], (len(exponents), 1))  # (R, D)
        polished, _ = local_maximize(polish, codec, starts, screening.refine_radius, _POLISH_EVALS)
        again = np.unique(np.vstack([first[top], polished]), axis=0)  # (B2, D)
        score = scorer(
            model, again, inner, mean_c, best, tau, cost, horizon, valuation, cost_exponent,
            feasibility=feasibility, pf_inner=pf_c,
        )  # fmt: skip
        if valuation.final_factor > 1:
            # NOTE: the finalists' values differ by less than the screening draws' error
            # (docs/design-decisions.md); more draws on a few actions are cheap, and
            # they are drawn only until the leader is clear (see .scoring.decide). Among
            # finalists the draws cannot tell apart, the closed-form first-step value
            # decides: EI per unit cost (cooled) as the rates, or EI.
            normals = draws(valuation.final_factor * n_samples, horizon, rng)
            first_step = LogEIPerCost(
                model,
                best,
                cost_model=cost,
                cost_exponent=cost_exponent if valuation.per_unit_cost else 0.0,
                feasibility=feasibility,
            )
            i, value = decide(
                lambda normals_: masked(again, score(normals_)),
                normals,
                valuation.final_factor,
                masked(again, first_step(again)),
            )
            if np.isfinite(value):
                return Choice(again[i], value)
        else:
            values2 = masked(again, score(normals))
            if np.isfinite(values2).any():
                i = int(np.argmax(values2))
                return Choice(again[i], float(values2[i]))
        i = int(np.argmax(values))
        return Choice(first[i], float(values[i]))
    # Nothing affordable: the best EI among the points that cost at most 25% more than the
    # cheapest, so the unavoidable overrun stays close to the smallest possible one.
    cand = np.vstack([first, pool.points])  # (B + M, D)
    mean, var = model.predict(first)  # (B,), (B,)
    ei_first = ei(mean, var, best)  # (B,)
    if feasibility is not None:
        ei_first = ei_first * feasibility.pf(first)
    ei_all = np.concatenate([ei_first, ei_p])  # (B + M,), ei_p already weighted by PF
    cost_all = np.concatenate([cost.cost(first), cost_p])  # (B + M,)
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
