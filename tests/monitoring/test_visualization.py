"""Cost-history plots: the shared data against hand computations, and both front ends."""

from __future__ import annotations

import datetime
from pathlib import Path
import subprocess
import sys
import tempfile
import time
from typing import Literal

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.ledger import compute_ledger
from optuna_costbo.visualization import plot_cost_history
from optuna_costbo.visualization._cost_history import completion_order
from optuna_costbo.visualization._cost_history import get_cost_histories
from optuna_costbo.visualization._cost_history import history_arrays


optuna.logging.set_verbosity(optuna.logging.ERROR)

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)
NAN = float("nan")

# (state, cost, value, completion second): trial numbers are the row indices. Trial 2
# completes before trial 1, so completion order is 0, 2, 1, 3, 4, 5.
ROWS = [
    (TrialState.COMPLETE, 2.0, 5.0, 10),
    (TrialState.PRUNED, 1.0, None, 30),
    (TrialState.COMPLETE, 3.0, 3.0, 20),
    (TrialState.FAIL, 0.5, None, 40),
    (TrialState.COMPLETE, 1.5, 4.0, 50),
    (TrialState.COMPLETE, 2.0, 1.0, 60),
]
ORDER = [0, 2, 1, 3, 4, 5]
CUMULATIVE = [2.0, 5.0, 6.0, 6.5, 8.0, 10.0]  # 2, +3, +1 (pruned), +0.5 (failed), +1.5, +2
VALUES = [5.0, 3.0, NAN, NAN, 4.0, 1.0]
BEST_MIN = [5.0, 3.0, 3.0, 3.0, 3.0, 1.0]
BEST_MAX = [5.0, 5.0, 5.0, 5.0, 5.0, 5.0]


def _frozen(
    number: int,
    state: TrialState,
    cost: float | None,
    value: float | None,
    second: float | None,
    start_second: float = 0.0,
) -> FrozenTrial:
    user_attrs = {} if cost is None else {"cost": cost, "acc": 1.0 - number / 10}
    return FrozenTrial(
        number=number,
        state=state,
        value=value,
        datetime_start=T0 + datetime.timedelta(seconds=start_second),
        datetime_complete=None if second is None else T0 + datetime.timedelta(seconds=second),
        params={"x": 0.1 * number},
        distributions={"x": FloatDistribution(0.0, 1.0)},
        user_attrs=user_attrs,
        system_attrs={},
        intermediate_values={},
        trial_id=number,
    )


def _crafted_trials() -> list[FrozenTrial]:
    return [_frozen(i, *row) for i, row in enumerate(ROWS)]


def _crafted_study(
    direction: Literal["minimize", "maximize"] = "minimize",
    name: str = "crafted",
    budget: float | None = None,
) -> optuna.Study:
    study = optuna.create_study(direction=direction, study_name=name)
    for trial in _crafted_trials():
        study.add_trial(trial)
    # A running trial has no place on the curve yet.
    running = study.ask()
    running.set_user_attr("cost", 100.0)
    if budget is not None:
        study.set_user_attr(BUDGET_ATTR, budget)
    return study


# -- the shared data ------------------------------------------------------------------------


def test_history_arrays_match_hand_computation_minimize() -> None:
    numbers, costs, cumulative, values, best = history_arrays(
        _crafted_trials(), direction=optuna.study.StudyDirection.MINIMIZE
    )
    assert numbers.tolist() == ORDER
    np.testing.assert_allclose(costs, [2.0, 3.0, 1.0, 0.5, 1.5, 2.0])
    np.testing.assert_allclose(cumulative, CUMULATIVE)
    np.testing.assert_allclose(values, VALUES)  # NaN where PRUNED / FAIL
    assert best is not None
    np.testing.assert_allclose(best, BEST_MIN)


def test_history_arrays_respect_maximize_and_skip_unfinished() -> None:
    trials = [*_crafted_trials(), _frozen(6, TrialState.RUNNING, 100.0, None, None)]
    numbers, _, cumulative, _, best = history_arrays(
        trials, direction=optuna.study.StudyDirection.MAXIMIZE
    )
    assert 6 not in numbers.tolist()
    assert cumulative[-1] == pytest.approx(10.0)
    assert best is not None
    np.testing.assert_allclose(best, BEST_MAX)


