"""optuna-dashboard integration, checked through the real dashboard's HTTP API.

The dashboard is the installed optuna-dashboard WSGI application served by wsgiref on
127.0.0.1 in a thread; the routes used are those its ``create_app`` registers:
``GET /api/studies`` (study summaries with user attrs) and ``GET /api/studies/<id>``
(trials with user attrs, ``union_user_attrs`` with a ``sortable`` flag set for numeric attrs,
and ``plotly_graph_objects``: the graphs saved with ``save_plotly_graph_object``).
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
import json
from pathlib import Path
import sys
import threading
from typing import Any
import urllib.request
from wsgiref.simple_server import WSGIRequestHandler
from wsgiref.simple_server import make_server

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.keys import REMAINING_ATTR
from optuna_costbo._ledger.keys import SPENT_ATTR
from optuna_costbo.dashboard import GRAPH_NAME
from optuna_costbo.dashboard import GRAPH_OBJECT_ID
from optuna_costbo.dashboard import update_dashboard


optuna.logging.set_verbosity(optuna.logging.ERROR)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _dashboard(storage_url: str) -> Iterator[str]:
    """Serve the real optuna-dashboard app for ``storage_url``; yield its base URL."""
    optuna_dashboard = pytest.importorskip("optuna_dashboard")
    app = optuna_dashboard.wsgi(storage_url)
    server = make_server("127.0.0.1", 0, app, handler_class=_QuietHandler)  # a free port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return json.loads(response.read().decode())


def _attrs(serialized: list[dict[str, str]]) -> dict[str, str]:
    """The dashboard serializes attrs as [{"key": ..., "value": str(value)}]."""
    return {item["key"]: item["value"] for item in serialized}


def _objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", 0.0, 1.0)
    report_cost(trial, 1.0 + x)
    return (x - 0.3) ** 2


class _DashboardSampler(CostRolloutSampler):
    """What the sampler will do when asked to: update the chart in after_trial."""

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        super().after_trial(study, trial, state, values)
        assert update_dashboard(study, trial=trial, state=state, values=values)


def _saved_graph(detail: dict[str, Any]) -> dict[str, Any]:
    graphs = {g["id"]: g["graph_object"] for g in detail["plotly_graph_objects"]}
    assert list(graphs) == [GRAPH_OBJECT_ID]  # saved once, overwritten by each update
    graph: dict[str, Any] = json.loads(graphs[GRAPH_OBJECT_ID])
    return graph


def test_real_dashboard_shows_costs_ledger_and_chart(tmp_path: Path) -> None:
    pytest.importorskip("optuna_dashboard")
    pytest.importorskip("plotly")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    budget = 6.0
    # soft: the test is about the dashboard, not the hard budget
    sampler = _DashboardSampler(budget=budget, n_startup_trials=3, seed=0, overrun_risk=None)
    study = optuna.create_study(sampler=sampler, storage=url, study_name="costbo-dashboard")
    study.optimize(_objective)  # stops by itself at the budget

    trials = study.get_trials()
    assert all(t.state == TrialState.COMPLETE for t in trials) and len(trials) >= 3
    costs = [t.user_attrs["cost"] for t in trials]
    spent = sum(costs)
    assert spent >= budget > spent - costs[-1]

    with _dashboard(url) as base:
        summaries = _get(f"{base}/api/studies")["study_summaries"]
        (summary,) = [s for s in summaries if s["study_name"] == "costbo-dashboard"]
        study_attrs = _attrs(summary["user_attrs"])
        assert float(study_attrs[BUDGET_ATTR]) == budget
        assert float(study_attrs[SPENT_ATTR]) == pytest.approx(spent)
        assert float(study_attrs[REMAINING_ATTR]) == 0.0

        detail = _get(f"{base}/api/studies/{summary['study_id']}")

    assert _attrs(detail["user_attrs"]) == study_attrs
    # Each trial's cost is there, numeric, and the dashboard sorts it as a number.
    assert [t["number"] for t in detail["trials"]] == [t.number for t in trials]
    for served, trial in zip(detail["trials"], trials, strict=True):
        cost = float(_attrs(served["user_attrs"])["cost"])
        assert cost == trial.user_attrs["cost"] and cost > 0.0
    assert {"key": "cost", "sortable": True} in detail["union_user_attrs"]

    # The chart: saved under one ID, up to date with the last trial (it was written in
    # after_trial, while that trial was still RUNNING in storage).
    graph = _saved_graph(detail)
    assert graph["layout"]["title"]["text"] == GRAPH_NAME
    (shape,) = graph["layout"]["shapes"]
    assert shape["x0"] == shape["x1"] == budget
    points, best = graph["data"]
    assert best["name"] == "Best Value" and best["line"]["shape"] == "hv"
    assert len(points["x"]) == len(trials)
    assert best["x"][-1] == pytest.approx(spent)
    values = [float(t.values[0]) for t in trials]
    running_best = [min(values[: i + 1]) for i in range(len(values))]
    assert best["y"] == pytest.approx(running_best)


def test_update_dashboard_from_a_callback_overwrites_one_chart(tmp_path: Path) -> None:
    pytest.importorskip("optuna_dashboard")
    pytest.importorskip("plotly")
    url = f"sqlite:///{tmp_path / 'callback.db'}"
    study = optuna.create_study(storage=url, study_name="callback")
    saved: list[bool] = []
    study.optimize(
        _objective,
        n_trials=3,
        callbacks=[lambda s, _: saved.append(update_dashboard(s, budget=4.0))],
    )
    assert saved == [True, True, True]
    with _dashboard(url) as base:
        (summary,) = _get(f"{base}/api/studies")["study_summaries"]
        graph = _saved_graph(_get(f"{base}/api/studies/{summary['study_id']}"))
    assert graph["layout"]["shapes"][0]["x0"] == 4.0
    costs = [t.user_attrs["cost"] for t in study.trials]
    assert graph["data"][1]["x"] == pytest.approx([costs[0], costs[0] + costs[1], sum(costs)])


def test_update_dashboard_without_the_packages_does_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    study = optuna.create_study()
    study.optimize(_objective, n_trials=1)
    for missing in ("optuna_dashboard", "plotly"):
        with monkeypatch.context() as patch:
            patch.setitem(sys.modules, missing, None)
            patch.setitem(sys.modules, "plotly.graph_objects", None)
            assert update_dashboard(study) is False
    system_attrs = study._storage.get_study_system_attrs(study._study_id)
    assert not any(key.startswith("dashboard:") for key in system_attrs)


def test_update_dashboard_swallows_errors(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("optuna_dashboard")
    pytest.importorskip("plotly")
    from optuna_costbo.visualization import _plotly

    study = optuna.create_study()
    study.add_trial(optuna.trial.create_trial(value=1.0, user_attrs={"cost": 1.0}))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("no figure today")

    monkeypatch.setattr(_plotly, "build_figure", broken)
    optuna.logging.enable_propagation()
    try:
        with caplog.at_level("WARNING", logger="optuna"):
            assert update_dashboard(study) is False
    finally:
        optuna.logging.disable_propagation()
    assert "Could not save the optuna-dashboard cost chart" in caplog.text
    assert "no figure today" in caplog.text
    with pytest.raises(ValueError, match="state"):
        update_dashboard(study, trial=study.trials[0])


def test_a_multi_objective_study_gets_its_hypervolume_chart() -> None:
    pytest.importorskip("optuna_dashboard")
    pytest.importorskip("plotly")
    multi = optuna.create_study(directions=["minimize", "minimize"])
    multi.add_trial(optuna.trial.create_trial(values=[1.0, 2.0], user_attrs={"cost": 1.0}))
    multi.add_trial(optuna.trial.create_trial(values=[2.0, 1.0], user_attrs={"cost": 1.0}))
    assert update_dashboard(multi) is True
    system_attrs = multi._storage.get_study_system_attrs(multi._study_id)
    saved = [v for k, v in system_attrs.items() if k.startswith("dashboard:")]
    assert saved and "Hypervolume" in str(saved)


def test_sampler_keeps_the_chart_current_by_default(tmp_path: Path) -> None:
    pytest.importorskip("optuna_dashboard")
    pytest.importorskip("plotly")
    from optuna_costbo import CostRolloutSampler
    from optuna_costbo import report_cost

    storage = f"sqlite:///{tmp_path / 'chart.db'}"
    study = optuna.create_study(storage=storage, sampler=CostRolloutSampler(5.0, seed=0))
    study.optimize(lambda t: report_cost(t, 1.0) or t.suggest_float("x", 0, 1))  # type: ignore[func-returns-value]
    keys = study._storage.get_study_system_attrs(study._study_id)
    assert any(GRAPH_OBJECT_ID in k for k in keys)

    memory = optuna.create_study(sampler=CostRolloutSampler(5.0, seed=0))
    memory.optimize(lambda t: report_cost(t, 1.0) or t.suggest_float("x", 0, 1))  # type: ignore[func-returns-value]
    assert not any(
        GRAPH_OBJECT_ID in k for k in memory._storage.get_study_system_attrs(memory._study_id)
    )  # no chart for a study in memory: optuna-dashboard cannot show it


def test_chart_redraws_are_throttled_but_the_last_one_has_every_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("optuna_dashboard")
    pytest.importorskip("plotly")
    from optuna_costbo import report_cost
    import optuna_costbo.dashboard as dashboard_mod

    calls: list[int] = []
    real = dashboard_mod.update_dashboard

    def counting(study: optuna.Study, **kwargs: Any) -> bool:
        calls.append(kwargs["trial"].number)
        return real(study, **kwargs)

    monkeypatch.setattr(dashboard_mod, "update_dashboard", counting)
    storage = f"sqlite:///{tmp_path / 'throttle.db'}"
    study = optuna.create_study(storage=storage, sampler=CostRolloutSampler(10.0, seed=0))
    study.optimize(lambda t: report_cost(t, 1.0) or t.suggest_float("x", 0, 1))  # type: ignore[func-returns-value]
    assert len(study.trials) == 10
    assert calls[0] == 0 and calls[-1] == 9  # first trial, and the one that spent the budget
    assert len(calls) < 10  # quick trials: not every one redraws
