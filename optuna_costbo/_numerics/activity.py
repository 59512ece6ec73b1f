"""Which parameters of a conditional space are active, from their categorical parents' choices.

NOTE(codec): on box points, read off the parents' one-hot blocks and a table per parent, never
a full decode: the acquisition optimizer asks at every function evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np

from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import Condition
from optuna_costbo._numerics.param_specs import Param


class ActivityRule:
    """The activity of each of the P parameters, given checked ``conditions`` (index -> its)."""

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
        """Which parameters are active in each row of values (n, P), from the parents' columns
        (NaN or out of range: children inactive): (n, P) bool."""
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
        """:meth:`active` of box points z (n, D), a parent's choice the argmax of its block."""
        values = np.zeros((z.shape[0], self.n_params))  # (n, P); only parents are read
        for j in self.parents:
            values[:, j] = np.argmax(z[:, blocks[j]], axis=1)
        return self.active(values)
