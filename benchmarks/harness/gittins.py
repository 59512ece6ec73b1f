"""The Pandora's-box Gittins index (PBGI) as the acquisition of a study a stopping rule ends:
an experiment of issue 27, measured and not adopted (``benchmarks/results/stopping_now_pooled/
pbgi.md``, registered in ``pbgi_PREREG.md``), so it lives here and not in the package.

For a point with posterior ``Y ~ N(mean, var)`` (minimization), predicted cost ``c`` and an
exchange rate ``lam`` (objective units one cost unit is worth, the user's ``value_per_cost``),
the index ``g`` is the reservation value at which evaluating the point is worth exactly its
price:

    E[max(g - Y, 0)] = lam * c,   i.e.   sigma * h((g - mean) / sigma) = lam * c,

with ``h(u) = phi(u) + u Phi(u)``. The policy evaluates the point with the smallest index; no
index is below the incumbent exactly when ``max_x EI(x) - lam c(x) < 0``, the package's
stopping rule, so the acquisition and the rule price cost alike (Xie et al., "Cost-aware
Bayesian optimization via the Pandora's box Gittins index", NeurIPS 2024; Xie, Cai et al.,
"Cost-aware stopping for Bayesian optimization", ICML 2026). For independent boxes this index
policy with that stopping rule is optimal (Weitzman 1979).

NOTE: the index has no closed form; ``h`` is increasing and log-concave, so Newton's method on
``log h(u) = log(lam c / sigma)`` converges monotonically from the left after one step from
any start, quadratically near the root (:func:`gittins_u`). Scipy's scalar root finders would
need a Python loop over the candidates; the vectorized Newton iteration solves all of them at
once. Its derivative follows by implicit differentiation:

    dg = dmean - (phi(u) / Phi(u)) dsigma + sigma (h(u) / Phi(u)) d log(c),

formed from the stable ratios of the package's log EI (``_log_h_parts``, reached through
:mod:`.package_probes`). ``harness/methods.py``'s ``pbgi`` method runs it:
``CostRolloutSampler(None, value_per_cost=lam)`` with its strategy replaced by
:class:`PandoraGittins` at that rate (:func:`.package_probes.gittins_index`).
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Any
from typing import ClassVar

import numpy as np

from benchmarks.harness.package_probes import Choice
from benchmarks.harness.package_probes import log_h_parts
from benchmarks.harness.package_probes import maximize_acquisition
from benchmarks.harness.package_probes import maximize_exponent
from benchmarks.harness.package_probes import shares_objective


__all__ = ["GittinsIndex", "PandoraGittins", "gittins_index", "gittins_u"]

_MIN_VAR = 1e-100  # as the package's log EI: the variance floor (original units)
_MAX_NEWTON = 100
_NEWTON_RTOL = 1e-13
_T_FAR = 30.0  # above: u = exp(t) exactly (see gittins_u)
_T_MAX = 700.0  # exp(700) ~ 1e304 stays finite
_X_MAX = 1e300  # bound of (g - best) / scale


def gittins_u(log_ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The root ``u`` of ``log h(u) = log_ratio`` (m,), with ``Phi(u) / h(u)`` and
    ``phi(u) / h(u)`` there (each (m,)).

    ``log_ratio`` is ``log(lam c / sigma)``: the price of a point in units of its posterior
    standard deviation. A large price puts the root far above 0 (``h(u) ~ u``), a small one far
    below (the index then lies many standard deviations below the mean). Above
    ``log_ratio = 30`` the root is ``exp(log_ratio)`` to double precision (``h(u) - u =
    phi(u) - u (1 - Phi(u))`` is below 1e-190 there) and ``log_ratio`` is clipped at 700.

    Raises:
        ValueError: If ``log_ratio`` has a NaN or an infinity.
    """
    t = np.asarray(log_ratio, dtype=float)
    if not np.all(np.isfinite(t)):
        raise ValueError(f"log_ratio must be finite, got {t[~np.isfinite(t)][:3]}")
    far = t > _T_FAR
    tn = np.minimum(t, _T_FAR)
    # Start right of the root where h(u) > u covers it (t > 0: u = e^t), left of it otherwise
    # (log h(u) < -u^2 / 2 for u < 0); Newton on the concave log h then closes in from the left.
    u = np.where(tn > 0.0, np.exp(tn), -np.sqrt(np.maximum(-2.0 * tn, 0.0)))
    for _ in range(_MAX_NEWTON):
        lh, Phi_over_h, _ = log_h_parts(u)
        step = (lh - tn) / Phi_over_h  # (m,)
        u = u - step
        if np.all(np.abs(step) <= _NEWTON_RTOL * (1.0 + np.abs(u))):
            break
    _, Phi_over_h, phi_over_h = log_h_parts(u)
    if far.any():
        u_far = np.exp(np.where(far, np.minimum(t, _T_MAX), 0.0))
        u = np.where(far, u_far, u)
        Phi_over_h = np.where(far, 1.0 / u_far, Phi_over_h)
        phi_over_h = np.where(far, 0.0, phi_over_h)
    return u, Phi_over_h, phi_over_h


