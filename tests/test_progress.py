"""CostProgressBar: a tqdm bar over the cost budget, driven as an Optuna callback."""

from __future__ import annotations

from collections.abc import Callable
import io
import sys

import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import budget as b
from optuna_costbo import report_cost
from optuna_costbo.progress import CostProgressBar


optuna.logging.set_verbosity(optuna.logging.ERROR)
pytest.importorskip("tqdm")


def _final_line(output: str) -> str:
    """The last state tqdm drew (redraws are separated by carriage returns)."""
    frames = [frame.strip() for frame in output.replace("\n", "\r").split("\r")]
    return [frame for frame in frames if frame][-1]


def _scripted(values: list[float], costs: list[float]) -> Callable[[optuna.Trial], float]:
    def objective(trial: optuna.Trial) -> float:
        trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, costs[trial.number])
        return values[trial.number]

    return objective


def test_bar_total_is_the_samplers_budget_and_it_closes_when_spent() -> None:
    out = io.StringIO()
    bar = CostProgressBar(file=out)
    sampler = CostRolloutSampler(budget=5.0, n_startup_trials=10, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_scripted([3.0, 2.5, 4.0, 1.25, 2.0, 0.1], [1.0] * 6), callbacks=[bar])

    assert len(study.trials) == 5  # the sampler stopped the study at the budget
    assert bar.budget == 5.0  # read from the study's cost_budget attr
    assert bar.closed
    assert bar.spent == pytest.approx(5.0) and bar.n_trials == 5 and bar.best_value == 1.25
    final = _final_line(out.getvalue())
    assert final.startswith("Cost: 100%")
    assert "5/5" in final and "best=1.25" in final and "trials=5" in final
    # It drew every trial's state on the way: 1/5 with the first value as the best.
    assert "1/5" in out.getvalue() and "best=3," in out.getvalue()


def test_bar_is_capped_at_budget_and_ignores_calls_after_closing() -> None:
    out = io.StringIO()
    bar = CostProgressBar(budget=5.0, file=out, desc="Spend")
    study = optuna.create_study(direction="maximize")  # no cost-aware sampler: no stop
    study.optimize(_scripted([1.0, 3.0, 2.0, 9.0], [2.0] * 4), n_trials=4, callbacks=[bar])

    assert len(study.trials) == 4
    assert bar.closed
    # Closed after trial 2 (6 >= 5): the 4th trial (value 9, spent 8) did not move it.
    assert bar.spent == pytest.approx(6.0) and bar.n_trials == 3 and bar.best_value == 3.0
    final = _final_line(out.getvalue())
    assert final.startswith("Spend: 100%")
    assert "5/5" in final and "best=3" in final and "trials=3" in final
    assert "best=9" not in out.getvalue()


def test_pruned_and_failed_trials_count_and_best_ignores_them() -> None:
    out = io.StringIO()
    bar = CostProgressBar(budget=10.0, file=out)

    def objective(trial: optuna.Trial) -> float:
        report_cost(trial, [1.5, 2.0, 0.5][trial.number])
        if trial.number == 1:
            raise optuna.TrialPruned()
        if trial.number == 2:
            raise RuntimeError("boom")
        return 4.0

    study = optuna.create_study()
    study.optimize(objective, n_trials=3, callbacks=[bar], catch=(RuntimeError,))
    assert [t.state for t in study.trials] == [
        TrialState.COMPLETE,
        TrialState.PRUNED,
        TrialState.FAIL,
    ]
    assert bar.spent == pytest.approx(4.0) and bar.n_trials == 3 and bar.best_value == 4.0
    assert not bar.closed
    bar.close()
    bar.close()  # idempotent
    assert bar.closed
    final = _final_line(out.getvalue())
    assert "4/10" in final and "best=4" in final and "trials=3" in final
    assert final.startswith("Cost:  40%")


def test_context_manager_closes_and_no_best_before_a_complete_trial() -> None:
    out = io.StringIO()
    study = optuna.create_study()
    study.set_user_attr(b.BUDGET_ATTR, 8.0)

    def objective(trial: optuna.Trial) -> float:
        report_cost(trial, 2.0)
        raise optuna.TrialPruned()

    with CostProgressBar(file=out) as bar:
        study.optimize(objective, n_trials=1, callbacks=[bar])
    assert bar.closed and bar.best_value is None
    final = _final_line(out.getvalue())
    assert "2/8" in final and "trials=1" in final and "best" not in final


def test_missing_budget_is_a_clear_error() -> None:
    study = optuna.create_study()
    with pytest.raises(ValueError, match=r"no 'cost_budget' user attr.*budget=\.\.\."):
        study.optimize(lambda t: 1.0, n_trials=1, callbacks=[CostProgressBar(file=io.StringIO())])
    with pytest.raises(ValueError, match="budget must be a positive finite number"):
        CostProgressBar(budget=0.0)


def test_missing_tqdm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with pytest.raises(ImportError, match=r'pip install "optuna-costbo\[progress\]"'):
        CostProgressBar(budget=1.0)
