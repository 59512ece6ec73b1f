"""Bad constructor arguments and unsupported studies: clear errors that say what is allowed."""

from __future__ import annotations

import math
from typing import Any

from _awkward import _sampler
import numpy as np
import optuna
import pytest

from optuna_costbo import CostRolloutSampler


optuna.logging.set_verbosity(optuna.logging.ERROR)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": True}, "budget must be a positive finite number"),
        ({"budget": None}, "budget=None needs a stopping rule"),
        ({"budget": [10.0]}, "budget must be a positive finite number"),
        ({"budget": -math.inf}, "budget must be a positive finite number"),
        ({"budget": 1.0, "acquisition": None}, "acquisition must be one of"),
        ({"budget": 1.0, "acquisition": "EI"}, "acquisition must be one of"),
        ({"budget": 1.0, "horizon": True}, "horizon must be an int >= 1"),
        ({"budget": 1.0, "horizon": -1}, "horizon must be an int >= 1"),
        ({"budget": 1.0, "n_startup_trials": 1.5}, "n_startup_trials must be"),
        ({"budget": 1.0, "n_startup_trials": True}, "n_startup_trials must be"),
        ({"budget": 1.0, "n_startup_trials": "3"}, "n_startup_trials must be"),
        ({"budget": 1.0, "cost_attr": 5}, "cost_attr must be"),
        ({"budget": 1.0, "cost_attr": None}, "cost_attr must be"),
        ({"budget": 1.0, "seed": True}, "seed must be"),
        ({"budget": 1.0, "seed": "0"}, "seed must be"),
        ({"budget": 1.0, "cost_fn": lambda: 1.0}, "cost_fn must take"),
        ({"budget": 1.0, "cost_fn": "x"}, "cost_fn must be callable"),
    ],
)
def test_more_bad_constructor_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CostRolloutSampler(**kwargs)


@pytest.mark.parametrize("seed", [-1, 2**40])
def test_out_of_range_seed_is_a_value_error(seed: int) -> None:
    with pytest.raises(ValueError):
        CostRolloutSampler(budget=1.0, seed=seed)


@pytest.mark.parametrize("budget", [np.int64(5), np.float32(2.5)])
def test_numpy_scalar_budget_is_accepted(budget: Any) -> None:
    sampler = CostRolloutSampler(budget=budget)
    assert sampler.budget == float(budget)


def test_studies_beyond_four_objectives_and_a_price_of_one_of_several_are_refused() -> None:
    study = optuna.create_study(directions=["minimize"] * 5, sampler=_sampler("ei"))
    with pytest.raises(ValueError, match="1 to 4 objectives; this study has 5"):
        study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0, 1.0, 1.0, 1.0), n_trials=1)
    priced = optuna.create_study(
        directions=["minimize", "minimize"],
        sampler=CostRolloutSampler(budget=10.0, value_per_cost=1e-3),
    )
    with pytest.raises(ValueError, match=r"value_per_cost .* is for single-objective studies"):
        priced.optimize(lambda t: (t.suggest_float("x", 0, 1), 1.0), n_trials=1)
