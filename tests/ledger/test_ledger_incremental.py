"""The incremental ledger and search space equal their full recomputation.

``_ledger.ledger.charge_and_sum`` keeps the charges of finished trials per storage and study and
adds only the trials finished since; ``snapshot.completed_search_space`` does the same for
the search space (the union of the completed trials' spaces and its activity rules). Checked
here after random sequences of trial events (trials created, running, recording their cost,
finishing in any state, a dead worker's trial with or without its last stamp, lists that are
not the whole study), to the last bit, and on a real database with a dead trial that another
worker fails after this one has cached it running.
"""

from __future__ import annotations

import datetime
import math
from pathlib import Path
import time
from typing import Any
import uuid

import _pg
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.search_space import intersection_search_space
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import pytest

from optuna_costbo._ledger.finished import FinishedScan
from optuna_costbo._ledger.keys import ALIVE_ATTR
from optuna_costbo._ledger.keys import COST_SOURCE_ATTR
from optuna_costbo._ledger.keys import SAMPLER_SECONDS_ATTR
from optuna_costbo._ledger.keys import SKIPPED_ATTR
from optuna_costbo._ledger.ledger import charge_and_sum
from optuna_costbo._ledger.ledger import compute_ledger
from optuna_costbo._ledger.ledger import imported_rule
from optuna_costbo._ledger.ledger import refresh_ledger
from optuna_costbo._ledger.runs import mark_run
from optuna_costbo._sampler.snapshot import _SpaceOfStudy
from optuna_costbo._sampler.snapshot import completed_search_space


pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)
NOW = T0 + datetime.timedelta(hours=2)
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
DISTS = [
    {"x": FloatDistribution(0.0, 1.0)},
    {"x": FloatDistribution(0.0, 1.0), "y": FloatDistribution(-1.0, 1.0)},
    {"x": FloatDistribution(0.0, 2.0), "c": CategoricalDistribution(["a", "b"])},
    {"x": FloatDistribution(0.0, 1.0), "c": CategoricalDistribution(["a", "b"])},
]


class _Storage:
    """A stand-in storage object: the caches are kept per storage object."""


class _Study:
    def __init__(self) -> None:
        self._storage = _Storage()
        self._study_id = 0


costs = st.one_of(
    st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e-9, max_value=1e-3),
    st.sampled_from([-1.0, math.nan, "bad", 0]),
)

# Events on the study: (kind, which trial (an index into the open ones), a cost, a choice).
events = st.lists(
    st.tuples(
        st.sampled_from(["new", "new", "record", "finish", "finish", "die", "part"]),
        st.integers(0, 30),
        costs,
        st.integers(0, 7),
    ),
    max_size=40,
)


def _trial(number: int, choice: int) -> FrozenTrial:
    dists = DISTS[choice % len(DISTS)]
    return FrozenTrial(
        number=number,
        state=TrialState.WAITING if choice == 7 else TrialState.RUNNING,
        value=None,
        datetime_start=T0 + datetime.timedelta(seconds=10 * number + choice),
        datetime_complete=None,
        params={name: d.to_external_repr(0) for name, d in dists.items()},
        distributions=dict(dists),
        user_attrs={},
        system_attrs={SAMPLER_SECONDS_ATTR: 0.01 * choice} if choice % 2 else {},
        intermediate_values={},
        trial_id=number,
    )


def _finish(t: FrozenTrial, state: TrialState, cost: Any, choice: int) -> FrozenTrial:
    """A new object for the finished trial, as a storage returns it after the state is set."""
    user_attrs = dict(t.user_attrs)
    system_attrs = dict(t.system_attrs)
    if choice in (1, 2) and "cost" not in user_attrs:
        user_attrs["cost"] = cost
        system_attrs[COST_SOURCE_ATTR] = "reported"
    if choice == 3:
        system_attrs[SKIPPED_ATTR] = True
    return FrozenTrial(
        number=t.number,
        state=state,
        value=1.0 if state == TrialState.COMPLETE else None,
        datetime_start=t.datetime_start,
        datetime_complete=(t.datetime_start or T0) + datetime.timedelta(seconds=choice + 0.5),
        params=t.params,
        distributions=t.distributions,
        user_attrs=user_attrs,
        system_attrs=system_attrs,
        intermediate_values={},
        trial_id=t._trial_id,
    )