def test_best_is_nan_until_first_complete_trial() -> None:
    trials = [
        _frozen(0, TrialState.FAIL, 1.0, None, 1),
        _frozen(1, TrialState.PRUNED, 2.0, None, 2),
        _frozen(2, TrialState.COMPLETE, 1.0, 7.0, 3),
    ]
    _, _, cumulative, _, best = history_arrays(
        trials, direction=optuna.study.StudyDirection.MINIMIZE
    )
    np.testing.assert_allclose(cumulative, [1.0, 3.0, 4.0])
    assert best is not None
    assert np.isnan(best[:2]).all() and best[2] == 7.0


def test_missing_cost_is_charged_wall_clock_and_skipped_trials_are_free() -> None:
    # No "cost" attr: the ledger charges datetime_complete - datetime_start = 4 s.
    timed = _frozen(0, TrialState.COMPLETE, None, 2.0, second=14, start_second=10)
    skipped = _frozen(1, TrialState.PRUNED, None, None, second=20, start_second=15)
    skipped.system_attrs[SKIPPED_ATTR] = True
    _, costs, cumulative, _, _ = history_arrays(
        [timed, skipped], direction=optuna.study.StudyDirection.MINIMIZE
    )
    np.testing.assert_allclose(costs, [4.0, 0.0])
    np.testing.assert_allclose(cumulative, [4.0, 4.0])


def test_completion_order_falls_back_to_number_without_completion_times() -> None:
    trials = [
        _frozen(0, TrialState.COMPLETE, 1.0, 1.0, second=50),
        _frozen(1, TrialState.COMPLETE, 1.0, 1.0, second=None),
        _frozen(2, TrialState.COMPLETE, 1.0, 1.0, second=10),
    ]
    assert [t.number for t in completion_order(trials)] == [0, 1, 2]
    del trials[1]
    assert [t.number for t in completion_order(trials)] == [2, 0]


def test_target_gives_values_and_no_best() -> None:
    _, _, _, values, best = history_arrays(
        _crafted_trials(),
        direction=optuna.study.StudyDirection.MINIMIZE,
        target=lambda t: t.user_attrs["acc"],
    )
    assert best is None
    np.testing.assert_allclose(values, [1.0, 0.8, NAN, NAN, 0.6, 0.5])


def test_get_cost_histories_reads_budget_and_validates() -> None:
    study = _crafted_study(budget=9.0)
    (history,) = get_cost_histories(study)
    assert history.budget == 9.0 and history.label == "crafted"
    (history,) = get_cost_histories(study, budget=12.0, labels=["mine"])
    assert history.budget == 12.0 and history.label == "mine"
    assert history.complete.tolist() == [True, True, False, False, True, True]
    with pytest.raises(ValueError, match="one entry per study"):
        get_cost_histories([study, study], labels=["only one"])
    with pytest.raises(ValueError, match="non-empty"):
        get_cost_histories([])
    with pytest.raises(ValueError, match="budget must be a positive finite number"):
        get_cost_histories(study, budget=-1.0)
    multi = optuna.create_study(directions=["minimize", "maximize"])
    multi.add_trial(optuna.create_trial(values=[1.0, 2.0], user_attrs={"cost": 1.0}))
    with pytest.raises(ValueError, match="reference_point must be 2 finite numbers"):
        get_cost_histories(multi, reference_point=[1.0])


def _front_study() -> optuna.Study:
    """Minimize and maximize; minimized values (1, -2), (2, -3), a failed trial, (0.5, 0)."""
    study = optuna.create_study(directions=["minimize", "maximize"])
    for values in ([1.0, 2.0], [2.0, 3.0], None, [0.5, 0.0]):
        state = TrialState.COMPLETE if values is not None else TrialState.FAIL
        study.add_trial(optuna.create_trial(values=values, state=state, user_attrs={"cost": 1.0}))
    return study


