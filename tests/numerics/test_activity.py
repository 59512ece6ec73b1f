"""The activity rule of conditional spaces against its definition, evaluated by recursion."""

from __future__ import annotations

import numpy as np
import pytest

from optuna_costbo._numerics.activity import ActivityRule
from optuna_costbo._numerics.param_specs import CategoricalParam
from optuna_costbo._numerics.param_specs import Condition
from optuna_costbo._numerics.param_specs import NumericParam
from optuna_costbo._numerics.param_specs import Param
from optuna_costbo._numerics.search_space import BoxCodec


def _reference(values: np.ndarray, conditions: dict[int, Condition]) -> np.ndarray:
    """Active by the definition: a parameter without a condition is active; one with a
    condition is active iff its parent is active and takes one of the condition's choices
    (a plain recursion per row and parameter)."""

    def active(row: np.ndarray, i: int) -> bool:
        if i not in conditions:
            return True
        cond = conditions[i]
        return active(row, cond.parent) and int(row[cond.parent]) in cond.choices

    n, p = values.shape
    return np.array([[active(values[r], i) for i in range(p)] for r in range(n)])


# A three-level chain: 0 (booster, 3 choices) -> 1 (tree method, 2 choices, for boosters 1, 2)
# -> 3 (a knob of tree method 1); 2 and 4 hang off 0; 5 is unconditional. Conditions are given
# child-before-parent on purpose.
PARAMS: list[Param] = [
    CategoricalParam(3),
    CategoricalParam(2),
    NumericParam(0.0, 1.0),
    NumericParam(1e-3, 1.0, log=True),
    NumericParam(1, 10, integer=True),
    NumericParam(-1.0, 1.0),
]
CONDITIONS = {
    3: Condition(1, frozenset({1})),
    1: Condition(0, frozenset({1, 2})),
    2: Condition(0, frozenset({0})),
    4: Condition(0, frozenset({2})),
}


def test_activity_of_a_chain_equals_the_recursive_definition() -> None:
    rule = ActivityRule(PARAMS, CONDITIONS)
    grid = np.array([[a, b, 0.5, 0.1, 3, 0.0] for a in range(3) for b in range(2)], dtype=float)
    np.testing.assert_array_equal(rule.active(grid), _reference(grid, CONDITIONS))
    # The chain matters: parameter 3 is inactive when 1 says "1" but 0 switched 1 off.
    row = rule.active(np.array([[0.0, 1.0, 0.5, 0.1, 3, 0.0]]))[0]
    assert not row[1] and not row[3]


def test_activity_in_the_box_equals_activity_of_the_full_decode() -> None:
    codec = BoxCodec(PARAMS, conditions=CONDITIONS)
    rng = np.random.default_rng(0)
    z = rng.random((500, codec.dim))  # relaxed points: blocks are not one-hot
    expected = _reference(codec._decode_raw(z), CONDITIONS)
    np.testing.assert_array_equal(codec._active_in_box(z), expected)
    decoded = codec.decode(z)
    np.testing.assert_array_equal(np.isnan(decoded), ~expected)
    # deactivate puts exactly the inactive columns at their fill and keeps the activity.
    zd = codec.deactivate(z)
    mask = codec.deactivate_with_mask(z)[1]
    np.testing.assert_array_equal(zd[~mask], z[~mask])
    np.testing.assert_array_equal(codec.deactivate_with_mask(zd)[1], mask)
    np.testing.assert_array_equal(codec._active_in_box(zd), expected)
    # The optimizer's one-pass form gives both at once.
    zd2, mask2 = codec.deactivate_with_mask(z)
    np.testing.assert_array_equal(zd2, zd)
    np.testing.assert_array_equal(mask2, mask)


def test_a_cycle_of_conditions_falls_back_to_the_fixed_point() -> None:
    params: list[Param] = [CategoricalParam(2), CategoricalParam(2), NumericParam(0.0, 1.0)]
    conditions = {0: Condition(1, frozenset({1})), 1: Condition(0, frozenset({1}))}
    rule = ActivityRule(params, conditions)
    values = np.array([[1, 1, 0.3], [0, 1, 0.3], [1, 0, 0.3], [0, 0, 0.3]], dtype=float)
    # Iterated from "all active" to a fixed point: both stay on where both say 1, and once
    # one is off its child (the other) goes off too.
    out = rule.active(values)
    assert out[0].tolist() == [True, True, True]
    assert not out[1:, :2].any()
    assert out[:, 2].all()


@pytest.mark.parametrize("bad", [np.nan, -1.0, 7.0])
def test_a_parent_without_a_legal_choice_switches_its_children_off(bad: float) -> None:
    rule = ActivityRule(PARAMS, CONDITIONS)
    out = rule.active(np.array([[bad, 1.0, 0.5, 0.1, 3, 0.0]]))[0]
    assert out.tolist() == [True, False, False, False, False, True]
