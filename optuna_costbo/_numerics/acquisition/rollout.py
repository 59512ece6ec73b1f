"""The rollout strategies: first actions screened from a pool and scored by Lambda_h
(:mod:`.scoring`), the best polished and scored again; the best affordable one is chosen."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from optuna_costbo._numerics.acquisition.ei import LogEIPerCost
from optuna_costbo._numerics.acquisition.ei import cool_exponent
from optuna_costbo._numerics.acquisition.ei import ei
from optuna_costbo._numerics.acquisition.rollout_values import qmc_normals
from optuna_costbo._numerics.acquisition.scoring import decide
from optuna_costbo._numerics.acquisition.scoring import scorer
from optuna_costbo._numerics.acquisition.screening import Screen
from optuna_costbo._numerics.acquisition.strategies import AcquisitionContext
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.acquisition.strategies import Choice
from optuna_costbo._numerics.cost_model import CostModel
from optuna_costbo._numerics.cost_model import reserved_cost
from optuna_costbo._numerics.feasibility import Feasibility
from optuna_costbo._numerics.gp.model import GPModel
from optuna_costbo._numerics.optimize import clean
from optuna_costbo._numerics.optimize import default_n_candidates
from optuna_costbo._numerics.optimize import lbfgsb_runs
from optuna_costbo._numerics.optimize import maximize
from optuna_costbo._numerics.optimize import on_active
from optuna_costbo._numerics.search_space import BoxCodec


Draws = Callable[[int, int, np.random.Generator], np.ndarray]  # (N, h, rng) -> (N, max(h-1, 1))

# NOTE: the polish is a few steps inside a box of half-width 0.05 around a found point.
_POLISH_EVALS = 10
_CHEAP_FACTOR = 1.25  # when nothing is affordable: candidates up to this times the cheapest
# NOTE: the shipped rollout's finalists are scored again on up to 8 blocks of fresh draws
# (docs/design-decisions.md, "The rollout's candidate sets and draws").
_FINAL_BLOCKS = 8


@dataclass(frozen=True)
class Screening:
    """Candidate-set sizes of the package's choosing (docs/design-decisions.md, "The rollout's
    candidate sets and draws"); tests make them small."""

    n_pool: int = 1024  # Sobol points screened (at least the maximizers' default_n_candidates)
    n_inner: int = 64  # inner candidates: the pool's best by EI and by EIpu (each)
    n_shortlist: int = 8  # first actions from the pool by EI and by EIpu (each)
    n_refine: int = 3  # best first actions polished and scored again
    refine_radius: float = 0.05  # half-width of the polish box
    n_samples: int = 64  # QMC trajectories per first action


@dataclass(frozen=True)
class _RolloutOptions(abc.ABC):
    """What the two rollouts share: the horizon h >= 1, the sizes and the source of the draws."""

    needs_cost: ClassVar[bool] = True
    uses_options: ClassVar[tuple[str, ...]] = ("horizon",)
    horizon: int = AcquisitionOptions.horizon
    screening: Screening = Screening()
    draws: Draws = qmc_normals

    @abc.abstractmethod
    def settings(self, ctx: AcquisitionContext) -> tuple[tuple[float, ...], bool, bool, float]:
        """The exponents whose maximizers seed the first actions, ``rate``, ``last_overruns``
        and the cost exponent (:func:`.rollout_values.rollout_values`)."""

    def exponent(self, remaining: float, budget: float) -> float:
        return cool_exponent(remaining, budget)  # the quick route's one-step stand-in: EI-cool

    def choose(self, ctx: AcquisitionContext) -> Choice:
        """:func:`rollout_choice` from the maximizers of ``EI / c^e`` for each exponent, with the
        budget left after the running trials."""
        assert ctx.cost is not None
        exponents, rate, last_overruns, cost_exponent = self.settings(ctx)
        if ctx.best is None:
            # NOTE: nothing feasible yet: the most probably feasible point per unit cost first
            # (as Optuna's GPSampler).
            e = (cost_exponent,)
            Z, values = ctx.record(e, *maximize(ctx.search(e), ctx.rng))
            return Choice(Z[0], float(values[0]))
        pool = ctx.screen(max(self.screening.n_pool, default_n_candidates(ctx.codec.dim)))
        seeds, _ = ctx.record(exponents, *maximize(ctx.search(exponents, pool)))  # (s, D)
        left = ctx.remaining - reserved_cost(ctx.cost, ctx.X_running)
        return rollout_choice(
            ctx.model, ctx.codec, ctx.rng, ctx.best, left, seeds,
            ctx.cost, pool, horizon=self.horizon, rate=rate, last_overruns=last_overruns,
            screening=self.screening, excluded=ctx.excluded, draws=self.draws,
            cost_exponent=cost_exponent, feasibility=ctx.feasibility,
        )  # fmt: skip


