"""The box codec's parameter specs (made from Optuna's distributions), their checks, and the
encoding of numeric parameters to their columns of the unit box."""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np

from optuna_costbo._numerics.checks import is_int


@dataclass(frozen=True)
class NumericParam:
    """A float or integer in ``[low, high]``, on the grid ``low + k * step`` if ``step`` is set
    (``None``: continuous floats, step 1 for integers), in log space if ``log``."""

    low: float
    high: float
    log: bool = False
    step: float | None = None
    integer: bool = False


@dataclass(frozen=True)
class CategoricalParam:
    """A categorical parameter whose value is the index of one of ``n_choices`` choices."""

    n_choices: int


Param = NumericParam | CategoricalParam


@dataclass(frozen=True)
class Condition:
    """When a parameter is active: its categorical parent (an index) takes one of ``choices``."""

    parent: int
    choices: frozenset[int]


# NOTE(codec): ``high`` is on the step grid within this many steps (Optuna snaps it in decimal:
# low=0.1, step=0.1, high=0.3 gives 1.9999999999999998 steps), and then is the top value itself.
_GRID_TOL = 1e-8
_EPS = float(np.finfo(float).eps)
# NOTE(codec): continuous decoding iterates w <- decode(encode(w)) to an exact fixed point, so
# ``project`` is idempotent; the map is monotone, so it stops, and the cap is only a guard.
_MAX_FIX_ITERS = 100


def check_param(i: int, p: object) -> None:
    where = f"params[{i}] = {p!r}"
    if isinstance(p, CategoricalParam):
        n = p.n_choices
        if not is_int(n) or n < 1:
            raise ValueError(f"{where}: n_choices must be an integer >= 1, got {n!r}")
        return
    if not isinstance(p, NumericParam):
        raise TypeError(f"{where}: expected NumericParam or CategoricalParam")
    low, high = float(p.low), float(p.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"{where}: low and high must be finite, got low={low}, high={high}")
    if low > high:
        raise ValueError(f"{where}: low must be <= high, got low={low}, high={high}")
    if not math.isfinite(high - low):
        raise ValueError(f"{where}: high - low must be finite, got {high - low}")
    if p.log and low <= 0.0:
        raise ValueError(f"{where}: log=True needs low > 0, got low={low}")
    if p.step is not None:
        step = float(p.step)
        if not (math.isfinite(step) and step > 0.0):
            raise ValueError(f"{where}: step must be a positive finite number, got {p.step}")
        if p.log and not (p.integer and step == 1.0):
            raise ValueError(
                f"{where}: log=True cannot be combined with step={step} "
                "(only integers with step=1 may be log-scaled)"
            )
    if p.integer:
        for name, value in (("low", low), ("high", high), ("step", p.step)):
            if value is not None and not float(value).is_integer():
                raise ValueError(f"{where}: integer=True needs an integral {name}, got {value}")


def check_conditions(
    params: Sequence[Param], conditions: Mapping[int, Condition], optional: Collection[int]
) -> None:
    n = len(params)
    for i, cond in conditions.items():
        where = f"conditions[{i}] = {cond!r}"
        if not (is_int(i) and 0 <= i < n) or not (is_int(cond.parent) and 0 <= cond.parent < n):
            raise ValueError(f"{where}: indices must lie in [0, {n - 1}]")
        parent = params[cond.parent]
        if cond.parent == i or not isinstance(parent, CategoricalParam):
            raise ValueError(f"{where}: the parent must be another, categorical parameter")
        if any(not (0 <= c < parent.n_choices) for c in cond.choices):
            raise ValueError(f"{where}: choices must lie in [0, {parent.n_choices - 1}]")
    for i in optional:
        if not (is_int(i) and 0 <= i < n) or i in conditions:
            raise ValueError(f"optional index {i!r}: must lie in [0, {n - 1}], without a parent")