def test_a_multi_objective_study_is_drawn_as_its_hypervolume_against_cost() -> None:
    (history,) = get_cost_histories(_front_study())
    assert history.hypervolume and np.isnan(history.values).all()
    # Reference: the worst minimized values (2, 0) plus a tenth of their ranges (1.5, 3):
    # (2.15, 0.3). The three fronts' areas, by hand (the failed trial adds cost only).
    first = 1.15 * 2.3
    second = first + 0.15 * 3.3 - 0.15 * 2.3
    np.testing.assert_allclose(history.best_values, [first, second, second, second + 0.5 * 0.3])
    np.testing.assert_allclose(history.cumulative_costs, [1.0, 2.0, 3.0, 4.0])
    (given,) = get_cost_histories(_front_study(), reference_point=[3.0, -1.0])
    assert given.best_values is not None
    assert given.best_values[0] == pytest.approx(2.0 * 3.0)  # (3 - 1) x (2 - (-1))


def test_the_hypervolume_plots_are_titled_and_labelled_as_hypervolume() -> None:
    pytest.importorskip("plotly")
    pytest.importorskip("matplotlib")
    pytest.importorskip("optuna_dashboard")
    from optuna_costbo.dashboard import HYPERVOLUME_GRAPH_NAME
    from optuna_costbo.dashboard import _figure

    fig = plot_cost_history(_front_study())
    assert fig.layout.title.text == "Hypervolume Cost History Plot"
    assert fig.layout.yaxis.title.text == "Hypervolume"
    # The hypervolume line alone: no "Best Value", no empty "Objective Value" points.
    assert [trace.name for trace in fig.data] == ["Hypervolume"]
    assert "Hypervolume %{y:.6g}" in fig.data[0].hovertemplate
    ax = _mpl_axes(_front_study())
    try:
        assert ax.get_title() == "Hypervolume Cost History Plot"
        assert ax.get_ylabel() == "Hypervolume"
        assert ax.get_legend_handles_labels()[1] == ["Hypervolume"]
    finally:
        _close(ax)
    import plotly.graph_objects as go

    chart = _figure(go, _front_study(), "cost", None, None, None, None)
    assert chart.layout.title.text == HYPERVOLUME_GRAPH_NAME
    assert chart.layout.yaxis.title.text == "Hypervolume"
    # One objective keeps the best-value titles.
    single = plot_cost_history(_crafted_study())
    assert single.layout.title.text == "Cost History Plot"
    assert _figure(go, _crafted_study(), "cost", None, None, None, None).layout.title.text == (
        "Best value vs cumulative cost"
    )


def _sampler_timed_study(source: str) -> optuna.Study:
    """Trials as the sampler records them: the objective's seconds in ``cost``, the sampler's
    own in a system attr; ``source`` says whether the costs were measured or reported."""
    study = optuna.create_study(study_name=f"sampler-timed-{source}")
    for i, (seconds, sampler, value) in enumerate(
        [(2.0, 0.5, 3.0), (3.0, 0.25, 1.0), (1.0, 0.0, 2.0)]
    ):
        start = T0 + datetime.timedelta(seconds=10 * i)
        study.add_trial(
            FrozenTrial(
                number=i,
                state=TrialState.COMPLETE,
                value=value,
                datetime_start=start,
                datetime_complete=start + datetime.timedelta(seconds=seconds),
                params={},
                distributions={},
                user_attrs={"cost": seconds - sampler},
                system_attrs={SAMPLER_SECONDS_ATTR: sampler, COST_SOURCE_ATTR: source},
                intermediate_values={},
                trial_id=i,
            )
        )
    study.set_user_attr(BUDGET_ATTR, 9.0)
    return study


