"""A codec between parameter values and the unit box [0, 1]^D.

The models and the acquisition optimizer work in the unit box; Optuna works with parameter
values. :class:`BoxCodec` maps between the two. It knows nothing of Optuna: the sampler converts
Optuna distributions to the neutral specs :class:`NumericParam` and :class:`CategoricalParam`.

Values follow Optuna's "internal" convention: a numeric parameter's value is the number itself
(integers as floats), a categorical parameter's value is the index of its choice (as a float).

Encoding, one parameter at a time:

* continuous floats map ``[low, high]`` linearly (or ``[log low, log high]`` for ``log=True``)
  onto ``[0, 1]``, one column;
* integers and stepped floats (values ``low + k * step``) are padded by half a step on each side,
  so that every legal value owns an equal share of the column (equal in log space for log
  integers), and decoding rounds to the nearest legal value;
* a categorical with ``c`` choices is a one-hot block of ``c`` columns, decoded by argmax (ties go
  to the lowest index);
* a parameter with a single legal value (``low == high``) encodes to 0.5.

``project(z) == encode(decode(z))`` is the nearest legal point; legal points are exact fixed
points, so a point the optimizer returns is exactly what the models see when the trial comes
back from storage.

Conditional parameters (a define-by-run space: the tree knobs of a booster asked only for tree
boosters) are one more column or block in the same box. A parameter with a :class:`Condition`
is active only where its categorical parent takes one of the condition's choices; where it is
inactive, :meth:`BoxCodec.decode` gives NaN and its columns hold a fixed fill (the middle legal
value of a numeric, a block of zeros for a categorical), so every configuration in which it
plays no part is one point of the box. A conditional parameter without a known parent
(``optional``) may be missing from an observation (NaN, encoded as the fill) but is always
decoded. NOTE: this is the imputation of inactive parameters at a fixed value, with the
activity rule read off the data (Levesque et al., "Bayesian optimization for conditional
hyperparameter spaces", IJCNN 2017; Swersky et al., "Raiders of the lost architecture", 2014,
give kernels for the same structure).
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
import math

import numpy as np
from scipy.stats import qmc

from optuna_costbo._numerics.activity import ActivityRule
from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import Condition
from optuna_costbo._numerics.param_specs import ContinuousBlock
from optuna_costbo._numerics.param_specs import NumericEncoding
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.param_specs import Param
from optuna_costbo._numerics.param_specs import check_conditions
from optuna_costbo._numerics.param_specs import check_param


__all__ = ["BoxCodec", "CategoricalParam", "Condition", "NumericParam", "Param", "rows_among"]


class BoxCodec:
    """Maps parameter values to the unit box [0, 1]^D and back.

    Args:
        params: The parameter specs, in order. Numeric parameters take one column each,
            categoricals ``n_choices`` columns each, in the same order.

    Raises:
        ValueError: If a spec is invalid (``low > high``, ``log=True`` with ``low <= 0``,
            ``step <= 0``, ``n_choices < 1``, non-integral bounds of an integer, ...).
        TypeError: If an element is not a :class:`NumericParam` or :class:`CategoricalParam`.

    Example:
        >>> import numpy as np
        >>> codec = BoxCodec(
        ...     [NumericParam(1e-3, 1.0, log=True), NumericParam(1, 5, integer=True),
        ...      CategoricalParam(3)]
        ... )
        >>> codec.dim, codec.n_params
        (5, 3)
        >>> z = codec.encode(np.array([[1e-2, 3.0, 2.0]]))  # (1, 5)
        >>> codec.decode(z).round(12).tolist()  # floats round-trip up to an ulp or so
        [[0.01, 3.0, 2.0]]
        >>> p = codec.project(np.full((1, 5), 0.3))  # nearest legal point
        >>> codec.decode(p)[0, 1:].tolist()  # integer 2, first choice (ties -> lowest index)
        [2.0, 0.0]
        >>> bool(np.array_equal(codec.project(p), p))  # legal points are exact fixed points
        True
    """

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
        """Parameter index -> when it is active (see the module docstring)."""
        self.optional: frozenset[int] = frozenset(optional)
        """Indices of conditional parameters without a known parent: may be missing (NaN)."""
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
        self.dim: int = col
        """D, the number of columns of the box."""
        # The continuous parameters are mapped together, the others one at a time.
        together = [(i, num) for i, num in self._numeric if num.step is None and not num.constant]
        self._block = ContinuousBlock([num for _, num in together])
        self._block_params = np.array([i for i, _ in together], dtype=np.intp)  # (k,)
        grouped = {i for i, _ in together}
        self._one_by_one = [(i, num) for i, num in self._numeric if i not in grouped]
        self.continuous_columns: np.ndarray = np.array(
            [num.col for _, num in self._numeric], dtype=np.intp
        )
        """Columns of the numeric parameters (one each), shape (n_numeric,)."""
        self.discrete_columns: np.ndarray = np.array(
            [num.col for _, num in self._numeric if num.step is not None and not num.constant],
            dtype=np.intp,
        )
        """Columns of numeric parameters on a step grid (integers, stepped floats)."""
        self.constant_columns: np.ndarray = np.array(
            [num.col for _, num in self._numeric if num.constant], dtype=np.intp
        )
        """Columns of numeric parameters with a single legal value (always 0.5)."""
        self.categorical_blocks: list[np.ndarray] = [cols for _, cols in self._categorical]
        """Columns of each categorical's one-hot block, in parameter order."""
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
        """Whether some parameter is conditional (has a :class:`Condition`)."""
        return bool(self.conditions)

    def _active(self, values: np.ndarray) -> np.ndarray:
        """Which parameters are active in each row of internal values (n, P): (n, P) bool."""
        return self._activity.active(values)

    def _active_in_box(self, z: np.ndarray) -> np.ndarray:
        """:meth:`_active` of box points z (n, D), from the parents' blocks only: (n, P)."""
        return self._activity.active_in_box(z, self._columns)

    def deactivate(self, z: np.ndarray) -> np.ndarray:
        """A copy of the box points z (n, D) with inactive parameters' columns at their fill
        (the other columns as they are, relaxed or not)."""
        out = np.array(z, dtype=float)
        return self._deactivate(out) if self.conditions else out

    def deactivate_with_mask(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(deactivate(z), inactive_columns(z))`` of box points z (n, D) in [0, 1], from one
        reading of the activity (deactivating keeps it): what the acquisition optimizer needs
        at every function evaluation."""
        out = np.array(z, dtype=float)  # (n, D)
        if not self.conditions:
            return out, np.zeros(out.shape, dtype=bool)
        mask = self._mask(self._active_in_box(out))  # (n, D)
        return np.where(mask, self._fill_row, out), mask

    def inactive_columns(self, z: np.ndarray) -> np.ndarray:
        """Which columns of the box points z (n, D) belong to inactive parameters: (n, D)."""
        z = np.atleast_2d(np.asarray(z, dtype=float))
        if not self.conditions:
            return np.zeros(z.shape, dtype=bool)
        return self._mask(self._active_in_box(self._check_z(z)))

    def _mask(self, active: np.ndarray) -> np.ndarray:
        """The columns (n, D) of the parameters ``active`` (n, P) marks inactive."""
        mask = np.zeros((active.shape[0], self.dim), dtype=bool)  # (n, D)
        for i in self.conditions:
            mask[:, self._columns[i]] = ~active[:, i][:, None]
        return mask

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Encode internal values into the box.

        Args:
            values: Internal values, shape (n, P): numbers for numeric parameters (clipped into
                ``[low, high]``), choice indices for categoricals.

        Returns:
            Box points, shape (n, D), in [0, 1].

        Raises:
            ValueError: On a wrong shape, a non-finite value or an invalid choice index.
        """
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

    def _deactivate(self, z: np.ndarray) -> np.ndarray:
        """``z`` (n, D) with the columns of inactive parameters at their fill (in place)."""
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
        """Decode box points into legal internal values.

        Args:
            z: Box points, shape (n, D). Coordinates outside [0, 1] are clipped; NaN numeric
                coordinates decode as 0.5.

        Returns:
            Internal values, shape (n, P): each within its bounds and on its grid (integral for
            integers), and a valid choice index for categoricals; NaN for a conditional
            parameter that is inactive.
        """
        out = self._decode_raw(self._check_z(z))  # (n, P)
        if self.conditions:
            out[~self._active(out)] = np.nan
        return out

    def _decode_raw(self, z: np.ndarray) -> np.ndarray:
        """Every parameter's value at z (n, D), inactive ones included: (n, P)."""
        out = np.empty((z.shape[0], self.n_params))  # (n, P)
        if len(self._block):
            out[:, self._block_params] = self._block.decode(z[:, self._block.cols])
        for i, num in self._one_by_one:
            out[:, i] = num.decode(z[:, num.col])
        for i, cols in self._categorical:
            # NOTE(codec): np.argmax returns the first maximum, so ties go to the lowest index.
            out[:, i] = np.argmax(z[:, cols], axis=1)
        return out

    def project(self, z: np.ndarray) -> np.ndarray:
        """The nearest legal point, ``encode(decode(z))``: (n, D) -> (n, D).

        Legal points are exact fixed points: ``project(project(z)) == project(z)``.
        """
        return self.encode(self.decode(z))

    def discrete_neighbors(self, z: np.ndarray) -> np.ndarray:
        """Legal points that differ from ``project(z)`` in one discrete parameter.

        For each categorical every other choice, and for each integer or stepped parameter the
        adjacent grid values (one step down and up, where legal).

        Args:
            z: One box point, shape (D,).

        Returns:
            Legal box points, shape (k, D); k may be 0.
        """
        v = self.decode(np.asarray(z, dtype=float).reshape(1, self.dim))[0]  # (P,)
        rows: list[np.ndarray] = []
        for i, num in self._numeric:
            if num.step is None or num.constant or np.isnan(v[i]):  # inactive: no neighbours
                continue
            k = round((v[i] - num.low) / num.step) if v[i] != num.top else num.n_steps
            for kk in (k - 1, k + 1):
                if 0 <= kk <= num.n_steps:
                    row = v.copy()
                    row[i] = num.top if kk == num.n_steps else num.low + kk * num.step
                    rows.append(row)
        for i, cols in self._categorical:
            if np.isnan(v[i]):
                continue
            for c in range(len(cols)):
                if c != v[i]:
                    row = v.copy()
                    row[i] = c
                    rows.append(row)
        if not rows:
            return np.empty((0, self.dim))
        return self.encode(np.array(rows))

    def discrete_neighbors_many(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`discrete_neighbors` of every row of Z (R, D) at once.

        Returns:
            ``(neighbours (S, D), owner (S,))``: the neighbours of row 0, then of row 1, ...,
            each row's in the order :meth:`discrete_neighbors` gives them, and the row each
            one belongs to.
        """
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
        """``n`` i.i.d. legal points, uniform over each parameter's encoded range: (n, D).

        Integers and categorical choices are uniform over their legal values (log integers
        uniform in log space).
        """
        return self._from_unit(rng.random((n, self.n_params)))

    def sobol_points(self, n: int, seed: int) -> np.ndarray:
        """The first ``n`` points of a scrambled Sobol sequence, made legal: (n, D).

        One Sobol dimension per parameter; a categorical maps its uniform coordinate ``u`` to
        choice ``floor(u * n_choices)``.

        Args:
            n: Number of points.
            seed: Seed of the scrambling.
        """
        if n <= 0 or self.n_params == 0:
            return self._from_unit(np.zeros((max(n, 0), self.n_params)))
        # NOTE(codec): draw a power of two and keep the first n, which keeps scipy from warning
        # about broken balance properties (the first n of a Sobol sequence are still well
        # spread). ``seed=`` is accepted by scipy 1.10 through 1.17.
        engine = qmc.Sobol(self.n_params, scramble=True, seed=seed)
        u = engine.random_base2(max(0, math.ceil(math.log2(n))))[:n]  # (n, P)
        return self._from_unit(u)

    def latin_hypercube_points(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` Latin hypercube points (one LHS dimension per parameter), made legal: (n, D)."""
        if n <= 0 or self.n_params == 0:
            return self._from_unit(np.zeros((max(n, 0), self.n_params)))
        u = qmc.LatinHypercube(self.n_params, seed=rng).random(n)  # (n, P)
        return self._from_unit(u)

    def _from_unit(self, u: np.ndarray) -> np.ndarray:
        """Uniform coordinates, one per parameter (n, P), to legal box points (n, D)."""
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


_PAIRS_AT_ONCE = 16384
"""Rows times points times columns up to which :func:`rows_among` compares every pair."""


def rows_among(Z: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Which rows of ``Z`` (m, D) are exactly rows of ``points`` (k, D): (m,) bool.

    Legal points are exact fixed points of the codec, so a configuration that a trial already
    has encodes to exactly the same bytes; exact comparison is the codec's resolution.
    """
    Z = np.ascontiguousarray(Z, dtype=float)  # (m, D)
    points = np.ascontiguousarray(points, dtype=float)  # (k, D)
    if len(Z) == 0 or len(points) == 0:
        return np.zeros(len(Z), dtype=bool)
    if Z.shape[1] == 0:
        return np.ones(len(Z), dtype=bool)
    if len(Z) * len(points) * Z.shape[1] <= _PAIRS_AT_ONCE:
        # NOTE(codec): few rows against few points (the rollout's first actions, a maximizer's
        # results): every pair at once, word by word as 64-bit integers (the same bytes), a
        # tenth of the time of the set membership below at these sizes.
        Zw, Pw = Z.view(np.uint64), points.view(np.uint64)  # (m, D), (k, D)
        same: np.ndarray = (Zw[:, None, :] == Pw[None, :, :]).all(axis=2).any(axis=1)  # (m,)
        return same
    # NOTE(codec): each row viewed as one opaque value of its bytes (so -0.0 != 0.0, as
    # bytes), compared by numpy's sort-based set membership instead of a Python loop.
    row = np.dtype((np.void, Z.dtype.itemsize * Z.shape[1]))
    out: np.ndarray = np.isin(Z.view(row).ravel(), points.view(row).ravel())
    return out
