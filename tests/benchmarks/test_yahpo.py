"""Tests of the YAHPO surrogate problems (benchmarks/problems/yahpo.py) and their calibration.

The search-space, validation and calibration-file tests run anywhere. The surrogate tests need
the benchmark environment (yahpo_gym, onnxruntime, ConfigSpace) and the data folder
(``COSTBO_YAHPO_DATA`` or ``$COSTBO_DATA_DIR/yahpo``); without them they skip and say why.
See benchmarks/problems/README_yahpo.md.
"""

from __future__ import annotations

import math
from pathlib import Path
import pickle
import sys
from typing import Any

import numpy as np
import optuna
import pytest


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.problems import yahpo  # noqa: E402


CONDITIONAL = "yahpo-xgb-cond-46"
FIXED = "yahpo-xgb-gbtree-46"
TREE_KNOBS = {"eta", "gamma", "max_depth", "min_child_weight", "colsample_bytree"}
TREE_KNOBS |= {"colsample_bylevel"}
DART_KNOBS = {"rate_drop", "skip_drop"}


def _one_per_scenario() -> list[yahpo.YahpoInstance]:
    seen: dict[str, yahpo.YahpoInstance] = {}
    for inst in yahpo.INSTANCES:
        seen.setdefault(inst.scenario, inst)
    return list(seen.values())


# -- search space (no surrogate needed) -----------------------------------------------------


def test_instances_cover_the_four_scenarios_with_fixed_and_conditional_xgboost() -> None:
    assert len(yahpo.INSTANCES) >= 16
    assert len({i.name for i in yahpo.INSTANCES}) == len(yahpo.INSTANCES)
    assert {i.scenario for i in yahpo.INSTANCES} == set(yahpo.SCENARIOS)
    xgb = [i for i in yahpo.INSTANCES if i.scenario == "rbv2_xgboost"]
    assert any(i.conditional for i in xgb) and any(not i.conditional for i in xgb)
    for inst in yahpo.INSTANCES:
        assert inst.group in ("real", "extreme-real")
        names = {p.name for p in inst.params}
        # The instance id, the fidelity and the fixed parameters are never searched.
        assert not names & {"task_id", "OpenML_task_id", "repl", "trainsize", "epoch"}
        assert not names & {k for k, _ in inst.fixed}


def test_suggest_asks_only_active_parameters_define_by_run() -> None:
    inst = yahpo.get_instance(CONDITIONAL)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    boosters = set()
    for _ in range(60):
        trial = study.ask()
        params = inst.suggest(trial)
        assert trial.params == params  # nothing asked beyond what is returned
        inst.check(params)
        booster = params["booster"]
        boosters.add(booster)
        keys = set(params)
        assert (TREE_KNOBS <= keys) == (booster in ("gbtree", "dart"))
        assert not (TREE_KNOBS & keys) or booster != "gblinear"
        assert (DART_KNOBS <= keys) == (booster == "dart")
        assert not (DART_KNOBS & keys) or booster == "dart"
        study.tell(trial, 0.0)
    assert boosters == {"gblinear", "gbtree", "dart"}

    fixed = yahpo.get_instance(FIXED)
    trial = study.ask()
    params = fixed.suggest(trial)
    assert set(params) == {p.name for p in fixed.params}
    assert "booster" not in params and TREE_KNOBS <= set(params)


def test_sample_draws_legal_active_configurations() -> None:
    rng = np.random.default_rng(0)
    for inst in yahpo.INSTANCES:
        cfgs = inst.sample(200, rng)
        for cfg in cfgs:
            inst.check(cfg)
    cfgs = yahpo.get_instance(CONDITIONAL).sample(3000, rng)
    counts = {b: sum(c["booster"] == b for c in cfgs) for b in ("gblinear", "gbtree", "dart")}
    assert all(800 < n < 1200 for n in counts.values()), counts
    nrounds = np.array([c["nrounds"] for c in cfgs])  # (3000,)
    # log-uniform over [7, 2981]: the median is near sqrt(7 * 2981) = 144, not 1494
    assert 100 < np.median(nrounds) < 200


def test_check_rejects_inactive_missing_and_illegal_values() -> None:
    inst = yahpo.get_instance(CONDITIONAL)
    good = {"booster": "gblinear", "alpha": 1.0, "lambda": 1.0, "nrounds": 10, "subsample": 0.5}
    inst.check(good)
    with pytest.raises(ValueError, match="not active or unknown \\['eta'\\]"):
        inst.check({**good, "eta": 0.1})
    with pytest.raises(ValueError, match="missing \\['subsample'\\]"):
        inst.check({k: v for k, v in good.items() if k != "subsample"})
    with pytest.raises(ValueError, match="nrounds must be in"):
        inst.check({**good, "nrounds": 5000})
    with pytest.raises(ValueError, match="nrounds must be an integer"):
        inst.check({**good, "nrounds": 10.5})
    with pytest.raises(ValueError, match="booster must be one of"):
        inst.check({**good, "booster": "linear"})