def test_measured_costs_are_plotted_with_the_samplers_time_and_say_so() -> None:
    pytest.importorskip("plotly")
    measured = _sampler_timed_study("wall_clock")
    (history,) = get_cost_histories(measured)
    # The ledger charges the whole trial (objective 1.5 + sampler 0.5, ...), as it sums it.
    np.testing.assert_allclose(history.cumulative_costs, [2.0, 5.0, 6.0])
    assert history.sampler_costs is not None
    np.testing.assert_allclose(history.sampler_costs, [0.5, 0.25, 0.0])
    ledger = compute_ledger(measured.trials, 9.0, "cost", charge_sampler_time=True)
    assert history.cumulative_costs[-1] == pytest.approx(ledger.spent)
    fig = plot_cost_history(measured)
    assert fig.layout.xaxis.title.text == "Cumulative Cost (s, incl. sampler time)"
    points, line = fig.data
    assert "(incl. sampler time %{customdata[2]:.3g} s)" in points.hovertemplate
    assert [row[2] for row in points.customdata] == [0.5, 0.25, 0.0]
    assert "incl. sampler time" in line.hovertemplate
    ax = _mpl_axes(measured)
    try:
        assert ax.get_xlabel() == "Cumulative Cost (s, incl. sampler time)"
    finally:
        _close(ax)
    # Reported costs: the sampler's seconds are not the user's units and are not charged.
    reported = _sampler_timed_study("reported")
    (history,) = get_cost_histories(reported)
    np.testing.assert_allclose(history.cumulative_costs, [1.5, 4.25, 5.25])
    assert history.sampler_costs is None
    assert plot_cost_history(reported).layout.xaxis.title.text == "Cumulative Cost"


@pytest.mark.parametrize("n_objectives", [1, 2])
def test_the_chart_of_a_wall_clock_study_ends_at_the_ledgers_spent(n_objectives: int) -> None:
    pytest.importorskip("plotly")
    pytest.importorskip("optuna_dashboard")
    import plotly.graph_objects as go

    from optuna_costbo.dashboard import _figure

    sampler = CostRolloutSampler(budget=1.5, n_startup_trials=3, seed=0)
    study = optuna.create_study(sampler=sampler, directions=["minimize"] * n_objectives)

    def objective(trial: optuna.Trial) -> float | tuple[float, float]:
        x = trial.suggest_float("x", 0.0, 1.0)
        time.sleep(0.01 + 0.02 * x)
        return (x - 0.3) ** 2 if n_objectives == 1 else ((x - 0.3) ** 2, x)

    study.optimize(objective)
    spent = sampler.ledger(study).spent
    assert spent >= 1.5  # the study ran to its budget
    objective_only = compute_ledger(study.trials, 1.5, "cost", charge_sampler_time=False)
    assert objective_only.spent < spent  # the sampler's time is in the spent
    line = plot_cost_history(study).data[-1]  # the best value (or hypervolume) line
    assert line.x[-1] == pytest.approx(spent, rel=0.02)
    ax = _mpl_axes(study)
    try:
        assert ax.get_lines()[0].get_xdata()[-1] == pytest.approx(spent, rel=0.02)
    finally:
        _close(ax)
    chart = _figure(go, study, "cost", None, None, None, None)
    assert chart.data[-1].x[-1] == pytest.approx(spent, rel=0.02)


# -- plotly ---------------------------------------------------------------------------------


def test_plotly_figure_matches_hand_computation() -> None:
    pytest.importorskip("plotly")
    fig = plot_cost_history(_crafted_study(budget=9.0))
    assert [trace.name for trace in fig.data] == ["Objective Value", "Best Value"]
    points, best = fig.data
    np.testing.assert_allclose(points.x, [2.0, 5.0, 8.0, 10.0])  # COMPLETE trials only
    np.testing.assert_allclose(points.y, [5.0, 3.0, 4.0, 1.0])
    assert [int(row[0]) for row in points.customdata] == [0, 2, 4, 5]
    np.testing.assert_allclose(best.x, CUMULATIVE)
    np.testing.assert_allclose(best.y, BEST_MIN)
    assert best.line.shape == "hv"
    (line,) = fig.layout.shapes
    assert line.type == "line" and line.x0 == line.x1 == 9.0
    assert fig.layout.xaxis.title.text == "Cumulative Cost"  # reported costs: no unit known


