"""prefetch=True: the next suggestion computed while the current trial runs."""

from __future__ import annotations

import time

import optuna
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost


optuna.logging.set_verbosity(optuna.logging.WARNING)


def _objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", 0.0, 1.0)
    y = trial.suggest_int("y", 0, 10)
    time.sleep(0.05)  # long enough for the next suggestion to be computed meanwhile
    report_cost(trial, 1.0 + x)
    return (x - 0.3) ** 2 + 0.01 * (y - 4) ** 2


def _run(prefetch: bool, seed: int = 0, n_jobs: int = 1) -> tuple[list, CostRolloutSampler]:
    sampler = CostRolloutSampler(budget=30.0, seed=seed, prefetch=prefetch, acquisition="eipu")
    study = optuna.create_study(sampler=sampler)
    study.optimize(_objective, n_jobs=n_jobs)
    return [(t.params, t.value) for t in study.trials], sampler


def test_prefetched_suggestions_are_used_and_the_run_is_deterministic() -> None:
    first, sampler = _run(True)
    again, _ = _run(True)
    assert first == again  # same seed, same run
    model_trials = len(first) - 4  # after the start-up design (d + 1, at least 4)
    assert model_trials >= 10
    # Every model-based trial but the first (nothing running before it) took the point
    # computed while the previous trial ran.
    assert sampler._suggester.prefetch.used == model_trials - 1
    # Valid points, never an evaluated one again.
    points = [tuple(sorted(p.items())) for p, _ in first]
    assert len(set(points)) == len(points)


def test_prefetch_finds_the_optimum_as_well() -> None:
    on, _ = _run(True, seed=1)
    off, _ = _run(False, seed=1)
    best_on = min(v for _, v in on)
    best_off = min(v for _, v in off)
    assert best_on < 0.01 and best_off < 0.01


def test_with_parallel_threads_the_run_is_sound() -> None:
    # With two threads a prefetch starts only when the other thread has no trial running, and
    # is taken only if nothing else happened since: the run completes, nothing twice.
    trials, _ = _run(True, n_jobs=2)
    assert all(v is not None for _, v in trials)
    assert len(trials) >= 15
    points = [tuple(sorted(p.items())) for p, _ in trials]
    assert len(set(points)) == len(points)


def test_prefetch_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="prefetch must be True or False"):
        CostRolloutSampler(budget=1.0, prefetch="yes")  # type: ignore[arg-type]


def test_a_trial_that_takes_a_prefetched_point_keeps_no_stale_read() -> None:
    # The read made for a trial's search space serves its first proposal; a trial that takes
    # a prefetched point never makes that proposal, so the read is dropped: a proposal after
    # a clash must see the trials that started (and maybe finished) since.
    sampler = CostRolloutSampler(budget=30.0, seed=0, prefetch=True, acquisition="eipu")
    study = optuna.create_study(sampler=sampler)
    stale: list[int] = []

    def objective(trial: optuna.Trial) -> float:
        value = _objective(trial)
        if trial._trial_id in sampler._suggester.reads._reads:
            stale.append(trial.number)
        return value

    study.optimize(objective)
    assert sampler._suggester.prefetch.used >= 5
    # Trial 0 has no search space yet (nothing completed): Optuna asks for no relative
    # sample, and its read is simply never used.
    assert [n for n in stale if n > 0] == []


def test_trial_reads_serve_one_proposal_and_can_be_dropped() -> None:
    from optuna_costbo._sampler.snapshot import TrialReads

    study = optuna.create_study()
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=2)
    trial = study.ask()
    frozen = study._storage.get_trial(trial._trial_id)
    reads = TrialReads()
    reads.search_space(study, frozen)
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=1)
    assert len(reads.trials(study, frozen)) == 3  # the read made before the new trial
    assert len(reads.trials(study, frozen)) == 4  # then a fresh one
    reads.search_space(study, frozen)
    reads.discard(frozen)
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=1)
    assert len(reads.trials(study, frozen)) == 5
