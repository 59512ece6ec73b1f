"""The rule replayed at a higher threshold: a run cut at the first trial whose recorded rate is
below it (benchmarks/stopping_threshold.py)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

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


def test_a_two_sided_calibration_goes_on_where_the_model_underpromised() -> None:
    # Every model trial was expected to gain e^-2 and gained 1 (values 10, 9, 8, ...). With the
    # calibration capped at 1 the rule stops at the first rate below log lambda = 0 (trial 2,
    # rate -1). Allowed above 1 (w = 1, so p = e^-2): k = (1 + p) / (2 e^-2) = 4.19 before
    # trial 2 (log 1.43 > 1), (2 + p) / (3 e^-2) = 5.26 before trial 3 (log 1.66 > 1.5) and
    # (3 + p) / (4 e^-2) = 5.79 before trial 4 (log 1.76 < 5): it stops at trial 4.
    from benchmarks.stopping_threshold import Variant
    from benchmarks.stopping_threshold import cut

    run = _run([None, 1.0, -1.0, -1.5, -5.0, 1.0])
    run.meta["chosen_log_ei"] = [None, -2.0, -2.0, -2.0, -2.0, -2.0]
    one_sided = cut(run, 0.0, Variant("c", weight=1.0))
    two_sided = cut(run, 0.0, Variant("t", weight=1.0, ceiling=math.inf))
    assert one_sided is not None and len(one_sided.costs) == 2
    assert two_sided is not None and len(two_sided.costs) == 4
    assert not two_sided.capped


def test_the_two_sided_copy_capped_at_one_is_the_package_calibration() -> None:
    from benchmarks.stopping_threshold import two_sided_calibrations
    from optuna_costbo._sampler.stopping import running_calibrations

    values = [10.0, 9.0, math.nan, 9.5, 4.0, 3.9, 8.0]
    log_eis = [None, -2.0, 0.0, -1.0, None, 1.0, -0.5]
    for weight in (1.0, 3.0):
        package = running_calibrations(values, log_eis, weight)
        assert two_sided_calibrations(values, log_eis, weight, 1.0) == pytest.approx(package)
        assert min(package) < 1.0  # promises went unmet: the cap is not all there is
    uncapped = two_sided_calibrations(values, log_eis, 1.0, math.inf)
    assert max(uncapped) > 1.0


def test_a_patient_rule_stops_at_the_mth_low_rate_in_a_row() -> None:
    from benchmarks.stopping_threshold import Variant
    from benchmarks.stopping_threshold import cut

    run = _run([None, -3.0, 1.0, -3.0, -3.0, -3.0, 1.0])
    # A high rate in between starts the count again: the 2nd low rate in a row is trial 4,
    # the 3rd is trial 5; trials before the stop are paid.
    two = cut(run, 0.0, Variant("2", patience=2))
    three = cut(run, 0.0, Variant("3", patience=3))
    assert two is not None and len(two.costs) == 4
    assert three is not None and len(three.costs) == 5
    never = cut(run, 0.0, Variant("4", patience=4))
    assert never is not None and never.costs == run.costs and never.capped


def test_only_variants_that_can_stop_later_need_a_records_run() -> None:
    from benchmarks.stopping_threshold import SHIPPED
    from benchmarks.stopping_threshold import VARIANTS

    later = {v.label for v in VARIANTS if v.needs_records}
    assert SHIPPED in VARIANTS and not SHIPPED.needs_records
    assert later == {v.label for v in VARIANTS if v.ceiling > 1.0 or v.patience > 1}
    assert later  # the family has variants only a records run replays


def test_a_rule_run_agrees_with_the_records_run_up_to_its_stop() -> None:
    from benchmarks.stopping_threshold import same_trials

    records = _run([None, 0.0, 0.0, 0.0, 0.0])
    rule = _run([None, 0.0, 0.0])
    rule.costs[-1], rule.values[-1] = math.nan, math.nan  # the trial the rule stopped on
    assert same_trials(rule, records)
    rule.values[1] = 0.5  # a different second trial: not the same run
    assert not same_trials(rule, records)
    longer = _run([None] * 6)  # ran past the records run's end: cannot be a prefix
    assert not same_trials(longer, records)


def test_a_warmed_up_rule_does_not_stop_before_its_warm_up() -> None:
    from benchmarks.stopping_threshold import Variant
    from benchmarks.stopping_threshold import cut

    # Start-up of 2 trials (no rate); low rates at trials 2, 3 and 5, a high one at 4.
    run = _run([None, None, -3.0, -3.0, 1.0, -3.0, -3.0])
    assert len(cut(run, 0.0, Variant("base")).costs) == 2  # type: ignore[union-attr]
    # Not before 2 start-ups (4 trials): trial 4's rate is high, so it stops at trial 5.
    two = cut(run, 0.0, Variant("2x", min_startups=2.0))
    assert two is not None and len(two.costs) == 5 and not two.capped
    # 2 low rates in a row first at trial 3, inside a 4-trial warm-up; the high rate at trial 4
    # starts the count again, and the next pair in a row ends at trial 6.
    patient = cut(run, 0.0, Variant("p", patience=2, min_trials=4))
    assert patient is not None and len(patient.costs) == 6
    # A warm-up past the run's end: the run as it was.
    never = cut(run, 0.0, Variant("n", min_trials=50))
    assert never is not None and never.costs == run.costs and never.capped
    assert Variant("n", min_trials=50).needs_records and not Variant("b").needs_records


def test_hindsight_stops_each_run_at_its_best_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import stopping
    from benchmarks.stopping_threshold import hindsight

    problem = stopping.problems_of(["control"], ["branin-cheap"])[0]
    monkeypatch.setitem(stopping._SCALES, f"{problem.name}:{problem.fingerprint}", 2.0)
    assert problem.f_star is not None
    budget, f_star = problem.budget, problem.f_star
    run = _run([None] * 5)
    run.values = [f_star + d for d in (4.0, 1.0, 3.0, 0.5, 0.0)]
    run.costs = [0.25 * budget] * 5
    for kappa in (1.0, 0.1, 10.0):
        # by hand: regret / R0 + kappa x cost / B for each prefix 1..5, the lowest
        gaps = (4.0, 1.0, 3.0, 0.5, 0.0)
        cars = [min(gaps[:i]) / 2.0 + kappa * 0.25 * i for i in range(1, 6)]
        best = hindsight(run, problem, problem, kappa)
        assert best["car"] == pytest.approx(min(cars))
        assert best["cost"] == pytest.approx(0.25 * (1 + cars.index(min(cars))))
        assert best["trials"] == 1 + cars.index(min(cars))
    # kappa 1: the second trial (0.5 + 0.5) beats the fifth (0 + 1.25); kappa 0.1: the fifth
    assert hindsight(run, problem, problem, 1.0)["cost"] == pytest.approx(0.5)
    assert hindsight(run, problem, problem, 0.1)["cost"] == pytest.approx(1.25)
    run.costs, run.values = [], []
    with pytest.raises(ValueError, match="without trials"):
        hindsight(run, problem, problem, 1.0)


def test_the_per_problem_table_has_each_labels_mean_car_and_trials() -> None:
    from benchmarks.stopping_threshold import per_problem

    found = {
        (1.0, "a", "rule", 0): {"car": 1.0, "trials": 4},
        (1.0, "a", "rule", 1): {"car": 0.5, "trials": 7},
        (1.0, "a", "fixed 1B", 0): {"car": 2.0, "trials": 10},
        (0.1, "a", "rule", 0): {"car": 9.0, "trials": 1},  # another kappa: not in the table
        (1.0, "b", "fixed 1B", 1): {"car": 0.25, "trials": 3},
    }
    rows = per_problem(found, ["a", "b"], ["rule", "fixed 1B"], 1.0, [0, 1])
    assert rows[0] == "| problem | rule | fixed 1B |"
    assert rows[2] == "| a | 0.750 (5.5) | 2.000 (10.0) |"
    assert rows[3] == "| b | - | 0.250 (3.0) |"


def test_live_rows_read_each_policys_own_runs_at_its_kappas(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from benchmarks import stopping
    from benchmarks.harness import cache
    from benchmarks.stopping_threshold import LIVE
    from benchmarks.stopping_threshold import entries
    from benchmarks.stopping_threshold import scored

    problem = stopping.problems_of(["control"], ["branin-cheap"])[0]
    monkeypatch.setitem(stopping._SCALES, f"{problem.name}:{problem.fingerprint}", 2.0)
    assert problem.f_star is not None
    pols = {(p.label, p.kappa): p for p in stopping.policies(problem, [1.0, 0.1], 3.0)}
    cap_problem = pols[("Terminator", None)].problem
    written = {}
    for key, gap, n in ((("Terminator", None), 0.5, 3), (("rule", 1.0), 1.5, 2)):
        pol = pols[key]
        run = runner.Run(pol.problem.name, pol.method, 0)
        run.costs = [0.25 * problem.budget] * n
        run.values = [problem.f_star + gap] * n
        cache.write_run(tmp_path, pol.problem, run)
        written[key] = run
    found, _ = entries([problem], [1.0, 0.1], [], 3.0, [0], tmp_path, with_live=True)
    # The Terminator is blind to kappa: its one run is scored at both; the rule's run at its own
    for kappa in (1.0, 0.1):
        expected = scored(written[("Terminator", None)], problem, cap_problem, kappa)
        assert found[(kappa, problem.name, LIVE["Terminator"], 0)] == expected
    rule = found[(1.0, problem.name, LIVE["rule"], 0)]
    assert rule["car"] == pytest.approx(1.5 / 2.0 + 1.0 * 0.25 * 2) and rule["trials"] == 2
    assert (0.1, problem.name, LIVE["rule"], 0) not in found  # no run at kappa 0.1
    # The trial a rule stopped on ran nothing (cost nan): not counted among the trials run
    stopped = dataclasses.replace(written[("rule", 1.0)], costs=[0.25 * problem.budget, math.nan])
    assert scored(stopped, problem, cap_problem, 1.0)["trials"] == 1
    assert not any(lab == LIVE["Xie et al. (LogEIPC)"] for _, _, lab, _ in found)
    # Without with_live, none of these rows
    plain, _ = entries([problem], [1.0, 0.1], [], 3.0, [0], tmp_path)
    assert not any(lab in LIVE.values() for _, _, lab, _ in plain)