def test_plotly_budget_argument_overrides_study_attr() -> None:
    pytest.importorskip("plotly")
    fig = plot_cost_history(_crafted_study(budget=9.0), budget=12.5, target_name="Loss")
    assert [shape.x0 for shape in fig.layout.shapes] == [12.5]
    assert fig.layout.yaxis.title.text == "Loss"
    # No budget anywhere: no line.
    assert len(plot_cost_history(_crafted_study()).layout.shapes) == 0


def test_plotly_overlay_one_line_per_study() -> None:
    pytest.importorskip("plotly")
    first = _crafted_study(name="first", budget=9.0)
    second = _crafted_study(direction="maximize", name="second", budget=11.0)
    fig = plot_cost_history([first, second])
    lines = [trace for trace in fig.data if trace.name.startswith("Best Value")]
    assert [trace.name for trace in lines] == ["Best Value of first", "Best Value of second"]
    np.testing.assert_allclose(lines[0].y, BEST_MIN)
    np.testing.assert_allclose(lines[1].y, BEST_MAX)
    assert lines[0].line.color != lines[1].line.color
    assert sorted(shape.x0 for shape in fig.layout.shapes) == [9.0, 11.0]

    fig = plot_cost_history([first, second], labels=["A", "B"], budget=10.0)
    assert {trace.name for trace in fig.data} == {
        "Objective Value of A",
        "Best Value of A",
        "Objective Value of B",
        "Best Value of B",
    }
    assert [shape.x0 for shape in fig.layout.shapes] == [10.0]  # one shared budget, one line


def test_plotly_target_draws_points_only() -> None:
    pytest.importorskip("plotly")
    fig = plot_cost_history(_crafted_study(), target=lambda t: t.user_attrs["acc"])
    (points,) = fig.data
    np.testing.assert_allclose(points.y, [1.0, 0.8, 0.6, 0.5])


def test_plotly_empty_study() -> None:
    pytest.importorskip("plotly")
    fig = plot_cost_history(optuna.create_study(), budget=3.0)
    assert all(len(trace.x) == 0 for trace in fig.data)
    assert [shape.x0 for shape in fig.layout.shapes] == [3.0]


def test_missing_plotly_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "plotly", None)
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    with pytest.raises(ImportError, match=r'pip install "optuna-costbo\[plot\]"'):
        plot_cost_history(_crafted_study())