def test_fidelity_is_validated() -> None:
    lc = next(i for i in yahpo.INSTANCES if i.scenario == "lcbench")
    xgb = yahpo.get_instance(FIXED)
    params = lc.sample(1, np.random.default_rng(0))[0]
    for bad in (0, 53, 2.5):
        with pytest.raises(ValueError, match="fidelity must be an integer epoch"):
            lc.predict([params], bad)
    with pytest.raises(ValueError, match="fidelity must be a trainsize"):
        xgb.predict([xgb.sample(1, np.random.default_rng(0))[0]], 0.01)
    assert lc.max_fidelity == 52 and lc.fidelity_steps == tuple(float(e) for e in range(1, 53))
    assert xgb.max_fidelity == 1.0 and xgb.fidelity_steps[0] == pytest.approx(1 / 27)


def test_data_dir_says_what_to_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(yahpo.DATA_ENV, raising=False)
    monkeypatch.delenv(yahpo.DATA_DIR_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="set COSTBO_YAHPO_DATA"):
        yahpo.yahpo_data_dir()
    monkeypatch.setenv(yahpo.DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"lacks rbv2_xgboost/model\.onnx"):
        yahpo.yahpo_data_dir()
    monkeypatch.setenv(yahpo.DATA_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError, match="from \\$COSTBO_YAHPO_DATA"):
        yahpo.yahpo_data_dir()


def test_shim_adds_a_no_op_only_where_missing() -> None:
    class Old:
        def _sort_hyperparameters(self) -> str:
            return "old"

    class New:
        pass

    assert yahpo.apply_configspace_shim(Old) is False
    assert Old()._sort_hyperparameters() == "old"
    assert yahpo.apply_configspace_shim(New) is True
    assert New()._sort_hyperparameters() is None  # type: ignore[attr-defined]
    assert yahpo.apply_configspace_shim(New) is False


def test_instances_pickle() -> None:
    for inst in yahpo.INSTANCES:
        assert pickle.loads(pickle.dumps(inst)) == inst


# -- calibration file (no surrogate needed) -------------------------------------------------


def test_calibration_json_matches_the_instance_list() -> None:
    data = yahpo.load_calibration()
    entries = data["instances"]
    assert list(entries) == [i.name for i in yahpo.INSTANCES]
    multiple = data["meta"]["multiple"]
    for inst in yahpo.INSTANCES:
        e = entries[inst.name]
        got = (e["scenario"], e["instance"], e["dim"], e["conditional"], e["metric"])
        assert got == (inst.scenario, inst.instance, inst.dim, inst.conditional, inst.metric)
        assert inst.budget == pytest.approx(multiple * e["cost_mean"])
        assert 0.0 < e["cost_min"] <= e["cost_mean"] <= e["cost_max"]
        assert 0.0 <= inst.f_star <= e["random_search_best"] <= e["value_median"] <= 1.0
        assert 30 <= e["random_trials_median"] <= 60
        inst.check(e["f_star_params"])


# -- surrogates (yahpo_gym and the data needed) ---------------------------------------------


@pytest.mark.usefixtures("surrogates")
def test_shim_keeps_yahpo_working_on_the_installed_configspace() -> None:
    import ConfigSpace

    yahpo.apply_configspace_shim()
    assert callable(ConfigSpace.ConfigurationSpace._sort_hyperparameters)
    bench = yahpo.benchmark_set("rbv2_rpart")
    row = {"cp": 0.01, "maxdepth": 5, "minbucket": 10, "minsplit": 20, "task_id": "41161"}
    row.update({"trainsize": 1.0, "repl": 10, "num.impute.selected.cpo": "impute.mean"})
    bench.config_space._sort_hyperparameters()
    (y,) = bench.objective_function(row)
    assert 0.0 < y["acc"] < 1.0 and y["timetrain"] > 0.0


@pytest.mark.usefixtures("surrogates")
def test_evaluate_is_deterministic_in_range_and_positive() -> None:
    rng = np.random.default_rng(3)
    for inst in yahpo.INSTANCES:
        cfgs = inst.sample(4, rng)
        for cfg in cfgs:
            first = inst.evaluate(cfg)
            assert inst.evaluate(dict(cfg)) == first
            value, cost = first
            assert math.isfinite(value) and 0.0 <= value <= 1.0
            assert math.isfinite(cost) and cost >= yahpo.COST_FLOOR
        # One surrogate call per configuration: a batch changes nothing, bit for bit.
        values, costs = inst.evaluate_batch(cfgs)  # (4,), (4,)
        singles = np.array([inst.evaluate(c) for c in cfgs])  # (4, 2)
        assert values.tolist() == singles[:, 0].tolist()
        assert costs.tolist() == singles[:, 1].tolist()
        # predict batches rows: the same outputs up to float32 batch effects.
        raw_values, _ = inst.predict(cfgs)  # (4,)
        np.testing.assert_allclose(np.clip(raw_values, 0, 1), values, rtol=1e-4, atol=1e-6)


