"""The engine around the model: one read of the study per trial, the time between trials
charged to a wall-clock budget, and a suggestion's short way down to scipy."""

from __future__ import annotations

import datetime
import importlib.util
from pathlib import Path
import time
from typing import Any

import optuna
from optuna.storages._cached_storage import _CachedStorage
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count full reads of a trial list on SQLite (Optuna's cached RDB storage)."""
    count = [0]
    real = _CachedStorage.get_all_trials

    def counting(self: _CachedStorage, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_CachedStorage, "get_all_trials", counting)
    return count


def _objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -2.0, 2.0)
    y = trial.suggest_float("y", -2.0, 2.0)
    report_cost(trial, 1.0 + x * x)
    return (x - 1.0) ** 2 + y * y


@pytest.mark.parametrize("sampler", ["tpe", "costbo", "costbo-hard"])
def test_reads_per_trial_on_sqlite_are_at_most_tpes_plus_one(
    sampler: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Optuna's own loop reads once per trial, TPE twice more; this sampler once in
    # before_trial (shared by ledger, search space and proposal), once for the parallel clash
    # check and once to store the ledger: TPE's 3 + 1. A hard budget (the default for reported
    # costs) reads again only while another trial runs.
    made = (
        optuna.samplers.TPESampler(seed=0)
        if sampler == "tpe"
        else CostRolloutSampler(
            budget=1e9, seed=0, overrun_risk=0.05 if sampler == "costbo-hard" else None
        )
    )
    study = optuna.create_study(sampler=made, storage=f"sqlite:///{tmp_path / 'r.db'}")
    study.optimize(_objective, n_trials=8)  # past the start-up design
    reads = _count_reads(monkeypatch)
    study.optimize(_objective, n_trials=6)
    per_trial = reads[0] / 6
    assert per_trial <= (3 if sampler == "tpe" else 4), per_trial


def test_time_between_trials_is_charged_to_a_wall_clock_budget(tmp_path: Path) -> None:
    # Everything from the first trial's start to the last trial's cost measurement is
    # charged: the objectives, the suggestions, Optuna's work and the sampler's hooks between
    # trials; nothing falls between two trials' charges.
    sampler = CostRolloutSampler(budget=1e9, seed=0)
    study = optuna.create_study(sampler=sampler, storage=f"sqlite:///{tmp_path / 'w.db'}")

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        time.sleep(0.02)
        return x

    study.optimize(objective, n_trials=25)
    trials = study.get_trials()
    end = trials[-1].datetime_complete
    assert end is not None and trials[0].datetime_start is not None
    span = (end - trials[0].datetime_start).total_seconds()
    spent = sampler.ledger(study).spent
    # Only the last trial's storing of its state falls outside its own charge.
    assert spent <= span + 1e-6
    assert spent >= 0.95 * span  # all but the last trial's storing of its result
    assert all(t.system_attrs[SAMPLER_SECONDS_ATTR] > 0.0 for t in trials[1:])


def test_a_pause_between_optimize_calls_is_not_charged() -> None:
    sampler = CostRolloutSampler(budget=1e9, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=3)
    before = sampler.ledger(study).spent
    paused = datetime.datetime.now()
    time.sleep(1.2)  # longer than a per-trial overhead can be
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=1)
    after = sampler.ledger(study).spent
    last = study.get_trials()[-1]
    assert last.datetime_start is not None and last.datetime_start > paused
    assert after - before < 1.0


def test_every_call_into_scipy_optimize_is_at_most_8_package_frames_in_5_files_deep() -> None:
    # Issue 57: model-based suggestions (the rollout with a constraint and a learned cost,
    # with cost_fn, under a hard budget; EIpu with cost_fn; EI; two objectives), profiled in a
    # fresh process by benchmarks/engine.py's depth probe; a call in an L-BFGS-B worker thread
    # counts the calling thread's frames at the hand-off too.
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("engine", root / "benchmarks" / "engine.py")
    assert spec is not None and spec.loader is not None
    engine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(engine)
    results = engine._run(root, "depth", {"scenarios": engine.DEPTH_SCENARIOS})
    assert [r["name"] for r in results] == [s["name"] for s in engine.DEPTH_SCENARIOS]
    for r in results:
        assert r["calls"] > 0, r["name"]  # the probe saw the suggestion reach scipy
        assert r["frames"] <= 8 and r["files"] <= 5, r
