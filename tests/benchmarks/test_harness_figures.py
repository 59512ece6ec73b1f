"""The suite figure's layout (benchmarks/harness/figures.py): as many columns as panels up to
four, the legend in a spare cell or beside the panels."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchmarks.harness import figures
from benchmarks.harness import report
from benchmarks.harness.runner import Run
from benchmarks.problems import stepped


@pytest.mark.parametrize(
    ("n", "expected"),
    [(1, (1, 1, True)), (2, (1, 2, True)), (4, (1, 4, True)), (5, (2, 4, False)),
     (8, (2, 4, True)), (9, (3, 4, False))],
)  # fmt: skip
def test_the_panel_grid_has_no_more_columns_than_panels(
    n: int, expected: tuple[int, int, bool]
) -> None:
    rows, cols, outside = figures.panel_grid(n)
    assert (rows, cols, outside) == expected
    assert rows * cols >= n and (rows - 1) * cols < n  # no empty row


def test_a_figure_needs_a_panel() -> None:
    with pytest.raises(ValueError, match="at least one panel"):
        figures.panel_grid(0)


def test_one_problem_gets_one_full_panel_and_a_legend_beside_it(tmp_path: Path) -> None:
    from matplotlib import image  # a test dependency

    live = stepped.live_problem()
    scored = {}
    for m in ("rollout+median", "optuna-tpe+median"):
        for s in range(2):
            run = Run(live.name, m, s)
            run.costs = [0.3 * live.budget, 0.7 * live.budget]
            run.values = [0.05 + 0.01 * s, 0.02]
            run.steps = [27, 27]
            run.states = ["complete", "complete"]
            scored[(live.name, m, s)] = report.score(run, live)
    path = tmp_path / "one.png"
    rows = figures.suite_figure(
        path, scored, [live], ["rollout+median", "optuna-tpe+median"], [0, 1]
    )
    assert {r["method"] for r in rows} == {"rollout+median", "optuna-tpe+median"}
    height, width = image.imread(path).shape[:2]
    # one 4.2 x 3.0 in panel plus the legend: well under the 16.8 in of four columns
    assert width < 2.5 * height and not math.isclose(width, 4 * 4.2 * 70, rel_tol=0.1)