@pytest.mark.usefixtures("surrogates")
def test_evaluate_passes_instance_fixed_params_and_fidelity_to_yahpo() -> None:
    fixed = yahpo.get_instance(FIXED)
    params = fixed.sample(1, np.random.default_rng(5))[0]
    bench = yahpo.benchmark_set("rbv2_xgboost")
    row: dict[str, Any] = {**params, "booster": "gbtree", "task_id": "46", "trainsize": 0.5}
    row.update({"repl": 10, "num.impute.selected.cpo": "impute.mean"})
    bench.check = True  # yahpo's own ConfigSpace check of the row, this once
    try:
        (y,) = bench.objective_function(row)
    finally:
        bench.check = False
    value, cost = fixed.evaluate(params, 0.5)
    assert value == pytest.approx(1.0 - y["acc"], abs=1e-6)
    assert cost == pytest.approx(max(y["timetrain"], yahpo.COST_FLOOR), rel=1e-5)
    # Another dataset, same configuration: another landscape.
    other = yahpo.get_instance("yahpo-xgb-gbtree-16")
    assert other.evaluate(params) != fixed.evaluate(params)


@pytest.mark.usefixtures("surrogates")
def test_curve_is_monotone_and_ends_at_evaluate() -> None:
    rng = np.random.default_rng(7)
    for inst in [*_one_per_scenario(), yahpo.get_instance(CONDITIONAL)]:
        for params in inst.sample(3, rng):
            curve = inst.evaluate_curve(params)
            steps = [s for s, _, _ in curve]
            cum = np.array([c for _, _, c in curve])  # (k,)
            assert steps == list(inst.fidelity_steps)
            assert (np.diff(cum) >= 0).all() and cum[0] >= yahpo.COST_FLOOR
            value, cost = inst.evaluate(params)
            assert curve[-1][1] == value
            assert all(0.0 <= v <= 1.0 for _, v, _ in curve)
            for k in (0, 1, len(steps) // 2, len(steps) - 1):
                v_k, c_k = inst.evaluate(params, steps[k])
                assert curve[k][1] == v_k
                if inst.fidelity_resumes:  # epochs: the cost of reaching epoch k
                    assert cum[k] == c_k
                else:  # trainsize: every rung so far trained anew
                    paid = sum(inst.evaluate(params, s)[1] for s in steps[: k + 1])
                    assert cum[k] == pytest.approx(paid, rel=1e-12)
            if inst.fidelity_resumes:
                assert cum[-1] == cost
            else:
                assert cum[-1] > cost  # the full-size rung plus the smaller ones


@pytest.mark.usefixtures("surrogates")
def test_f_star_is_attained_and_not_beaten_by_random_configurations() -> None:
    rng = np.random.default_rng(11)
    for inst in yahpo.INSTANCES:
        params = yahpo.load_calibration()["instances"][inst.name]["f_star_params"]
        assert inst.evaluate(params)[0] == pytest.approx(inst.f_star, abs=1e-6)
        values, _ = inst.predict(inst.sample(500, rng))  # (500,)
        assert values.min() >= inst.f_star - 1e-6


# -- the noisy-real group (issue 51) --------------------------------------------------------


def test_noisy_real_definitions_read_the_committed_calibration() -> None:
    problems = yahpo.noisy_real_problems()  # definitions only: no yahpo-gym
    assert sorted(problems) == sorted(name + yahpo.NOISY_SUFFIX for name in yahpo.NOISY_REAL)
    for name, p in problems.items():
        base = yahpo.get_instance(name.removesuffix(yahpo.NOISY_SUFFIX))
        assert p.noisy and p.group == "noisy-real" and p.budget == base.budget
        e = yahpo._noisy_calibration(str(yahpo.NOISY_CALIBRATION_PATH))["instances"][base.name]
        assert p.f_star == e["f_star"] and 0.0 <= e["f_star"] <= e["mean_value_median"] <= 1
        assert 0.0 < e["repl_sd_p10"] <= e["repl_sd_median"] <= e["repl_sd_p90"] < 0.2
        base.check(e["f_star_params"])
    with pytest.raises(ValueError, match="no replication"):
        yahpo.replication(yahpo.get_instance("yahpo-lcbench-7593"), 3)


@pytest.mark.usefixtures("surrogates")
def test_noisy_real_observes_a_drawn_replication_and_scores_the_mean() -> None:
    from benchmarks.harness.problem import noise_rng

    name = "yahpo-rpart-41161"
    p = yahpo.noisy_real_problems()[name + yahpo.NOISY_SUFFIX]
    inst = yahpo.get_instance(name)
    params = inst.sample(1, np.random.default_rng(11))[0]
    per_repl = {r: yahpo.replication(inst, r).evaluate(params) for r in yahpo.REPLICATIONS}
    assert per_repl[10] == inst.evaluate(params)  # the suite's fixed replication
    assert len({v for v, _ in per_repl.values()}) > 1  # the replications differ
    assert p.true_value(params) == pytest.approx(np.mean([v for v, _ in per_repl.values()]))
    drawn = set()
    for trial in range(40):
        obs = p.observe(params, None, 2, trial)
        assert obs == p.observe(params, None, 2, trial)
        repl = int(noise_rng(2, trial).integers(1, 11))
        assert obs == per_repl[repl]
        drawn.add(repl)
    assert len(drawn) >= 8  # uniform over 1..10