def _assert_same(study: Any, trials: list[FrozenTrial]) -> None:
    for cost_attr, charge in (("cost", False), ("cost", True), ("other", False)):
        full = compute_ledger(trials, 10.0, cost_attr, charge, now=NOW)
        incremental = charge_and_sum(study, trials, 10.0, cost_attr, charge, now=NOW)
        assert incremental == full  # every field, to the last bit
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    fresh = _SpaceOfStudy()
    fresh.add(trials)  # counts the COMPLETE ones
    space, activity = fresh.space()
    assert completed_search_space(study, trials) == (space, activity)
    # The parameters every completed trial has are Optuna's intersection search space.
    shared = {n: d for n, d in space.items() if fresh.present[n] == len(complete)}
    assert shared == intersection_search_space(complete)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events)
def test_incremental_ledger_equals_the_full_recomputation(steps: list[Any]) -> None:
    study = _Study()
    trials: list[FrozenTrial] = []
    for kind, which, cost, choice in steps:
        open_ = [t for t in trials if not t.state.is_finished()]
        if kind == "new" or not trials:
            trials.append(_trial(len(trials), choice))
        elif kind == "record" and open_:
            # The sampler recorded the cost of a running trial: it counts as spent already.
            t = open_[which % len(open_)]
            t.user_attrs["cost"] = cost
            t.system_attrs[COST_SOURCE_ATTR] = "reported"
        elif kind == "finish" and open_:
            t = open_[which % len(open_)]
            trials[t.number] = _finish(t, FINISHED[choice % 3], cost, choice)
        elif kind == "die" and open_:
            # Failed by heartbeat: no cost recorded, perhaps its worker's last stamp.
            t = open_[which % len(open_)]
            if choice % 2:
                t.system_attrs[ALIVE_ATTR] = 0.25 + which
            trials[t.number] = _finish(t, TrialState.FAIL, cost, 0)
        elif kind == "part" and len(trials) > 1:
            # A list that is not the whole study (HyperbandPruner's bracket): summed in full,
            # and the kept state is left as it was.
            part = trials[:: 2 + choice % 2] if choice % 3 else trials[1:]
            if part:
                _assert_same(study, part)
        _assert_same(study, trials)


def test_the_scan_refuses_lists_that_are_not_the_whole_study() -> None:
    trials = [_trial(i, 0) for i in range(4)]
    scan = FinishedScan()
    assert scan.take(trials) == []
    assert scan.open == [0, 1, 2, 3]
    trials[1] = _finish(trials[1], TrialState.COMPLETE, 1.0, 1)
    assert scan.take([trials[0], trials[2], trials[3]]) is None  # a gap
    assert scan.take(trials[:3]) is None  # shorter than seen
    assert scan.take(list(reversed(trials))) is None  # not in number order
    assert scan.open == [0, 1, 2, 3]  # unchanged by the refusals
    assert scan.take(trials) == [trials[1]]
    assert scan.open == [0, 2, 3] and scan.seen == 4


@pytest.fixture(params=["sqlite", "postgres"])
def rdb_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'incremental.db'}"
    return _pg.url_or_skip()


def test_a_dead_trial_failed_after_this_worker_cached_it_running(rdb_url: str) -> None:
    name = f"incremental-{uuid.uuid4().hex[:8]}"

    def worker() -> optuna.Study:
        rdb = optuna.storages.RDBStorage(rdb_url, heartbeat_interval=1, grace_period=2)
        return optuna.load_study(study_name=name, storage=optuna.storages.get_storage(rdb))

    optuna.create_study(study_name=name, storage=rdb_url)
    try:
        a, other = worker(), worker()
        for cost in (1.0, 2.5):
            done = a.ask()
            mark_run(a, done)  # type: ignore[arg-type]
            done.set_user_attr("cost", cost)
            a.tell(done, 1.0)
        dead = a.ask()
        mark_run(a, dead)  # type: ignore[arg-type]
        a._storage.set_trial_system_attr(dead._trial_id, ALIVE_ATTR, 0.125)
        # Worker a sums the finished trials while the dead one still runs ...
        before = refresh_ledger(a, 100.0, "cost")
        assert (before.spent, before.n_finished, before.n_running) == (3.5, 2, 1)
        time.sleep(0.3)
        # ... another worker fails it (as fail_stale_trials does) ...
        assert other._storage.set_trial_state_values(dead._trial_id, TrialState.FAIL)
        # ... and both charge it its last stamp, as a full recomputation from a fresh read.
        settled = refresh_ledger(other, 100.0, "cost")
        assert (settled.spent, settled.n_finished) == (3.625, 3)
        assert refresh_ledger(a, 100.0, "cost") == settled
        fresh = optuna.load_study(study_name=name, storage=rdb_url)
        rule = imported_rule(fresh, fresh.get_trials())
        assert compute_ledger(fresh.get_trials(), 100.0, "cost", imported=rule) == settled
    finally:
        if rdb_url.startswith("postgresql"):
            optuna.delete_study(study_name=name, storage=rdb_url)
