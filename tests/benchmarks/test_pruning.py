"""The pruning benchmark (benchmarks/pruning.py, benchmarks/problems/stepped.py): its problems,
the report's numbers on constructed runs, the command line on a constructed cache, and the
YAHPO curves (skipped without yahpo_gym or its data, saying which)."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks import pruning
from benchmarks.harness import best_known
from benchmarks.harness import cache
from benchmarks.harness import report
from benchmarks.harness import runner
from benchmarks.harness.runner import Run
from benchmarks.problems import stepped
from benchmarks.problems import yahpo


LCBENCH = "yahpo-lcbench-189905-epochs"
XGB = "yahpo-xgb-gbtree-46-trainsize"


# -- the problems (defined without yahpo_gym) -----------------------------------------------


def test_the_problems_have_their_steps_budgets_and_groups() -> None:
    names = stepped.problem_names()
    assert len(names) == len(set(names)) and stepped.LIVE_NAME in names
    lc, xgb, live = (stepped.get_problem(n) for n in (LCBENCH, XGB, stepped.LIVE_NAME))
    assert lc.steps == tuple(range(1, 53)) and lc.group == "lcbench"
    assert xgb.steps == (1, 3, 9, 27) and xgb.group == "rbv2_xgboost"
    assert live.steps == tuple(range(1, 28)) and live.group == "live" and live.f_star is None
    # the suite's budgets and f* (40 x the mean full-fidelity cost), from the calibration
    inst = yahpo.get_instance("yahpo-lcbench-189905")
    assert (lc.budget, lc.f_star) == (inst.budget, inst.f_star)
    assert lc.fingerprint == stepped.get_problem(LCBENCH).fingerprint
    assert lc.fingerprint != yahpo.as_problem(inst).fingerprint  # the steps are in it
    with pytest.raises(KeyError, match="unknown problem"):
        stepped.get_problem("yahpo-lcbench-189905")


def test_a_budget_variant_is_the_same_problem_with_x_times_its_budget() -> None:
    base = stepped.get_problem(LCBENCH)
    double = stepped.get_problem(f"{LCBENCH}-b2")
    assert (double.name, double.budget) == (f"{LCBENCH}-b2", 2.0 * base.budget)
    assert (double.steps, double.f_star, double.group) == (base.steps, base.f_star, base.group)
    assert double.fingerprint not in base.fingerprints  # its runs are cached apart
    half = stepped.get_problem(f"{stepped.LIVE_NAME}-b0.5", max_trials=7)
    assert (half.budget, half.max_trials) == (0.5 * stepped.LIVE_BUDGET, 7)
    assert stepped.budget_variant(f"{XGB}-b3") == (XGB, 3.0)
    assert stepped.base_name(f"{XGB}-b3") == XGB and stepped.base_name(XGB) == XGB
    assert stepped.is_known(f"{XGB}-b3") and stepped.is_known(XGB)
    # not variants: b2.0 (written b2), b0, an unknown base, no number
    for name in (f"{LCBENCH}-b2.0", f"{LCBENCH}-b0", "yahpo-lcbench-1-epochs-b2", f"{XGB}-b"):
        assert stepped.budget_variant(name) is None and not stepped.is_known(name)
        with pytest.raises(KeyError, match="unknown problem"):
            stepped.get_problem(name)
    assert pruning.cannot_run(f"{stepped.LIVE_NAME}-b2") is None  # live: needs no yahpo_gym


def test_a_budget_variant_is_scored_against_its_base_problems_best_known() -> None:
    table = {LCBENCH: {"best": -1.0, "f_star": 0.0}}
    double = stepped.get_problem(f"{LCBENCH}-b2")
    assert best_known.rescored(double, table).f_star == double.f_star  # no entry of its own
    assert best_known.rescored(double, table, stepped.base_name(double.name)).f_star == -1.0


def test_the_live_curve_trains_one_epoch_per_step() -> None:
    params = {"hidden": 8, "layers": 1, "batch_size": 256, "lr": 0.01, "alpha": 1e-4}
    curve = stepped.MLPEpochs()(params)
    first = list(itertools.islice(curve, 3))  # three epochs, not 27
    assert [s for s, _, _ in first] == [1, 2, 3]
    costs = [c for _, _, c in first]
    assert 0.0 < costs[0] < costs[1] < costs[2]
    assert all(0.0 <= v <= 1.0 for _, v, _ in first)
    assert first[2][1] < 0.9  # it learns (10 classes: chance is 0.9)


def test_the_live_gradient_boosting_is_a_live_problem_with_twelve_steps() -> None:
    hgb = stepped.get_problem(stepped.LIVE_HGB_NAME)
    assert stepped.LIVE_HGB_NAME in stepped.problem_names()
    assert hgb.steps == tuple(range(1, 13)) and hgb.group == "live" and hgb.f_star is None
    assert hgb.budget == stepped.LIVE_HGB_BUDGET and hgb.max_trials == stepped.MAX_TRIALS
    assert pruning.cannot_run(stepped.LIVE_HGB_NAME) is None  # needs no yahpo_gym
    assert hgb.fingerprint != stepped.get_problem(stepped.LIVE_NAME).fingerprint


def test_the_live_gradient_boosting_grows_ten_rounds_a_step_as_a_fresh_fit_would() -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import log_loss

    params = {
        "learning_rate": 0.1,
        "max_leaf_nodes": 8,
        "min_samples_leaf": 20,
        "l2_regularization": 1e-3,
        "max_features": 1.0,  # no feature subsampling: warm_start equals a fresh fit
    }
    first = list(itertools.islice(stepped.HGBRounds()(params), 3))  # three steps, not 12
    assert [s for s, _, _ in first] == [1, 2, 3]
    costs = [c for _, _, c in first]
    assert 0.0 < costs[0] < costs[1] < costs[2]
    X_tr, X_va, y_tr, y_va = stepped._synthetic()
    fresh = HistGradientBoostingClassifier(
        learning_rate=0.1, max_leaf_nodes=8, min_samples_leaf=20, l2_regularization=1e-3,
        max_iter=30, early_stopping=False, random_state=0,
    ).fit(X_tr, y_tr)  # fmt: skip
    assert first[2][1] == pytest.approx(log_loss(y_va, fresh.predict_proba(X_va)), rel=1e-9)
    assert first[2][1] < first[0][1] < math.log(2.0)  # it learns (two classes: chance is ln 2)


def test_calibrate_live_measures_the_named_live_problem_only(tmp_path: Path) -> None:
    path = pruning.calibrate_live(2, tmp_path, stepped.LIVE_HGB_NAME)
    text = path.read_text()
    assert path.name == "live_calibration_hgb.md" and "12 steps each" in text
    assert f"| budget in use (`stepped.LIVE_HGB_BUDGET`) | {stepped.LIVE_HGB_BUDGET:g} |" in text
    with pytest.raises(SystemExit, match="measures live problems"):
        pruning.main(["--calibrate-live", "2", "--problems", LCBENCH])


# -- the report on constructed runs ---------------------------------------------------------


METHODS = ["rollout+hyperband", "rollout+median", "optuna-tpe+median"]
SEEDS = list(range(6))


def _run(problem: str, method: str, seed: int, best: float, budget: float) -> Run:
    """Four trials: COMPLETE (regret 0.5 + 0.01 seed), pruned at step 1 with a lower
    intermediate value (never counted), pruned at the last step, COMPLETE with ``best``; the
    first three cost 40% of the budget, the last one the rest (after half the budget)."""
    run = Run(problem, method, seed)
    run.costs = [0.2 * budget, 0.05 * budget, 0.15 * budget, 0.6 * budget]
    run.values = [0.5 + 0.01 * seed, math.nan, math.nan, best]
    run.steps = [27, 1, 27, 27]
    run.states = ["complete", "pruned", "pruned", "complete"]
    return run


def _constructed(tmp_path: Path) -> tuple[Path, dict, list]:
    live = stepped.live_problem()
    problems = [live]
    scored = {}
    for s in SEEDS:
        finals = {
            "rollout+hyperband": 0.01 * s,  # the lowest on every seed
            "rollout+median": 0.02 + 0.01 * s,
            "optuna-tpe+median": 0.9,  # worse than its first trial: end = 0.5 + 0.01 s
        }
        for m in METHODS:
            run = _run(live.name, m, s, finals[m], live.budget)
            scored[(live.name, m, s)] = report.score(run, live)
    path = pruning.write_report(
        tmp_path, scored, problems, METHODS, SEEDS, ["rollout+hyperband", "rollout+median"],
        command="test", skipped={},
    )  # fmt: skip
    return path, scored, problems


def test_a_suffix_writes_a_second_report_beside_the_first(tmp_path: Path) -> None:
    first, scored, problems = _constructed(tmp_path)
    before = first.read_text()
    path = pruning.write_report(
        tmp_path, scored, problems, METHODS[:2], SEEDS, ["rollout+hyperband"],
        command="test", skipped={}, suffix="_20",
    )  # fmt: skip
    assert path == tmp_path / "report_20.md"
    assert first.read_text() == before  # report.md is left as it was
    for name in ("regret_vs_cost_20.png", "ranks_20.csv", "curves_20.csv", "wilcoxon_20.csv"):
        assert (tmp_path / name).stat().st_size > 0, name
    text = path.read_text()
    assert "![median regret vs cost](regret_vs_cost_20.png)" in text
    assert "Optuna TPE + Median" not in text  # the second report's own methods
    with pytest.raises(ValueError, match="names a folder"):
        pruning.write_report(
            tmp_path, scored, problems, METHODS, SEEDS, [], command="t", skipped={},
            suffix="/x",
        )  # fmt: skip
    with pytest.raises(SystemExit):  # the command line says so before any run
        pruning.parse_args(["--suffix", "../x"])


def test_regret_counts_complete_trials_only_and_half_budget_counts_pruned_costs(
    tmp_path: Path,
) -> None:
    _, scored, _ = _constructed(tmp_path)
    sc = scored[(stepped.LIVE_NAME, "rollout+hyperband", 3)]
    assert sc.final == pytest.approx(0.03)
    # within half the budget: trials 0-2 (40%); the best COMPLETE one is the first
    assert sc.half == pytest.approx(0.53)
    tpe = scored[(stepped.LIVE_NAME, "optuna-tpe+median", 2)]
    assert tpe.final == pytest.approx(0.52)


def test_the_report_ranks_tests_and_counts_pruned_trials(tmp_path: Path) -> None:
    path, _, _ = _constructed(tmp_path)
    text = path.read_text()
    # end: hyperband 1, median 2, tpe 3 on every seed; half: all tie at the first trial
    assert "| ours rollout h=2 + Hyperband | 1 | 2 | 1 | 2 |" in text
    assert "| ours rollout h=2 + Median | 2 | 2 | 2 | 2 |" in text
    assert "| Optuna TPE + Median | 3 | 2 | 3 | 2 |" in text
    with open(tmp_path / "wilcoxon.csv", newline="") as fh:
        rows = {(r["reference"], r["method"], r["point"]): r for r in csv.DictReader(fh)}
    # six wins of six: the exact two-sided p is 2 / 2**6 = 0.03125 < 0.05
    row = rows[("rollout+hyperband", "rollout+median", "end")]
    assert (row["wins"], row["losses"], row["verdict"]) == ("6", "0", "better")
    assert float(row["p_value"]) == pytest.approx(0.03125)
    assert rows[("rollout+hyperband", "rollout+median", "half")]["verdict"] == "same"
    assert rows[("rollout+median", "rollout+hyperband", "end")]["verdict"] == "worse"
    assert rows[("rollout+median", "optuna-tpe+median", "end")]["verdict"] == "better"
    assert "## Paired tests: `rollout+hyperband` against each method" in text
    assert "## Paired tests: `rollout+median` against each method" in text
    assert "| Optuna TPE + Median | 1/0/0 | 6/0/0 | 0/1/0 | 0/6/0 |" in text
    # what the pruners did: 4 trials, 2 COMPLETE, 2 pruned (one at the first step, one at
    # the last), 20% of the cost in pruned trials; 2(d+1) = 12 COMPLETE trials never reached
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| {stepped.LIVE_NAME} | ours"))
    assert "| 4.0 | 2.0 | 2.0 (50%) | 1.0 | 1.0 | 20% | - (6) | nan | 100% | 0 |" in line


def test_the_command_reports_a_cache_without_running(tmp_path: Path) -> None:
    live = stepped.live_problem()
    for m, s in itertools.product(METHODS, range(3)):
        run = _run(live.name, m, s, 0.01 * (METHODS.index(m) + 1), live.budget)
        run.meta = {"package_ref": "abc1234"}
        cache.write_run(tmp_path / "runs", live, run)
    code = pruning.main(
        ["--out", str(tmp_path), "--report-only", "--seeds", "3", "--methods", *METHODS,
         "--problems", stepped.LIVE_NAME]
    )  # fmt: skip
    assert code == 0
    text = (tmp_path / "report.md").read_text()
    assert "1 problems (1 live), 3 methods, seeds 0..2 (3); 9 runs" in text
    assert "abc1234 (9 runs)" in text
    for name in ("problem_summary.csv", "pruning.csv", "wilcoxon.csv", "ranks.csv"):
        assert (tmp_path / name).is_file()


def test_a_higher_trial_cap_runs_again_only_the_runs_the_lower_cap_cut(tmp_path: Path) -> None:
    low = stepped.get_problem(stepped.LIVE_NAME, max_trials=3)
    high = stepped.get_problem(stepped.LIVE_NAME, max_trials=10)
    assert (low.max_trials, high.max_trials, low.fingerprint) == (3, 10, high.fingerprint)
    assert stepped.get_problem(stepped.LIVE_NAME).max_trials == stepped.MAX_TRIALS
    with pytest.raises(ValueError, match="max_trials must be a positive int"):
        stepped.get_problem(stepped.LIVE_NAME, max_trials=0)
    cut = Run(low.name, "rollout+median", 0)  # three cheap trials: stopped by the cap
    cut.costs, cut.values = [0.01 * low.budget] * 3, [0.5, 0.4, 0.3]
    cut.steps, cut.states, cut.capped = [27] * 3, ["complete"] * 3, True
    ended = _run(low.name, "rollout+median", 1, 0.1, low.budget)  # 4 trials, the budget spent
    for run in (cut, ended):
        cache.write_run(tmp_path, low, run)
    # under the lower cap both are runs; under the higher one the cut run is not (it would
    # have gone on), and the one its budget ended is (a sequential run makes the same trials)
    assert cache.load_valid(tmp_path, low, "rollout+median", 0) is not None
    assert cache.load_valid(tmp_path, high, "rollout+median", 0) is None
    assert cache.load_valid(tmp_path, high, "rollout+median", 1) is not None
    valid, failed, other = cache.load_all(tmp_path, high, ["rollout+median"], [0, 1])
    assert (sorted(valid), failed, other) == ([("rollout+median", 1)], [], 1)


# -- YAHPO curves ---------------------------------------------------------------------------


@pytest.mark.usefixtures("surrogates")
def test_yahpo_curves_end_at_the_full_fidelity() -> None:
    rng = np.random.default_rng(3)
    for name in (LCBENCH, XGB):
        problem = stepped.get_problem(name)
        inst = yahpo.get_instance(name.rsplit("-", 1)[0])
        for params in inst.sample(3, rng):
            curve = list(problem.evaluate_curve(params))
            assert [s for s, _, _ in curve] == list(problem.steps)
            costs = np.array([c for _, _, c in curve])
            assert np.all(np.diff(costs) >= 0)
            value, cost = inst.evaluate(params)
            assert curve[-1][1] == pytest.approx(value)
            if inst.fidelity_resumes:  # lcbench: the time at the last epoch
                assert curve[-1][2] == pytest.approx(cost)
            else:  # rbv2: every rung trains anew, their costs add up
                rungs = [inst.evaluate(params, s / 27)[1] for s in problem.steps]
                assert curve[-1][2] == pytest.approx(sum(rungs))


@pytest.mark.usefixtures("surrogates")
def test_a_yahpo_run_with_hyperband_charges_pruned_trials_their_partial_cost() -> None:
    problem = stepped.get_problem(XGB)
    small = dataclasses.replace(problem, budget=problem.budget / 8)
    run = runner.run_one(small, "random+hyperband", 0, probe=_params)
    assert not run.error and "pruned" in run.states
    inst = yahpo.get_instance("yahpo-xgb-gbtree-46")
    for params, step, cost in zip(run.meta["params"], run.steps, run.costs, strict=True):
        rungs = [inst.evaluate(params, s / 27)[1] for s in problem.steps if s <= step]
        assert cost == pytest.approx(sum(rungs))
    assert sum(run.costs[:-1]) < small.budget <= sum(run.costs)


def _params(sampler: object, study: object) -> dict:
    return {"params": [t.params for t in study.get_trials(deepcopy=False)]}  # type: ignore[attr-defined]


def test_near_repeats_count_trials_close_to_an_earlier_pruned_one() -> None:
    import optuna

    study = optuna.create_study()
    dists = {
        "lr": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True),
        "units": optuna.distributions.IntDistribution(1, 201),
        "act": optuna.distributions.CategoricalDistribution(["relu", "tanh"]),
    }
    rows = [  # (params, state)
        ({"lr": 1e-2, "units": 50, "act": "relu"}, optuna.trial.TrialState.PRUNED),
        ({"lr": 1.01e-2, "units": 51, "act": "relu"}, optuna.trial.TrialState.PRUNED),  # near 0
        ({"lr": 1.01e-2, "units": 51, "act": "tanh"}, optuna.trial.TrialState.COMPLETE),  # cat
        ({"lr": 1.01e-2, "units": 51, "act": "tanh"}, optuna.trial.TrialState.COMPLETE),  # of 2
        ({"lr": 2e-2, "units": 50, "act": "relu"}, optuna.trial.TrialState.COMPLETE),  # lr far
    ]
    for params, state in rows:
        study.add_trial(
            optuna.trial.create_trial(
                params=params,
                distributions=dists,
                state=state,
                value=0.0 if state == optuna.trial.TrialState.COMPLETE else None,
            )
        )
    counts = pruning.near_repeats(None, study)
    assert counts == {"near_repeats": 2, "near_repeats_of_pruned": 1}


def test_the_bracket_view_of_a_bare_hyperband_pruner_and_of_a_wrapped_one() -> None:
    """What docs/pruning.md says: a bare HyperbandPruner shows the sampler only the trials of
    the running trial's bracket; inside CostBudgetPruner the sampler sees every trial."""
    import optuna

    from optuna_costbo import CostBudgetPruner

    class Seen(optuna.samplers.RandomSampler):
        def __init__(self) -> None:
            super().__init__(seed=0)
            self.seen: list[int] = []

        def sample_independent(self, study, trial, name, distribution):  # type: ignore[no-untyped-def]
            self.seen.append(len(study.get_trials(deepcopy=False)))
            return super().sample_independent(study, trial, name, distribution)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        for step in range(1, 10):
            trial.report(x, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return x

    hyperband = {"min_resource": 1, "max_resource": 9, "reduction_factor": 3}
    seen = {}
    for kind, pruner in (
        ("bare", optuna.pruners.HyperbandPruner(**hyperband)),
        (
            "wrapped",
            CostBudgetPruner(1e9, wrapped_pruner=optuna.pruners.HyperbandPruner(**hyperband)),
        ),
    ):
        sampler = Seen()
        study = optuna.create_study(sampler=sampler, pruner=pruner, study_name="brackets")
        study.optimize(objective, n_trials=30)
        seen[kind] = sampler.seen
    assert seen["wrapped"] == list(range(1, 31))  # every trial so far, itself included
    assert all(s <= k for s, k in zip(seen["bare"], range(1, 31), strict=True))
    assert sum(seen["bare"]) < sum(seen["wrapped"]) / 2  # three brackets share the trials
