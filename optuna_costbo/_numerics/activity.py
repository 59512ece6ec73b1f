"""Which parameters of a conditional space are active: the activity rule of the box codec.

A parameter with a :class:`~optuna_costbo._numerics.param_specs.Condition` is active where its
categorical parent is active and takes one of the condition's choices. :class:`ActivityRule`
evaluates that rule on rows of internal values or, reading only the parents' one-hot blocks,
on box points (:mod:`.search_space` owns the columns and the fill of inactive parameters).

NOTE(codec): activity depends only on the parents' choices, so on box points it is read off
their blocks (an argmax each) and a lookup table per parent, never off a full decode. The
acquisition optimizer asks for it at every function evaluation; the full decode it replaced
(the fixed-point loop of every continuous column, ``np.isin`` per condition) was 40 % of a
suggestion on a conditional XGBoost space.

This module imports only numpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np

from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import Condition
from optuna_costbo._numerics.param_specs import Param


__all__ = ["ActivityRule"]


class ActivityRule:
    """The activity of every parameter, from its parents' choices.

    Args:
        params: The parameter specs (P of them).
        conditions: Parameter index -> its :class:`Condition` (already checked: parents are
            other, categorical parameters and choices are in range).
    """

    def __init__(self, params: Sequence[Param], conditions: Mapping[int, Condition]) -> None:
        self.n_params = len(params)
        self.conditions = dict(conditions)
        self._allowed: dict[int, np.ndarray] = {}  # param -> (n_choices of its parent,) bool
        for i, cond in self.conditions.items():
            parent = params[cond.parent]
            assert isinstance(parent, CategoricalParam)  # check_conditions
            table = np.zeros(parent.n_choices, dtype=bool)
            table[sorted(cond.choices)] = True
            self._allowed[i] = table
        self.parents: tuple[int, ...] = tuple(sorted({c.parent for c in conditions.values()}))
        """The parameters some condition reads, ascending."""
        # Parents in an order where each comes after the parent of its own condition, each
        # with its children and a (n_choices, n_children) table, so one pass resolves chains;
        # None when the conditions form a cycle (then :meth:`active` iterates to a fixed point).
        self._by_parent: list[tuple[int, np.ndarray, np.ndarray]] | None = []
        done: set[int] = set()
        pending = list(self.parents)
        while pending:
            ready = [j for j in pending if j not in conditions or conditions[j].parent in done]
            if not ready:
                self._by_parent = None
                break
            for j in ready:
                kids = np.array([i for i, c in conditions.items() if c.parent == j])
                tables = np.stack([self._allowed[i] for i in kids], axis=1)  # (n_choices, k)
                self._by_parent.append((j, kids, tables))
                done.add(j)
                pending.remove(j)

    def active(self, values: np.ndarray) -> np.ndarray:
        """Which parameters are active in each row of internal values (n, P): (n, P) bool.

        Only the parents' columns are read (choice indices; NaN or out of range: no choice,
        so their children are inactive).
        """
        active = np.ones((values.shape[0], self.n_params), dtype=bool)  # (n, P)
        choice = {
            j: np.rint(np.nan_to_num(values[:, j], nan=-1.0)).astype(np.intp)  # (n,)
            for j in self.parents
        }
        if self._by_parent is not None:
            for j, kids, tables in self._by_parent:
                c = choice[j]  # (n,)
                legal = (c >= 0) & (c < len(tables))
                allowed = tables[np.where(legal, c, 0)]  # (n, k)
                active[:, kids] = (active[:, j] & legal)[:, None] & allowed
            return active
        for _ in range(len(self.conditions)):
            changed = False
            for i, cond in self.conditions.items():
                table, c = self._allowed[i], choice[cond.parent]
                legal = (c >= 0) & (c < len(table))
                ok = active[:, cond.parent] & legal & table[np.where(legal, c, 0)]
                if not np.array_equal(ok, active[:, i]):
                    active[:, i] = ok
                    changed = True
            if not changed:
                break
        return active

    def active_in_box(self, z: np.ndarray, blocks: Mapping[int, np.ndarray]) -> np.ndarray:
        """:meth:`active` of box points z (n, D), given each parent's one-hot block columns:
        (n, P). A parent's choice is the argmax of its block (ties to the lowest index, as the
        codec decodes it)."""
        values = np.zeros((z.shape[0], self.n_params))  # (n, P); only parents are read
        for j in self.parents:
            values[:, j] = np.argmax(z[:, blocks[j]], axis=1)
        return self.active(values)