class NumericEncoding:
    """Precomputed encoding of one numeric parameter (column ``col``)."""

    def __init__(self, p: NumericParam, col: int) -> None:
        self.col = col
        self.low = float(p.low)
        self.log = bool(p.log)
        step = float(p.step) if p.step is not None else (1.0 if p.integer else None)
        self.step = step
        high = float(p.high)
        if step is None:
            self.top = high
            self.n_steps = 0
            pad = 0.0
        else:
            ratio = (high - self.low) / step
            k = round(ratio)
            if abs(ratio - k) <= max(_GRID_TOL, 4 * _EPS * ratio):
                self.n_steps, self.top = int(k), high
            else:
                self.n_steps = math.floor(ratio)
                self.top = self.low + self.n_steps * step
            pad = 0.5 * step
        self.constant = self.top == self.low
        lo, hi = self.low - pad, self.top + pad
        # NOTE(codec): t = log(v / low) keeps full precision on a narrow range far from 1,
        # where log(v) has too few values; ref = 1 only when hi / low overflows.
        self.ref = self.low if self.log and math.isfinite(hi / self.low) else 1.0
        self.a = self._t(lo)
        self.width = self._t(hi) - self.a

    def _t(self, v: float) -> float:
        return math.log(v / self.ref) if self.log else v

    def encode(self, v: np.ndarray) -> np.ndarray:  # (n,) -> (n,)
        if self.constant:
            return np.full(v.shape, 0.5)
        t = np.log(np.maximum(v, self.low) / self.ref) if self.log else v
        return np.clip((t - self.a) / self.width, 0.0, 1.0)

    def _raw_decode(self, u: np.ndarray) -> np.ndarray:  # (n,) -> (n,), before snapping
        t = self.a + u * self.width
        return self.ref * np.exp(t) if self.log else t

    def decode(self, u: np.ndarray) -> np.ndarray:  # (n,) -> (n,)
        if self.constant:
            return np.full(u.shape, self.low)
        if self.step is None:  # the block's decoding, bit for bit
            out_c: np.ndarray = ContinuousBlock([self]).decode(u[:, None])[:, 0]
            return out_c
        k = np.clip(np.rint((self._raw_decode(u) - self.low) / self.step), 0, self.n_steps)
        v = self.low + k * self.step
        v[k == self.n_steps] = self.top
        out: np.ndarray = np.minimum(v, self.top)
        return out


class ContinuousBlock:
    """:class:`NumericEncoding` of the continuous, non-constant parameters on all their columns
    (n, k) at once, bit for bit the same values, with far fewer numpy calls."""

    def __init__(self, encodings: Sequence[NumericEncoding]) -> None:
        if any(e.step is not None or e.constant for e in encodings):
            raise ValueError("a continuous block takes continuous, non-constant parameters")
        self.cols = np.array([e.col for e in encodings], dtype=np.intp)  # (k,) box columns
        self.low = np.array([e.low for e in encodings], dtype=float)  # (k,)
        self.top = np.array([e.top for e in encodings], dtype=float)  # (k,)
        self.ref = np.array([e.ref for e in encodings], dtype=float)  # (k,)
        self.a = np.array([e.a for e in encodings], dtype=float)  # (k,)
        self.width = np.array([e.width for e in encodings], dtype=float)  # (k,)
        self._log = np.flatnonzero([e.log for e in encodings])  # (l,) log columns

    def __len__(self) -> int:
        return len(self.cols)

    def encode(self, v: np.ndarray) -> np.ndarray:  # (n, k) -> (n, k)
        t = v
        if len(self._log):
            L = self._log
            t = np.array(v, dtype=float)  # (n, k)
            t[:, L] = np.log(np.maximum(v[:, L], self.low[L]) / self.ref[L])
        out: np.ndarray = np.clip((t - self.a) / self.width, 0.0, 1.0)
        return out

    def _raw_decode(self, u: np.ndarray) -> np.ndarray:  # (n, k) -> (n, k)
        t: np.ndarray = self.a + u * self.width
        if len(self._log):
            L = self._log
            t[:, L] = self.ref[L] * np.exp(t[:, L])
        return t

    def _snap(self, u: np.ndarray) -> np.ndarray:  # (n, k) -> (n, k)
        w = np.clip(self._raw_decode(u), self.low, self.top)
        # The end points decode exactly (exp(log(low)) need not equal low).
        w = np.where(u <= 0.0, self.low, w)
        out: np.ndarray = np.where(u >= 1.0, self.top, w)
        return out

    def decode(self, u: np.ndarray) -> np.ndarray:  # (n, k) -> (n, k)
        w = self._snap(u)
        for _ in range(_MAX_FIX_ITERS):
            w_next = self._snap(self.encode(w))
            if not (w_next != w).any():
                break
            w = w_next
        return w
