"""benchmarks/curve_crossing.py: its measures on curves whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.curve_crossing import crossing


def test_parallel_curves_foretell_and_reversed_ones_mislead() -> None:
    rng = np.random.default_rng(0)
    final = rng.random(50)  # (n,)
    steps = np.array([1.0, 2.0, 3.0])
    parallel = final[:, None] + 1.0 / steps  # (n, 3): the same shift for every curve
    rows = crossing(parallel, np.tile(steps, (50, 1)))
    assert [r["rho"] for r in rows] == pytest.approx([1.0, 1.0, 1.0])
    assert all(r["kept"] == 1.0 and r["rho_top"] == pytest.approx(1.0) for r in rows)
    assert [r["cost_share"] for r in rows] == pytest.approx([1 / 3, 2 / 3, 1.0])
    # Early values in reverse order of the final ones: the best 10 % all look worst early.
    reversed_early = np.column_stack([-final, -final, final])  # (n, 3)
    rows = crossing(reversed_early, np.ones((50, 3)))
    assert rows[0]["rho"] == pytest.approx(-1.0) and rows[0]["kept"] == 0.0
    assert rows[0]["rho_top"] == pytest.approx(-1.0)


def test_rho_is_spearmans_on_ranks() -> None:
    rng = np.random.default_rng(1)
    values = rng.random((40, 2))  # (n, 2): an early step unrelated to the final one
    rows = crossing(values, np.ones((40, 2)))
    ranks = np.argsort(np.argsort(values, axis=0), axis=0).astype(float)  # (n, 2), no ties
    assert rows[0]["rho"] == pytest.approx(np.corrcoef(ranks[:, 0], ranks[:, 1])[0, 1])
    top = np.argsort(values[:, 1])[:4]  # the best 10 % of 40
    kept = np.mean(values[top, 0] <= np.median(values[:, 0]))
    assert rows[0]["kept"] == pytest.approx(kept)