def test_importing_the_modules_imports_no_optional_dependency() -> None:
    # tqdm is a dependency of optuna itself: count only what our modules add.
    code = (
        "import sys\n"
        "import optuna\n"
        "before = set(sys.modules)\n"
        "import optuna_costbo.visualization, optuna_costbo.visualization.matplotlib\n"
        "import optuna_costbo.progress, optuna_costbo.dashboard\n"
        "added = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "bad = added & {'plotly', 'matplotlib', 'tqdm', 'optuna_dashboard'}\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- matplotlib -----------------------------------------------------------------------------


def test_matplotlib_axes_match_hand_computation() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from optuna_costbo.visualization.matplotlib import plot_cost_history as mpl_plot

    ax = mpl_plot(_crafted_study(budget=9.0))
    try:
        step, vline = ax.lines
        np.testing.assert_allclose(step.get_xdata(), CUMULATIVE)
        np.testing.assert_allclose(step.get_ydata(), BEST_MIN)
        assert step.get_drawstyle() == "steps-post"
        assert list(vline.get_xdata()) == [9.0, 9.0]
        (points,) = ax.collections
        np.testing.assert_allclose(points.get_offsets(), [[2, 5], [5, 3], [8, 4], [10, 1]])
        assert ax.get_xlim()[1] >= 10.0
        assert ax.get_legend_handles_labels()[1] == ["Objective Value", "Best Value", "Budget"]
    finally:
        plt.close(ax.figure)


def test_matplotlib_overlay_into_given_axes() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from optuna_costbo.visualization.matplotlib import plot_cost_history as mpl_plot

    fig, given = plt.subplots()
    try:
        first = _crafted_study(name="first")
        second = _crafted_study(direction="maximize", name="second")
        ax = mpl_plot([first, second], budget=10.0, labels=["A", "B"], ax=given)
        assert ax is given
        steps = [line for line in ax.lines if line.get_drawstyle() == "steps-post"]
        assert len(steps) == 2 and len(ax.collections) == 2
        np.testing.assert_allclose(steps[1].get_ydata(), BEST_MAX)
        assert "Best Value of B" in ax.get_legend_handles_labels()[1]
    finally:
        plt.close(fig)


# -- colors, padding, budgets of overlays, labels, units (both backends) --------------------


def _mpl_axes(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from optuna_costbo.visualization.matplotlib import plot_cost_history as mpl_plot

    return mpl_plot(*args, **kwargs)  # type: ignore[arg-type]


def _close(ax) -> None:  # type: ignore[no-untyped-def]
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


def _wall_clock_study(name: str = "timed", budget: float = 9.0) -> optuna.Study:
    """Trials without a reported cost: the ledger charges their measured seconds."""
    study = optuna.create_study(study_name=name)
    for i, (seconds, value) in enumerate([(2.0, 3.0), (3.0, 1.0), (1.0, 2.0)]):
        start = T0 + datetime.timedelta(seconds=10 * i)
        study.add_trial(
            FrozenTrial(
                number=i,
                state=TrialState.COMPLETE,
                value=value,
                datetime_start=start,
                datetime_complete=start + datetime.timedelta(seconds=seconds),
                params={},
                distributions={},
                user_attrs={},
                system_attrs={},
                intermediate_values={},
                trial_id=i,
            )
        )
    study.set_user_attr(BUDGET_ATTR, budget)
    return study


def test_best_value_line_has_its_own_color_as_in_optuna() -> None:
    pytest.importorskip("plotly")
    points, best = plot_cost_history(_crafted_study()).data
    # Optuna's plot_optimization_history: blue points, red best-value line.
    assert (points.marker.color, best.line.color) == ("#636EFA", "#EF553B")
    fig = plot_cost_history([_crafted_study(name="a"), _crafted_study(name="b")])
    colors = [t.marker.color if t.mode == "markers" else t.line.color for t in fig.data]
    assert len(colors) == 4 and len(set(colors)) == 4

    ax = _mpl_axes(_crafted_study())
    try:
        (step,) = [line for line in ax.lines if line.get_drawstyle() == "steps-post"]
        (scatter,) = ax.collections
        assert step.get_color() == "#d62728"  # tab:red, as Optuna's matplotlib history plot
        assert matplotlib_hex(scatter.get_facecolor()[0]) == "#1f77b4"  # tab:blue
    finally:
        _close(ax)
    ax = _mpl_axes([_crafted_study(name="a"), _crafted_study(name="b")])
    try:
        colors = [matplotlib_hex(c.get_facecolor()[0]) for c in ax.collections]
        colors += [line.get_color() for line in ax.lines if line.get_drawstyle() == "steps-post"]
        assert len(set(colors)) == 4
    finally:
        _close(ax)


def matplotlib_hex(rgba: object) -> str:
    from matplotlib.colors import to_hex

    return str(to_hex(rgba))  # type: ignore[arg-type]


def _bottom_gap(low_limit: float, high_limit: float, lowest: float) -> float:
    return (lowest - low_limit) / (high_limit - low_limit)


def test_best_value_line_keeps_off_the_axis() -> None:
    pytest.importorskip("plotly")
    fig = plot_cost_history(_crafted_study(budget=9.0))
    low, high = fig.layout.yaxis.range  # 10% of the span below the lowest value (1.0)
    assert low == pytest.approx(1.0 - 0.1 * 4.0) and high == pytest.approx(5.0 + 0.1 * 4.0)
    ax = _mpl_axes(_crafted_study(budget=9.0))
    try:
        assert _bottom_gap(*ax.get_ylim(), 1.0) >= 0.04
    finally:
        _close(ax)


def test_overlaid_studies_with_their_own_budgets_get_their_own_budget_lines() -> None:
    pytest.importorskip("plotly")
    first = _crafted_study(name="first", budget=9.0)
    second = _crafted_study(direction="maximize", name="second", budget=11.0)
    fig = plot_cost_history([first, second])
    best = {t.name: t.line.color for t in fig.data if t.name.startswith("Best Value")}
    budget = {t.name: t.line.color for t in fig.data if t.name.startswith("Budget")}
    assert budget == {
        "Budget of first": best["Best Value of first"],
        "Budget of second": best["Best Value of second"],
    }
    shapes = sorted(fig.layout.shapes, key=lambda shape: shape.x0)
    assert [(s.x0, s.line.color) for s in shapes] == [
        (9.0, budget["Budget of first"]),
        (11.0, budget["Budget of second"]),
    ]
    # A shared budget stays one gray line with one name.
    fig = plot_cost_history([first, second], budget=10.0)
    assert not [t for t in fig.data if t.name.startswith("Budget")]
    assert [(s.x0, s.line.color) for s in fig.layout.shapes] == [(10.0, "gray")]

    ax = _mpl_axes([first, second])
    try:
        handles, names = ax.get_legend_handles_labels()
        budget_lines = {n: h for h, n in zip(handles, names, strict=True) if "Budget" in n}
        assert sorted(budget_lines) == ["Budget of first", "Budget of second"]
        steps = {n: h for h, n in zip(handles, names, strict=True) if "Best" in n}
        assert (
            budget_lines["Budget of first"].get_color() == steps["Best Value of first"].get_color()
        )
        assert list(budget_lines["Budget of second"].get_xdata()) == [11.0, 11.0]
    finally:
        _close(ax)
    ax = _mpl_axes([first, second], budget=10.0)
    try:
        assert ax.get_legend_handles_labels()[1].count("Budget") == 1
    finally:
        _close(ax)


def test_labels_are_capitalized_alike() -> None:
    pytest.importorskip("plotly")
    first, second = _crafted_study(name="a", budget=9.0), _crafted_study(name="b", budget=11.0)
    fig = plot_cost_history([first, second])
    texts = [fig.layout.title.text, fig.layout.xaxis.title.text, fig.layout.yaxis.title.text]
    texts += [t.name.removesuffix(" of a").removesuffix(" of b") for t in fig.data]
    texts += [a.text.split(" ")[0] for a in fig.layout.annotations]
    ax = _mpl_axes([first, second])
    try:
        texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        texts += [
            n.removesuffix(" of a").removesuffix(" of b")
            for n in ax.get_legend_handles_labels()[1]
        ]
    finally:
        _close(ax)
    assert set(texts) == {
        "Cost History Plot",
        "Cumulative Cost",
        "Objective Value",
        "Best Value",
        "Budget",
    }


def test_cost_axis_names_its_unit() -> None:
    pytest.importorskip("plotly")
    timed = _wall_clock_study()
    fig = plot_cost_history(timed)
    assert fig.layout.xaxis.title.text == "Cumulative Cost (s)"  # measured: seconds
    assert [a.text for a in fig.layout.annotations] == ["Budget 9 s"]
    np.testing.assert_allclose(fig.data[1].x, [2.0, 5.0, 6.0])
    assert "Cost %{customdata[1]:.4g} s" in fig.data[0].hovertemplate
    reported = _crafted_study(budget=9.0)
    assert plot_cost_history(reported).layout.xaxis.title.text == "Cumulative Cost"
    fig = plot_cost_history(reported, cost_unit="$")
    assert fig.layout.xaxis.title.text == "Cumulative Cost ($)"
    assert [a.text for a in fig.layout.annotations] == ["Budget 9 $"]
    # Studies in different units: none is claimed.
    assert plot_cost_history([timed, reported]).layout.xaxis.title.text == "Cumulative Cost"

    for study, kwargs, label in [
        (timed, {}, "Cumulative Cost (s)"),
        (reported, {}, "Cumulative Cost"),
        (reported, {"cost_unit": "kWh"}, "Cumulative Cost (kWh)"),
    ]:
        ax = _mpl_axes(study, **kwargs)
        try:
            assert ax.get_xlabel() == label
        finally:
            _close(ax)


def test_dashboard_chart_names_seconds_for_measured_costs() -> None:
    pytest.importorskip("plotly")
    pytest.importorskip("optuna_dashboard")
    import json

    from optuna_costbo.dashboard import GRAPH_OBJECT_ID
    from optuna_costbo.dashboard import update_dashboard

    study = _wall_clock_study()
    assert update_dashboard(study)
    prefix = f"dashboard:plot_data:{GRAPH_OBJECT_ID}:"
    attrs = study._storage.get_study_system_attrs(study._study_id)
    chunks = sorted((int(k[len(prefix) :]), v) for k, v in attrs.items() if k.startswith(prefix))
    graph = json.loads("".join(v for _, v in chunks))
    assert graph["layout"]["xaxis"]["title"]["text"] == "Cumulative Cost (s)"


def test_dashboard_chart_names_the_unit_the_user_gives() -> None:
    pytest.importorskip("plotly")
    pytest.importorskip("optuna_dashboard")
    import json

    from optuna_costbo.dashboard import GRAPH_OBJECT_ID

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 2.0)
        return x

    def axis_title(tmp: Path, unit: str | None = None) -> str:
        storage = f"sqlite:///{tmp / 'unit.db'}"
        study = optuna.create_study(storage=storage, sampler=CostRolloutSampler(6.0, seed=0))
        if unit is not None:
            study.set_user_attr("cost_unit", unit)  # the one place the unit is named
        study.optimize(objective)
        prefix = f"dashboard:plot_data:{GRAPH_OBJECT_ID}:"
        attrs = study._storage.get_study_system_attrs(study._study_id)
        chunks = sorted(
            (int(k[len(prefix) :]), v) for k, v in attrs.items() if k.startswith(prefix)
        )
        graph = json.loads("".join(v for _, v in chunks))
        return str(graph["layout"]["xaxis"]["title"]["text"])

    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        assert axis_title(Path(a)) == "Cumulative Cost"  # reported costs: the unit is unknown
        assert axis_title(Path(b), "$") == "Cumulative Cost ($)"


def test_the_study_unit_names_the_plots_and_the_bar_unless_they_are_given_one() -> None:
    from optuna_costbo._ledger.units import cost_unit

    study = optuna.create_study()
    study.add_trial(optuna.create_trial(value=1.0, user_attrs={"cost": 2.0}))
    trials = study.get_trials()
    assert cost_unit(trials, "cost") is None  # reported: unknown
    assert cost_unit(trials, "cost", study_attrs={"cost_unit": "kWh"}) == "kWh"
    assert cost_unit(trials, "cost", "$", {"cost_unit": "kWh"}) == "$"  # the caller's wins
    assert cost_unit(trials, "cost", "", {"cost_unit": "kWh"}) is None  # "" means none
    study.set_user_attr("cost_unit", "kWh")
    fig = plot_cost_history(study)
    assert fig.layout.xaxis.title.text == "Cumulative Cost (kWh)"


def test_infeasible_trials_are_drawn_apart_and_never_set_the_best_value() -> None:
    from optuna_costbo.visualization import plot_cost_history
    from optuna_costbo.visualization._cost_history import get_cost_histories

    def constraint(trial: optuna.trial.FrozenTrial) -> list[float]:
        return [trial.user_attrs["c"]]

    study = optuna.create_study(
        sampler=CostRolloutSampler(100.0, seed=0, constraints_func=constraint, n_startup_trials=9)
    )

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        trial.set_user_attr("c", 0.5 - x)  # feasible for x >= 0.5
        report_cost(trial, 1.0)
        return x  # the smallest values are the infeasible ones

    study.optimize(objective, n_trials=8)
    (history,) = get_cost_histories(study)
    assert history.feasible is not None and history.infeasible.any()
    feasible_values = history.values[history.complete & history.feasible]
    assert history.best_values is not None
    assert history.best_values[-1] == pytest.approx(feasible_values.min())
    assert history.best_values[-1] == pytest.approx(study.best_value)  # as Optuna says
    figure = plot_cost_history(study)
    names = [trace.name for trace in figure.data]
    assert any(name.endswith("(infeasible)") for name in names)
