"""The rule replayed at a higher threshold: a run cut at the first trial whose recorded rate is
below it (benchmarks/stopping_threshold.py)."""

from __future__ import annotations

import math

from benchmarks.harness import runner
from benchmarks.stopping_threshold import cut_at
from benchmarks.stopping_threshold import cut_calibrated


def _run(rates: list[float | None]) -> runner.Run:
    n = len(rates)
    return runner.Run(
        problem="p",
        method="m",
        seed=0,
        costs=[1.0] * n,
        values=[float(10 - i) for i in range(n)],
        capped=True,
        meta={"log_rates": rates},
    )


def test_a_run_is_cut_at_the_first_trial_below_the_threshold() -> None:
    run = _run([None, None, -1.0, -3.0, -2.0, -4.0])
    cut = cut_at(run, -2.5)
    assert cut is not None
    assert cut.costs == [1.0, 1.0, 1.0] and cut.values == [10.0, 9.0, 8.0]
    assert not cut.capped  # it stopped by itself
    whole = cut_at(run, -10.0)  # never below: the run as it was
    assert whole is not None and whole.costs == run.costs and whole.capped
    assert cut_at(run, math.inf) is not None and cut_at(run, math.inf).costs == [1.0, 1.0]  # type: ignore[union-attr]


def test_a_run_without_recorded_rates_is_not_replayed() -> None:
    run = _run([None, -1.0])
    run.meta = {}
    assert cut_at(run, 0.0) is None


def test_the_calibrated_rule_stops_once_the_model_has_overpromised() -> None:
    # Trials 1-3 were each expected to gain e^0 = 1 and gained nothing (values 10, 10, 10),
    # while every best rate is log 2 against log lambda = 0: the plain rule never stops. With
    # w = 1 pseudo-trial the calibration before trial i (i model trials done) is 1 / (i + 1):
    # log 2 + log(1/3) < 0 first at trial 3 (the 3rd model trial), so the run is cut there.
    run = _run([None] + [math.log(2.0)] * 4)
    run.values = [10.0] * 5
    run.meta["chosen_log_ei"] = [None, 0.0, 0.0, 0.0, 0.0]
    cut = cut_calibrated(run, 0.0, 1.0)
    assert cut is not None and len(cut.costs) == 3
    assert cut_at(run, 0.0) is not None and len(cut_at(run, 0.0).costs) == 5  # type: ignore[union-attr]
    # Expectations met in full: no discount, the plain rule's run.
    run.values = [10.0, 9.0, 8.0, 7.0, 6.0]
    kept = cut_calibrated(run, 0.0, 1.0)
    assert kept is not None and len(kept.costs) == 5
