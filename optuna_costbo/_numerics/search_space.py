"""The box codec: parameter values (Optuna's internal ones) <-> the unit box [0, 1]^D.

Floats map linearly or in log, integers and stepped floats are padded by half a step and rounded,
a categorical is a one-hot block (argmax, ties to the lowest index), a single value sits at 0.5;
legal points are exact fixed points of ``project``. An inactive conditional parameter decodes to
NaN and encodes to a fixed fill (Levesque et al., IJCNN 2017).
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
import math

import numpy as np
from scipy.stats import qmc

from optuna_costbo._numerics.activity import ActivityRule
from optuna_costbo._numerics.param_specs import Condition
from optuna_costbo._numerics.param_specs import ContinuousBlock
from optuna_costbo._numerics.param_specs import NumericEncoding
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.param_specs import Param
from optuna_costbo._numerics.param_specs import check_conditions
from optuna_costbo._numerics.param_specs import check_param


class BoxCodec:
    """Maps parameter values (n, P) to box points (n, D) and back; bad specs raise ValueError."""

    def __init__(
        self,
        params: Sequence[Param],
        conditions: Mapping[int, Condition] | None = None,
        optional: Collection[int] = (),
    ) -> None:
        params = list(params)
        for i, p in enumerate(params):
            check_param(i, p)
        self.params: tuple[Param, ...] = tuple(params)
        self.n_params: int = len(params)
        self.conditions: dict[int, Condition] = dict(conditions or {})
        self.optional: frozenset[int] = frozenset(optional)
        check_conditions(params, self.conditions, self.optional)
        self._numeric: list[tuple[int, NumericEncoding]] = []  # (param index, encoding)
        self._categorical: list[tuple[int, np.ndarray]] = []  # (param index, block columns)
        col = 0
        for i, p in enumerate(params):
            if isinstance(p, NumericParam):
                self._numeric.append((i, NumericEncoding(p, col)))
                col += 1
            else:
                self._categorical.append((i, np.arange(col, col + p.n_choices)))
                col += p.n_choices
        self.dim: int = col  # D
        # The continuous parameters are mapped together, the others one at a time.
        together = [(i, num) for i, num in self._numeric if num.step is None and not num.constant]
        self._block = ContinuousBlock([num for _, num in together])
        self._block_params = np.array([i for i, _ in together], dtype=np.intp)  # (k,)
        grouped = {i for i, _ in together}
        self._one_by_one = [(i, num) for i, num in self._numeric if i not in grouped]
        self.continuous_columns: np.ndarray = np.array(
            [num.col for _, num in self._numeric], dtype=np.intp
        )
        self.discrete_columns: np.ndarray = np.array(
            [num.col for _, num in self._numeric if num.step is not None and not num.constant],
            dtype=np.intp,
        )
        self.constant_columns: np.ndarray = np.array(
            [num.col for _, num in self._numeric if num.constant], dtype=np.intp
        )
        self.categorical_blocks: list[np.ndarray] = [cols for _, cols in self._categorical]
        self._columns: dict[int, np.ndarray] = {
            **{i: np.array([num.col]) for i, num in self._numeric},
            **dict(self._categorical),
        }
        self._fill: dict[int, float] = {
            i: float(num.encode(num.decode(np.array([0.5])))[0]) for i, num in self._numeric
        }  # the middle legal value of each numeric
        self._fill_row = np.zeros(col)  # (D,) every column's fill (0 in categorical blocks)
        for i, value in self._fill.items():
            self._fill_row[self._columns[i]] = value
        self._activity = ActivityRule(params, self.conditions)

    @property
    def conditional(self) -> bool:
        return bool(self.conditions)

    def _active_in_box(self, z: np.ndarray) -> np.ndarray:  # (n, D) -> (n, P) bool
        return self._activity.active_in_box(z, self._columns)

    def deactivate(self, z: np.ndarray) -> np.ndarray:
        """A copy of box points z (n, D) with inactive parameters' columns at their fill."""
        out = np.array(z, dtype=float)
        return self._deactivate(out) if self.conditions else out

    def deactivate_with_mask(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``deactivate(z)`` and which columns (n, D) belong to inactive parameters."""
        out = np.array(z, dtype=float)  # (n, D)
        if not self.conditions:
            return out, np.zeros(out.shape, dtype=bool)
        mask = self._mask(self._active_in_box(out))  # (n, D)
        return np.where(mask, self._fill_row, out), mask

    def _mask(self, active: np.ndarray) -> np.ndarray:  # (n, P) -> (n, D)
        mask = np.zeros((active.shape[0], self.dim), dtype=bool)  # (n, D)
        for i in self.conditions:
            mask[:, self._columns[i]] = ~active[:, i][:, None]
        return mask

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Internal values (n, P), clipped into their bounds, to box points (n, D)."""
        values = np.asarray(values, dtype=float)
        if values.ndim != 2 or values.shape[1] != self.n_params:
            raise ValueError(f"values must have shape (n, {self.n_params}), got {values.shape}")
        missing = np.isnan(values)  # (n, P)
        if self.conditions or self.optional:
            allowed = np.zeros(self.n_params, dtype=bool)
            allowed[list(self.conditions) + list(self.optional)] = True
            if np.any(missing & ~allowed):
                raise ValueError("values must be finite (NaN only for conditional parameters)")
            if not np.all(np.isfinite(values) | missing):
                raise ValueError("values must be finite")
        elif not np.all(np.isfinite(values)):
            raise ValueError("values must be finite")
        n = values.shape[0]
        z = np.zeros((n, self.dim))  # (n, D)
        if len(self._block):
            blk, idx = self._block, self._block_params
            gone = missing[:, idx]  # (n, k)
            z[:, blk.cols] = blk.encode(np.where(gone, blk.low, values[:, idx]))
            if gone.any():
                fill = np.array([self._fill[i] for i in idx])  # (k,)
                z[:, blk.cols] = np.where(gone, fill, z[:, blk.cols])
        for i, num in self._one_by_one:
            z[:, num.col] = num.encode(np.where(missing[:, i], num.low, values[:, i]))
            if missing[:, i].any():
                z[missing[:, i], num.col] = self._fill[i]
        for i, cols in self._categorical:
            if missing[:, i].any():
                # A categorical without a value: its first choice while active (its parent
                # just switched it on), zeros once deactivated below.
                values = values.copy()
                values[missing[:, i], i] = 0.0
            idx = values[:, i]
            k = np.rint(idx)
            if np.any(np.abs(idx - k) > 1e-9) or np.any(k < 0) or np.any(k >= len(cols)):
                raise ValueError(
                    f"values[:, {i}] must hold choice indices in [0, {len(cols) - 1}], "
                    f"got {idx[(np.abs(idx - k) > 1e-9) | (k < 0) | (k >= len(cols))][:3]}"
                )
            z[np.arange(n), cols[k.astype(np.intp)]] = 1.0
        return self._deactivate(z) if self.conditions else z

    def _deactivate(self, z: np.ndarray) -> np.ndarray:  # (n, D), in place
        active = self._active_in_box(z)  # (n, P)
        for i in self.conditions:
            off = ~active[:, i]
            if not off.any():
                continue
            cols = self._columns[i]
            if i in self._fill:
                z[np.ix_(off, cols)] = self._fill[i]
            else:
                z[np.ix_(off, cols)] = 0.0
        return z

    def decode(self, z: np.ndarray) -> np.ndarray:
        """Box points (n, D), clipped, to legal internal values (n, P); NaN where inactive."""
        out = self._decode_raw(self._check_z(z))  # (n, P)
        if self.conditions:
            out[~self._activity.active(out)] = np.nan
        return out

    def _decode_raw(self, z: np.ndarray) -> np.ndarray:  # (n, D) -> (n, P), inactive included
        out = np.empty((z.shape[0], self.n_params))  # (n, P)
        if len(self._block):
            out[:, self._block_params] = self._block.decode(z[:, self._block.cols])
        for i, num in self._one_by_one:
            out[:, i] = num.decode(z[:, num.col])
        for i, cols in self._categorical:
            # np.argmax returns the first maximum: ties go to the lowest index.
            out[:, i] = np.argmax(z[:, cols], axis=1)
        return out

    def project(self, z: np.ndarray) -> np.ndarray:
        """The nearest legal point, ``encode(decode(z))``: (n, D) -> (n, D)."""
        return self.encode(self.decode(z))

    def discrete_neighbors_many(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Legal points one discrete move (another choice, a step down or up) from each row of
        Z (R, D), row by row: (S, D), and the row each came from (S,)."""
        V = self.decode(np.asarray(Z, dtype=float).reshape(-1, self.dim))  # (R, P)
        R = len(V)
        rows: list[np.ndarray] = []  # each (R, P): one kind of move from every row
        valid: list[np.ndarray] = []  # each (R,): where that move is legal
        for i, num in self._numeric:
            if num.step is None or num.constant:
                continue
            vi = V[:, i]  # (R,), NaN where inactive: no neighbours
            on = ~np.isnan(vi)
            safe = np.where(on, vi, num.low)
            k = np.where(safe == num.top, num.n_steps, np.round((safe - num.low) / num.step))
            for kk in (k - 1, k + 1):
                row = V.copy()
                row[:, i] = np.where(kk == num.n_steps, num.top, num.low + kk * num.step)
                rows.append(row)
                valid.append(on & (kk >= 0) & (kk <= num.n_steps))
        for i, cols in self._categorical:
            vi = V[:, i]
            for c in range(len(cols)):
                row = V.copy()
                row[:, i] = c
                rows.append(row)
                valid.append(~np.isnan(vi) & (vi != c))
        if not rows:
            return np.empty((0, self.dim)), np.empty(0, dtype=np.intp)
        keep = np.stack(valid, axis=1).ravel()  # (R * B,), row-major: row 0's moves first
        cand = np.stack(rows, axis=1).reshape(-1, self.n_params)[keep]  # (S, P)
        owner = np.repeat(np.arange(R, dtype=np.intp), len(rows))[keep]  # (S,)
        if not len(cand):
            return np.empty((0, self.dim)), owner
        return self.encode(cand), owner

    def random_points(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` i.i.d. legal points, uniform over each parameter's encoded range: (n, D)."""
        return self._from_unit(rng.random((n, self.n_params)))

    def sobol_points(self, n: int, seed: int) -> np.ndarray:
        """The first ``n`` points of a scrambled Sobol sequence, made legal: (n, D)."""
        if n <= 0 or self.n_params == 0:
            return self._from_unit(np.zeros((max(n, 0), self.n_params)))
        # A power of two, of which the first n: scipy warns about balance otherwise.
        engine = qmc.Sobol(self.n_params, scramble=True, seed=seed)
        u = engine.random_base2(max(0, math.ceil(math.log2(n))))[:n]  # (n, P)
        return self._from_unit(u)

    def latin_hypercube_points(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` Latin hypercube points (a dimension per parameter), made legal: (n, D)."""
        if n <= 0 or self.n_params == 0:
            return self._from_unit(np.zeros((max(n, 0), self.n_params)))
        u = qmc.LatinHypercube(self.n_params, seed=rng).random(n)  # (n, P)
        return self._from_unit(u)

    def _from_unit(self, u: np.ndarray) -> np.ndarray:  # (n, P) uniform -> (n, D) legal
        n = u.shape[0]
        z = np.zeros((n, self.dim))  # (n, D)
        if len(self._block):
            blk = self._block
            z[:, blk.cols] = blk.encode(blk.decode(u[:, self._block_params]))
        for i, num in self._one_by_one:
            z[:, num.col] = num.encode(num.decode(u[:, i]))
        for i, cols in self._categorical:
            k = np.minimum(np.floor(u[:, i] * len(cols)), len(cols) - 1).astype(np.intp)
            z[np.arange(n), cols[k]] = 1.0
        return self._deactivate(z) if self.conditions else z

    def _check_z(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        if z.ndim != 2 or z.shape[1] != self.dim:
            raise ValueError(f"z must have shape (n, {self.dim}), got {z.shape}")
        out: np.ndarray = np.clip(np.nan_to_num(z, nan=0.5), 0.0, 1.0)
        return out


_PAIRS_AT_ONCE = 16384  # rows x points x columns up to which rows_among compares every pair


def rows_among(Z: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Which rows of ``Z`` (m, D) are, byte for byte, rows of ``points`` (k, D): (m,) bool."""
    Z = np.ascontiguousarray(Z, dtype=float)  # (m, D)
    points = np.ascontiguousarray(points, dtype=float)  # (k, D)
    if len(Z) == 0 or len(points) == 0:
        return np.zeros(len(Z), dtype=bool)
    if Z.shape[1] == 0:
        return np.ones(len(Z), dtype=bool)
    if len(Z) * len(points) * Z.shape[1] <= _PAIRS_AT_ONCE:
        # Few pairs: all at once, as 64-bit words (faster than set membership at this size).
        Zw, Pw = Z.view(np.uint64), points.view(np.uint64)  # (m, D), (k, D)
        same: np.ndarray = (Zw[:, None, :] == Pw[None, :, :]).all(axis=2).any(axis=1)  # (m,)
        return same
    # Each row as one opaque value of its bytes (-0.0 != 0.0), by sort-based set membership.
    row = np.dtype((np.void, Z.dtype.itemsize * Z.shape[1]))
    out: np.ndarray = np.isin(Z.view(row).ravel(), points.view(row).ravel())
    return out
