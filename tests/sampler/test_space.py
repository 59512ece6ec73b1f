"""The bridge's rows of finished trials, kept across suggestions, and the bridge kept while the
space is the same: always what a fresh bridge computes."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
from optuna.trial import create_trial

from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo._sampler.snapshot import TrialReads
from optuna_costbo._sampler.space import Activity
from optuna_costbo._sampler.space import SpaceBridge


SPACE: dict[str, BaseDistribution] = {
    "lr": FloatDistribution(1e-4, 1e-1, log=True),
    "depth": IntDistribution(1, 16),
    "frac": FloatDistribution(0.0, 1.0, step=0.25),
    "kind": CategoricalDistribution(["a", "b", "c"]),
}


def _params(rng: np.random.Generator) -> dict[str, Any]:
    return {
        "lr": float(10 ** rng.uniform(-4, -1)),
        "depth": int(rng.integers(1, 17)),
        "frac": float(rng.choice([0.0, 0.25, 0.5, 0.75, 1.0])),
        "kind": str(rng.choice(["a", "b", "c"])),
    }


def _fresh(space: dict[str, BaseDistribution], done: list[FrozenTrial]) -> Any:
    """What the bridge computed before it kept rows: every trial checked and encoded anew."""
    bridge = SpaceBridge(space)
    ok = bridge.holds_many([t.params for t in done])  # (n,)
    held = [t for t, o in zip(done, ok, strict=True) if o]
    return held, bridge.encode_params([t.params for t in held])  # (f, D)


def _study(n: int, seed: int = 0) -> optuna.Study:
    study = optuna.create_study()
    rng = np.random.default_rng(seed)
    for _ in range(n):
        study.add_trial(create_trial(params=_params(rng), distributions=SPACE, value=0.0))
    return study


def test_kept_rows_equal_a_fresh_encoding_after_trials_are_added() -> None:
    study = _study(20)
    bridge = SpaceBridge(SPACE)
    _, X_first = bridge.held_finished(study.get_trials(deepcopy=False))
    kept = dict(bridge._rows)
    rng = np.random.default_rng(1)
    for _ in range(3):
        study.add_trial(create_trial(params=_params(rng), distributions=SPACE, value=1.0))
    trials = study.get_trials(deepcopy=False)
    held, X = bridge.held_finished(trials)
    fresh, X_fresh = _fresh(SPACE, trials)
    assert [t.number for t in held] == [t.number for t in fresh] == list(range(23))
    assert X.shape == (23, SpaceBridge(SPACE).codec.dim)
    assert np.array_equal(X, X_fresh)  # bit for bit
    assert np.array_equal(X[:20], X_first)
    assert all(bridge._rows[i][1] is kept[i][1] for i in kept)  # the first 20 were reused
    bridge.held_finished(trials[20:])
    assert set(bridge._rows) == {t._trial_id for t in trials[20:]}  # only the trials read


def test_a_changed_space_gets_a_new_bridge_and_rows_a_trial_outside_it_is_not_held() -> None:
    study = optuna.create_study()
    wide = {"x": FloatDistribution(0.0, 2.0), "y": FloatDistribution(0.0, 1.0)}
    for x in (0.5, 1.5):
        study.add_trial(create_trial(params={"x": x, "y": 0.5}, distributions=wide, value=x))
    trials = study.get_trials(deepcopy=False)
    reads = TrialReads()
    bridge = reads.bridge(wide, trials[-1])
    assert reads.bridge(dict(wide), trials[-1]) is bridge  # the same space: the same bridge
    held, X = bridge.held_finished(trials)
    assert [t.number for t in held] == [0, 1] and X[:, 0].tolist() == [0.25, 0.75]
    narrow = {"x": FloatDistribution(0.0, 1.0), "y": FloatDistribution(0.0, 1.0)}
    other = reads.bridge(narrow, trials[-1])
    assert other is not bridge and other._rows == {}
    held, X = other.held_finished(trials)
    assert [t.number for t in held] == [0]  # x = 1.5 is outside [0, 1]
    assert np.array_equal(X, _fresh(narrow, trials)[1]) and X[0, 0] == 0.5
    assert reads.bridge(wide, trials[-1]) is not bridge  # only the last space is kept


def test_another_activity_gets_another_bridge_and_a_copy_starts_empty() -> None:
    space = {"kind": CategoricalDistribution(["a", "b"]), "x": FloatDistribution(0.0, 1.0)}
    trial = create_trial(params={"kind": "a", "x": 0.5}, distributions=space, value=0.0)
    reads = TrialReads()
    bridge = reads.bridge(space, trial)
    reads._activity[trial._trial_id] = Activity(rules={"x": ("kind", frozenset({0}))})
    conditional = reads.bridge(space, trial)
    assert conditional is not bridge and conditional.conditional == frozenset({1})
    assert pickle.loads(pickle.dumps(reads))._bridge[0] == ()


def test_coinciding_trial_ids_never_share_a_row() -> None:
    """``create_trial``'s trials all have id -1; studies of two storages share ids."""
    space = {"x": FloatDistribution(0.0, 1.0)}
    trials = [create_trial(params={"x": x}, distributions=space, value=0.0) for x in (0.1, 0.9)]
    bridge = SpaceBridge(space)
    assert bridge.held_finished(trials)[1][:, 0].tolist() == [0.1, 0.9]
    again = [create_trial(params={"x": 0.3}, distributions=space, value=0.0)]
    assert bridge.held_finished(again)[1][:, 0].tolist() == [0.3]
    assert bridge.held_finished([])[1].shape == (0, 1)


def test_conditional_rows_equal_a_fresh_check_and_encoding() -> None:
    space = {"kind": CategoricalDistribution(["lin", "tree"]), "depth": IntDistribution(1, 8)}
    activity = Activity(rules={"depth": ("kind", frozenset({1}))})
    given = [{"kind": "lin"}, {"kind": "tree", "depth": 3}, {"kind": "tree"}, {"depth": 2}]
    study = optuna.create_study()
    for p in given:
        study.add_trial(create_trial(params=p, distributions={k: space[k] for k in p}, value=0.0))
    trials = study.get_trials(deepcopy=False)
    bridge = SpaceBridge(space, activity)
    for _ in range(2):  # computed, then kept
        held, X = bridge.held_finished(trials)
        assert [t.number for t in held] == [0, 1]  # tree asks for depth; kind always asked
        fresh = SpaceBridge(space, activity)
        assert np.array_equal(X, fresh.encode_params([t.params for t in held]))


def test_a_study_keeps_one_bridge_and_rows_of_finished_trials_only() -> None:
    sampler = CostRolloutSampler(1e4, n_startup_trials=2, seed=0)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        report_cost(trial, 1.0)  # reported costs: no queued quick-route point skips the read
        return trial.suggest_float("x", 0.0, 1.0) ** 2

    study.optimize(objective, n_trials=4)
    reads = sampler._suggester.reads
    bridge = reads._bridge[1]
    running = study.ask()
    running.suggest_float("x", 0.0, 1.0)
    assert reads._bridge[1] is bridge
    finished = {t._trial_id for t in study.get_trials(states=(TrialState.COMPLETE,))}
    assert set(bridge._rows) == finished and running._trial_id not in finished