def gittins_index(mean: np.ndarray, var: np.ndarray, log_price: np.ndarray | float) -> np.ndarray:
    """The index ``g`` (m,) with ``E[max(g - Y, 0)] = exp(log_price)`` for ``Y ~ N(mean, var)``.

    Args:
        mean: Posterior means, (m,).
        var: Posterior variances, (m,), floored at 1e-100.
        log_price: ``log(lam * c)``, the log of each point's price in objective units,
            a float or (m,).

    Example:
        >>> import numpy as np
        >>> from scipy.stats import norm
        >>> g = gittins_index(np.array([0.0]), np.array([1.0]), np.log(0.1))
        >>> u = g[0]  # sigma = 1: E[max(g - Y, 0)] = h(g)
        >>> round(float(norm.pdf(u) + u * norm.cdf(u)), 10)
        0.1
    """
    sigma = np.sqrt(np.maximum(np.asarray(var, dtype=float), _MIN_VAR))  # (m,)
    u = gittins_u(np.asarray(log_price, dtype=float) - np.log(sigma))[0]
    out: np.ndarray = np.asarray(mean, dtype=float) + sigma * u
    return out


class GittinsIndex:
    """``asinh((best - g(x)) / scale)``, to be maximized over the box: the Gittins index ``g``
    of each point, priced at ``lam`` per unit of predicted cost, measured from the incumbent.

    A positive value means the point is worth its price (``EI(x) > lam c(x)``). The
    transformation is increasing, so the maximizer is the smallest index; it keeps the values
    near unit size for the optimizer (``scale``, the objective's standardization scale, sets
    the linear range) and finite where the price is astronomical (an all but certainly
    infeasible point: the index grows like the price, up to 1e304, while asinh grows like its
    log, as log EI does). With constraints (``feasibility``) an improvement counts as much as
    the point is likely feasible: the price is ``lam c(x) / PF(x)``.

    Args:
        model: Objective model; ``predict`` gives the latent posterior in original units.
        best: Incumbent, the smallest observed (feasible) objective value, finite.
        cost_model: Model of log-cost (its mean is the predicted log cost).
        value_per_cost: ``lam``, positive and finite.
        scale: Positive and finite; divides the values.
        feasibility: The constraints' probability of feasibility, or None.

    Raises:
        ValueError: If ``best``, ``value_per_cost`` or ``scale`` is invalid.
    """

    def __init__(
        self,
        model: Any,
        best: float,
        *,
        cost_model: Any,
        value_per_cost: float,
        scale: float = 1.0,
        feasibility: Any = None,
    ) -> None:
        if not math.isfinite(float(best)):
            raise ValueError(f"best must be a finite number, got {best}")
        if not (0.0 < float(value_per_cost) < math.inf):
            raise ValueError(f"value_per_cost must be positive and finite, got {value_per_cost}")
        if not (0.0 < float(scale) < math.inf):
            raise ValueError(f"scale must be positive and finite, got {scale}")
        self.model = model
        self.best = float(best)
        self.cost_model = cost_model
        self.log_lam = math.log(float(value_per_cost))
        self.scale = float(scale)
        self.feasibility = feasibility
        self._told: Any = cost_model if shares_objective(cost_model, model) else None

    def _log_price(
        self, Z: np.ndarray, told: tuple[np.ndarray, ...], grad: bool
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """log(lam c / PF) at Z (m, D): (m,), and its gradient (m, D) if ``grad``."""
        d_log: np.ndarray | None = None
        if grad:
            log_c, d_log = (
                self._told.log_cost_and_grad(Z, told)
                if self._told is not None
                else self.cost_model.log_cost_and_grad(Z)
            )
        else:
            log_c = (
                self._told.log_cost(Z, told[:2])
                if self._told is not None
                else self.cost_model.log_cost(Z)
            )
        log_price = self.log_lam + log_c  # (m,)
        if self.feasibility is not None:
            if grad:
                log_pf, d_pf = self.feasibility.log_pf(Z, True)
                assert d_log is not None
                d_log = d_log - d_pf
            else:
                log_pf = self.feasibility.log_pf(Z)[0]
            log_price = log_price - log_pf
        return log_price, d_log

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        """Values at box points Z (m, D): (m,)."""
        told = self.model.predict(Z, False)[:2]
        log_price, _ = self._log_price(Z, told, False)
        g = gittins_index(told[0], told[1], log_price)  # (m,)
        out: np.ndarray = -np.arcsinh(self._excess(g))
        return out

    def _excess(self, g: np.ndarray) -> np.ndarray:
        """(g - best) / scale (m,), kept finite."""
        out: np.ndarray = np.clip((g - self.best) / self.scale, -_X_MAX, _X_MAX)
        return out

    def value_and_grad(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values (m,) and gradients with respect to Z (m, D) at box points Z (m, D)."""
        told = self.model.predict(Z, True)
        mean, var, dmean, dvar = told
        log_price, d_log_price = self._log_price(Z, told, True)
        assert d_log_price is not None
        var = np.maximum(var, _MIN_VAR)
        sigma = np.sqrt(var)  # (m,)
        t = log_price - np.log(sigma)  # (m,)
        u, Phi_over_h, phi_over_h = gittins_u(t)
        x = self._excess(mean + sigma * u)  # (m,)
        # Where a bound holds (t at _T_MAX, x at _X_MAX) the value is flat: no gradient.
        flat = (t > _T_MAX) | (np.abs(x) >= _X_MAX)  # (m,)
        # dg = dmean - (phi / Phi) dsigma + sigma (h / Phi) d log price, dsigma = dvar / (2 sigma);
        # d asinh(x) = dx / hypot(1, x). Each coefficient is divided before it multiplies a
        # gradient: sigma h / Phi is about the price, up to 1e304 for an unlikely feasible point.
        den = self.scale * np.hypot(1.0, x)  # (m,)
        mills = phi_over_h / Phi_over_h  # (m,) phi / Phi
        c_price = (sigma / Phi_over_h) / self.scale / np.hypot(1.0, x)  # (m,)
        grad = (
            dmean / den[:, None]
            - (mills / (2.0 * sigma) / den)[:, None] * dvar
            + c_price[:, None] * d_log_price
        )  # (m, D): d asinh(x)
        grad[flat] = 0.0
        return -np.arcsinh(x), -grad


@dataclass(frozen=True)
class PandoraGittins:
    """The point with the smallest Pandora's-box Gittins index (:class:`GittinsIndex`), cost
    priced at the user's ``value_per_cost``.

    The acquisition of a study that a stopping rule ends: it trades an improvement against its
    predicted cost at the rate the rule stops at, so a cheap point is preferred only as far as
    its cost saving is worth at that rate, and a small rate (cost cheap) explores widely.
    While no point is known feasible it looks for one, the most probable per unit cost.

    Attributes:
        value_per_cost: ``lam``, objective units one cost unit is worth.
    """

    name: ClassVar[str] = "pbgi"
    needs_cost: ClassVar[bool] = True
    uses_options: ClassVar[tuple[str, ...]] = ()
    value_per_cost: float

    def __post_init__(self) -> None:
        if not (0.0 < self.value_per_cost < math.inf):
            raise ValueError(
                f"value_per_cost must be positive and finite, got {self.value_per_cost}"
            )

    def choose(self, ctx: Any) -> Any:
        if ctx.best is None or ctx.cost is None:
            return Choice(*maximize_exponent(ctx, 1.0))
        scale = float(getattr(ctx.model, "y_std", 1.0))
        acq = GittinsIndex(
            ctx.model,
            ctx.best,
            cost_model=ctx.cost,
            value_per_cost=self.value_per_cost,
            scale=scale if 0.0 < scale < math.inf else 1.0,
            feasibility=ctx.feasibility,
        )
        extra = ctx.starts
        if ctx.cost.origin is not None:
            extra = np.vstack([ctx.starts, ctx.cost.origin[None]])
        has_evaluated = ctx.evaluated is not None and len(ctx.evaluated) > 0
        z, value = maximize_acquisition(
            acq.value_and_grad,
            ctx.codec,
            ctx.rng,
            extra_starts=extra,
            fun=acq,
            max_evals=ctx.cost.max_evals,
            exclude=ctx.excluded if has_evaluated else None,
        )
        return Choice(z, value)
