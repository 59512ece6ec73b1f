"""Property-based tests of the ledger: ``budget.compute_ledger`` against a brute-force sum.

Trials are random mixes of states, reported costs (valid, zero, negative, NaN, infinite,
non-numeric), timestamps (missing, zero-length, clock running backwards), skipped flags and
sampler seconds.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import pytest

from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.ledger import compute_ledger


T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAIN_SETTINGS = settings(SETTINGS, max_examples=200)

valid_costs = st.one_of(
    st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False),
    st.integers(min_value=1, max_value=10**6),
    st.floats(min_value=1e-6, max_value=1e6).map(np.float64),
    st.integers(min_value=1, max_value=1000).map(np.int64),
    st.floats(min_value=1e-3, max_value=1e3).map(np.float32),
)
bad_costs = st.one_of(
    st.sampled_from(
        [0, 0.0, -0.0, -1.0, -1e300, math.nan, math.inf, -math.inf, True, False, None]
    ),
    st.sampled_from(["1.0", "cheap", [1.0], {"cost": 1.0}, np.bool_(True), np.float64("nan")]),
    st.floats(max_value=0.0),
)
seconds = st.floats(min_value=-1e4, max_value=1e5, allow_nan=False, allow_infinity=False)


@st.composite
def trials(draw: Any, sampler_seconds: Any = None) -> FrozenTrial:
    state = draw(st.sampled_from(list(TrialState)))
    start = draw(st.one_of(st.none(), seconds.map(lambda s: T0 + datetime.timedelta(seconds=s))))
    complete = None
    if state in FINISHED or draw(st.booleans()):  # finished trials usually have an end
        duration = draw(st.one_of(st.none(), seconds))
        if duration is not None:
            complete = (start or T0) + datetime.timedelta(seconds=duration)
    user_attrs: dict[str, Any] = {}
    cost_kind = draw(st.sampled_from(["none", "valid", "bad"]))
    if cost_kind == "valid":
        user_attrs["cost"] = draw(valid_costs)
    elif cost_kind == "bad":
        user_attrs["cost"] = draw(bad_costs)
    system_attrs: dict[str, Any] = {}
    if draw(st.booleans()):
        system_attrs[SKIPPED_ATTR] = draw(st.booleans())
    if cost_kind == "valid" and draw(st.booleans()):
        # The sampler has recorded the cost: on a RUNNING trial, its state is being stored.
        system_attrs[COST_SOURCE_ATTR] = draw(st.sampled_from(["reported", "wall_clock"]))
    strategy = sampler_seconds if sampler_seconds is not None else st.floats(0.0, 1e3)
    if draw(st.booleans()):
        system_attrs[SAMPLER_SECONDS_ATTR] = draw(strategy)
    return FrozenTrial(
        number=0,
        state=state,
        value=1.0 if state == TrialState.COMPLETE else None,
        datetime_start=start,
        datetime_complete=complete,
        params={"x": 0.5},
        distributions={"x": FloatDistribution(0, 1)},
        user_attrs=user_attrs,
        system_attrs=system_attrs,
        intermediate_values={},
        trial_id=0,
    )


def _valid_cost(raw: Any) -> float | None:
    if isinstance(raw, (bool, np.bool_)):
        return None
    if not isinstance(raw, (int, float, np.integer, np.floating)):
        return None
    value = float(raw)
    return value if math.isfinite(value) and value >= 0 else None  # 0: a free trial


def _brute_charge(
    t: FrozenTrial, charge_sampler_time: bool, end: datetime.datetime | None
) -> float:
    """The README's rule, written out: skipped trials cost nothing; else a valid reported cost,
    else the wall-clock duration less the sampler's own time (never negative); plus the sampler
    time when it is charged. ``end`` is None for a finished trial without a completion time."""
    if t.system_attrs.get(SKIPPED_ATTR):
        return 0.0
    raw_sampler = t.system_attrs.get(SAMPLER_SECONDS_ATTR, 0.0)
    sampler = 0.0  # a stored value that is not a positive finite number counts as none
    if isinstance(raw_sampler, (int, float)) and not isinstance(raw_sampler, bool):
        if math.isfinite(raw_sampler) and raw_sampler > 0:
            sampler = float(raw_sampler)
    reported = _valid_cost(t.user_attrs.get("cost"))
    if reported is not None:
        cost = reported
    elif t.datetime_start is None or end is None:
        cost = 0.0
    else:
        cost = max(max((end - t.datetime_start).total_seconds(), 0.0) - sampler, 0.0)
    return cost + (sampler if charge_sampler_time else 0.0)


def _brute_ledger(
    ts: list[FrozenTrial], charge_sampler_time: bool, now: datetime.datetime
) -> tuple[float, float, int, int]:
    spent = running = 0.0
    n_finished = n_running = 0
    for t in ts:
        finishing = t.state == TrialState.RUNNING and COST_SOURCE_ATTR in t.system_attrs
        if t.state in FINISHED or finishing:
            # A running trial whose cost the sampler has recorded is finishing: spent.
            spent += _brute_charge(t, charge_sampler_time, t.datetime_complete)
            n_finished += 1
        elif t.state == TrialState.RUNNING:
            running += _brute_charge(t, charge_sampler_time, t.datetime_complete or now)
            n_running += 1
    return spent, running, n_finished, n_running


budgets = st.one_of(
    st.floats(min_value=1e-9, max_value=1e12, allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 10.0, 100.0]),
)
nows = seconds.map(lambda s: T0 + datetime.timedelta(seconds=s))


@MAIN_SETTINGS
@given(st.lists(trials(), max_size=25), budgets, st.booleans(), nows)
def test_ledger_equals_the_brute_force_sum(
    ts: list[FrozenTrial], budget: float, charge: bool, now: datetime.datetime
) -> None:
    ledger = compute_ledger(ts, budget, "cost", charge, now=now)
    spent, running, n_finished, n_running = _brute_ledger(ts, charge, now)
    assert ledger.spent == pytest.approx(spent, rel=1e-12, abs=1e-12)
    assert ledger.running_elapsed == pytest.approx(running, rel=1e-12, abs=1e-12)
    assert (ledger.n_finished, ledger.n_running) == (n_finished, n_running)
    assert ledger.budget == budget
    assert not math.isnan(ledger.spent) and not math.isnan(ledger.running_elapsed)
    assert not math.isnan(ledger.remaining)
    assert ledger.spent >= 0.0 and ledger.running_elapsed >= 0.0
    assert ledger.exhausted == (ledger.spent >= budget)
    assert ledger.remaining == max(budget - ledger.spent, 0.0)
    assert ledger.overrun == max(ledger.spent - budget, 0.0)


@SETTINGS
@given(st.lists(trials(), max_size=15), st.randoms(use_true_random=False), budgets, st.booleans())
def test_ledger_does_not_depend_on_trial_order(
    ts: list[FrozenTrial], rnd: Any, budget: float, charge: bool
) -> None:
    now = T0 + datetime.timedelta(hours=1)
    shuffled = list(ts)
    rnd.shuffle(shuffled)
    a = compute_ledger(ts, budget, "cost", charge, now=now)
    c = compute_ledger(shuffled, budget, "cost", charge, now=now)
    assert a.spent == pytest.approx(c.spent, rel=1e-9, abs=1e-12)
    assert (a.n_finished, a.n_running) == (c.n_finished, c.n_running)


@SETTINGS
@given(st.lists(trials(), max_size=15), trials(), budgets, st.booleans())
def test_finishing_a_trial_never_lowers_spent(
    ts: list[FrozenTrial], extra: FrozenTrial, budget: float, charge: bool
) -> None:
    now = T0 + datetime.timedelta(hours=1)
    before = compute_ledger(ts, budget, "cost", charge, now=now)
    after = compute_ledger([*ts, extra], budget, "cost", charge, now=now)
    assert after.spent >= before.spent
    assert after.exhausted or not before.exhausted  # once exhausted, always exhausted
    if extra.state in FINISHED:
        assert after.n_finished == before.n_finished + 1


@SETTINGS
@given(st.lists(trials(), max_size=15), budgets, st.booleans())
def test_skipped_trials_cost_nothing(ts: list[FrozenTrial], budget: float, charge: bool) -> None:
    now = T0 + datetime.timedelta(hours=1)
    for t in ts:
        t.system_attrs[SKIPPED_ATTR] = True
    ledger = compute_ledger(ts, budget, "cost", charge, now=now)
    assert ledger.spent == 0.0 and ledger.running_elapsed == 0.0
    assert not ledger.exhausted


@SETTINGS
@given(st.lists(trials(), min_size=1, max_size=15), budgets)
def test_the_cost_attr_name_is_respected(ts: list[FrozenTrial], budget: float) -> None:
    # The same costs under another attr name give the same ledger.
    now = T0 + datetime.timedelta(hours=1)
    renamed = []
    for t in ts:
        u = dict(t.user_attrs)
        if "cost" in u:
            u["dollars"] = u.pop("cost")
        renamed.append(
            optuna.trial.FrozenTrial(
                number=t.number,
                state=t.state,
                value=t.value,
                datetime_start=t.datetime_start,
                datetime_complete=t.datetime_complete,
                params=t.params,
                distributions=t.distributions,
                user_attrs=u,
                system_attrs=t.system_attrs,
                intermediate_values={},
                trial_id=t._trial_id,
            )
        )
    a = compute_ledger(ts, budget, "cost", False, now=now)
    c = compute_ledger(renamed, budget, "dollars", False, now=now)
    assert a.spent == c.spent and a.running_elapsed == c.running_elapsed


hostile_sampler_seconds = st.one_of(
    st.floats(0.0, 1e3),
    st.sampled_from([math.nan, math.inf, -math.inf, -1.0, "0.5", None, True]),
)


@SETTINGS
@given(st.lists(trials(hostile_sampler_seconds), max_size=15), budgets, st.booleans())
def test_ledger_is_never_nan_whatever_the_stored_sampler_seconds(
    ts: list[FrozenTrial], budget: float, charge: bool
) -> None:
    now = T0 + datetime.timedelta(hours=1)
    ledger = compute_ledger(ts, budget, "cost", charge, now=now)
    assert not math.isnan(ledger.spent)
    assert not math.isnan(ledger.running_elapsed)
    assert ledger.spent >= 0.0
    assert ledger.exhausted == (ledger.spent >= budget)
    spent, running, _, _ = _brute_ledger(ts, charge, now)
    assert ledger.spent == pytest.approx(spent, rel=1e-12, abs=1e-12)
    assert ledger.running_elapsed == pytest.approx(running, rel=1e-12, abs=1e-12)