@dataclass(frozen=True)
class PaperRollout(_RolloutOptions):
    """The paper's nonmyopic CMDP rollout as published (Lee et al., UAI 2021), for reproduction."""

    name: ClassVar[str] = "rollout-paper"

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> PaperRollout:
        return cls(options.horizon)

    def settings(self, ctx: AcquisitionContext) -> tuple[tuple[float, ...], bool, bool, float]:
        return (0.0, 1.0), False, False, 1.0


@dataclass(frozen=True)
class Rollout(_RolloutOptions):
    """The shipped rollout: the paper's trajectories valued per unit of the budget they consume,
    cooled as EI-cool (docs/design-decisions.md, "The default acquisition")."""

    name: ClassVar[str] = "rollout"

    @classmethod
    def from_options(cls, options: AcquisitionOptions) -> Rollout:
        return cls(options.horizon)

    def settings(self, ctx: AcquisitionContext) -> tuple[tuple[float, ...], bool, bool, float]:
        alpha = cool_exponent(ctx.remaining, ctx.budget)
        # Under a hard budget a step of a trajectory starts only where the budget left covers it.
        return (0.0, 1.0, alpha), True, ctx.budget_fit is None, alpha


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
    rate: bool,
    last_overruns: bool,
    screening: Screening = Screening(),
    excluded: Callable[[np.ndarray], np.ndarray] | None = None,
    cost_exponent: float = 1.0,
    draws: Draws = qmc_normals,
    feasibility: Feasibility | None = None,
) -> Choice:
    """The best affordable first action by Lambda_h (:func:`.rollout_values.rollout_values`,
    ``rate``, ``last_overruns`` and ``cost_exponent`` as there), chosen from ``seeds`` and the
    ``pool``; ``excluded`` first actions score -inf unless every one is excluded."""

    seen: list[tuple[np.ndarray, np.ndarray]] = []  # (Z, excluded(Z)) of the arrays masked

    def masked(Z: np.ndarray, values: np.ndarray) -> np.ndarray:  # (m, D), (m,) -> (m,)
        if excluded is None:
            return values
        bad = next((b for z, b in seen if z is Z), None)  # (m,), looked up once per array
        if bad is None:
            bad = excluded(Z)
            seen.append((Z, bad))
        out = np.where(bad, -np.inf, values)
        return out if np.isfinite(out).any() else values

    mean_p, var_p, cost_p = pool.mean, pool.var, pool.cost()  # (M,) each
    pf_p = pool.pf()  # (M,) or None
    ei_p = ei(mean_p, var_p, best) * (pf_p if pf_p is not None else 1.0)  # (M,)
    eipu_p = ei_p / cost_p  # (M,)
    affordable = cost_p <= tau if not last_overruns else np.full(len(cost_p), tau > 0.0)
    k = screening.n_shortlist
    by_ei = pool.points[top_indices(ei_p, affordable, k)]  # (k, D) at most
    by_eipu = pool.points[top_indices(eipu_p, affordable, k)]  # (k, D) at most
    first = np.unique(np.vstack([seeds, by_ei, by_eipu]), axis=0)  # (B, D)
    # NOTE: the inner argmax runs over the first actions plus the pool's best by EI and by EIpu;
    # with a state-dependent cost a point unaffordable now may become affordable.
    eligible = affordable if cost.pair_cost is None else np.ones_like(affordable)
    keep = np.union1d(
        top_indices(ei_p, eligible, screening.n_inner),
        top_indices(eipu_p, eligible, screening.n_inner),
    )
    inner, mean_c = pool.points[keep], mean_p[keep]  # (M', D), (M',)
    pf_c = pf_p[keep] if pf_p is not None else None  # (M',)
    normals = draws(screening.n_samples, horizon, rng)

    def score_of(Z: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:  # first actions (F, D)
        return scorer(
            model, Z, inner, mean_c, best, tau, cost, horizon, cost_exponent, rate=rate,
            last_overruns=last_overruns, feasibility=feasibility, pf_inner=pf_c,
        )  # fmt: skip

    values = masked(first, score_of(first)(normals))  # (B,)
    if np.isfinite(values).any():
        # Polish the best few locally by EI (the sharp part of Lambda_h) and, for the rate, by
        # EI per unit cost (cooled), in one batch of L-BFGS-B runs, and score them again.
        top = np.argsort(-values)[: screening.n_refine]
        top = top[np.isfinite(values[top])]
        exponents = [0.0] + ([cost_exponent] if rate else [])
        each = np.repeat(exponents, len(top))  # (R,) the exponent of each polished row
        every = LogEIPerCost(
            model, best, cost_model=cost, cost_exponent=each, feasibility=feasibility
        )  # (R,) exponents, checked once

        def polish(Z: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return every.for_rows(runs).value_and_grad(Z)  # each row under its run's exponent

        # Each start polished within a box of half-width refine_radius, its continuous columns
        # only; a polished point is kept where, made legal, it is better.
        starts = codec.project(np.tile(first[top], (len(exponents), 1)))  # (R, D)
        fg, _ = on_active(codec, polish, lambda Z, runs: polish(Z, runs)[0])
        runs = np.arange(len(starts))  # (R,)
        start_v = clean(fg(starts, runs)[0])  # (R,)
        polished, cols = starts, codec.continuous_columns
        if len(cols) and len(starts):
            r = screening.refine_radius
            box = np.clip(np.stack([starts[:, cols] - r, starts[:, cols] + r], axis=-1), 0.0, 1.0)
            moved = codec.project(lbfgsb_runs(fg, starts, start_v, cols, box, _POLISH_EVALS)[0])
            better = clean(fg(moved, runs)[0]) > start_v  # (R,)
            polished = np.where(better[:, None], moved, starts)
        again = np.unique(np.vstack([first[top], polished]), axis=0)  # (B2, D)
        score = score_of(again)
        if rate:
            # NOTE: the finalists differ by less than the screening draws' error: fresh draws
            # until the leader is clear (.scoring.decide), ties to the closed-form first step.
            normals = draws(_FINAL_BLOCKS * screening.n_samples, horizon, rng)
            first_step = LogEIPerCost(
                model, best, cost_model=cost, cost_exponent=cost_exponent,
                feasibility=feasibility,
            )  # fmt: skip
            tie_key = masked(again, first_step(again))  # (B2,)
            i, value = decide(lambda n_: masked(again, score(n_)), normals, _FINAL_BLOCKS, tie_key)
            if np.isfinite(value):
                return Choice(again[i], value)
        else:
            values2 = masked(again, score(normals))
            if np.isfinite(values2).any():
                i = int(np.argmax(values2))
                return Choice(again[i], float(values2[i]))
        i = int(np.argmax(values))
        return Choice(first[i], float(values[i]))
    # Nothing affordable: the best EI among the near-cheapest points (the smallest overrun).
    cand = np.vstack([first, pool.points])  # (B + M, D)
    mean, var = model.predict(first)  # (B,), (B,)
    ei_first = ei(mean, var, best)  # (B,)
    if feasibility is not None:
        ei_first = ei_first * feasibility.pf(first)
    ei_all = np.concatenate([ei_first, ei_p])  # (B + M,), ei_p already weighted by PF
    cost_all = np.concatenate([cost.cost(first), cost_p])  # (B + M,)
    near = cost_all <= _CHEAP_FACTOR * cost_all.min()
    if excluded is not None:
        # Not a finished or running trial's point (far points' EI may underflow to zero).
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
