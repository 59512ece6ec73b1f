"""The search space of a define-by-run study: the union of the completed trials' parameters,
which of them are conditional and on what (read off the data), and the bridge that encodes
trials that lack a parameter and decodes points without the parameters they switch off."""

from __future__ import annotations

from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.trial import create_trial
import pytest

from optuna_costbo._sampler.snapshot import completed_search_space
from optuna_costbo._sampler.space import Activity
from optuna_costbo._sampler.space import SpaceBridge


BOOSTER = CategoricalDistribution(["linear", "tree", "dart"])
DEPTH = IntDistribution(1, 12)
DROP = FloatDistribution(0.0, 1.0)
LR = FloatDistribution(1e-3, 1.0, log=True)


def _trial(params: dict[str, Any], dists: dict[str, BaseDistribution]) -> Any:
    return create_trial(params=params, distributions=dists, value=0.0)


def _xgb(booster: str, depth: int = 4, drop: float = 0.5) -> Any:
    params: dict[str, Any] = {"booster": booster, "lr": 0.01}
    dists: dict[str, BaseDistribution] = {"booster": BOOSTER, "lr": LR}
    if booster != "linear":
        params["depth"], dists["depth"] = depth, DEPTH
    if booster == "dart":
        params["drop"], dists["drop"] = drop, DROP
    return _trial(params, dists)


def _space(trials: list[Any]) -> tuple[dict[str, BaseDistribution], Activity]:
    study = optuna.create_study()
    for t in trials:
        study.add_trial(t)
    return completed_search_space(study, study.get_trials(deepcopy=False))


def test_the_union_with_rules_read_off_the_data() -> None:
    space, activity = _space([_xgb("linear"), _xgb("tree"), _xgb("dart"), _xgb("tree", 7)])
    assert list(space) == ["booster", "depth", "drop", "lr"]
    assert activity.rules == {
        "depth": ("booster", frozenset({1, 2})),
        "drop": ("booster", frozenset({2})),
    }
    assert activity.optional == frozenset()


def test_a_rule_waits_for_its_evidence_and_a_parameter_without_a_parent_is_optional() -> None:
    # Before dart has completed, "drop" is unknown and depth is asked for "tree" only.
    space, activity = _space([_xgb("linear"), _xgb("tree")])
    assert "drop" not in space and activity.rules["depth"] == ("booster", frozenset({1}))
    # A parameter that comes and goes with no categorical explaining it is optional.
    x = FloatDistribution(0, 1)
    space, activity = _space(
        [_trial({"x": 0.1, "extra": 0.3}, {"x": x, "extra": x}), _trial({"x": 0.2}, {"x": x})]
    )
    assert set(space) == {"x", "extra"} and activity.optional == {"extra"}


def test_the_incremental_space_is_the_full_recomputation() -> None:
    trials = [
        _xgb(b, 1 + d % 12)
        for b, d in zip(["tree", "linear", "dart", "tree", "dart"] * 3, range(15), strict=True)
    ]
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    seen = []
    for t in trials:
        study.add_trial(t)
        seen.append(completed_search_space(study, study.get_trials(deepcopy=False)))
    fresh = _space(trials)
    assert seen[-1] == fresh


def test_the_bridge_encodes_trials_that_lack_a_parameter_and_decodes_without_it() -> None:
    space, activity = _space([_xgb("linear"), _xgb("tree"), _xgb("dart")])
    bridge = SpaceBridge(space, activity)
    rows = [
        {"booster": "linear", "lr": 0.01},
        {"booster": "dart", "depth": 3, "drop": 0.2, "lr": 0.1},
    ]
    assert all(bridge.holds_params(p) for p in rows)
    assert not bridge.holds_params({"booster": "tree", "lr": 0.01})  # tree asks for depth
    assert not bridge.holds_params({"lr": 0.01})  # the parent itself is always asked
    # In one batch, each dict is judged as alone, in its own place.
    mixed = [rows[0], {"booster": "tree", "lr": 0.01}, rows[1], {"lr": 0.01}, rows[0]]
    np.testing.assert_array_equal(
        bridge.holds_many(mixed), [bridge.holds_params(p) for p in mixed]
    )
    assert bridge.holds_many(mixed).tolist() == [True, False, True, False, True]
    assert bridge.holds_many([]).shape == (0,)
    Z = bridge.encode_params(rows)  # (2, D)
    assert bridge.decode_many(Z) == [
        {"booster": "linear", "lr": pytest.approx(0.01)},
        {"booster": "dart", "depth": 3, "drop": pytest.approx(0.2), "lr": pytest.approx(0.1)},
    ]
    np.testing.assert_array_equal(bridge.codec.project(Z), Z)
    assert bridge.key != SpaceBridge(space).key  # warm starts are kept per conditional space
