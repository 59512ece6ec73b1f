"""Noisy problems (issue 51): the noise of a trial is a function of (seed, trial number), its
sd is the declared one, the runner records the noise-free values of the incumbents, the
reports score a noisy problem by the incumbent's noise-free value (``study.best_trial`` and
the recommendation), and the cache keeps the runs written before the noisy columns existed."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.harness import cache
from benchmarks.harness import report
from benchmarks.harness.problem import AdditiveNoise
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import noise_rng
from benchmarks.harness.problem import split
from benchmarks.harness.runner import RECOMMENDED_ATTR
from benchmarks.harness.runner import Run
from benchmarks.harness.runner import run_one
from benchmarks.problems import noisy
from benchmarks.problems.synthetic import SUITE


ROOT = Path(__file__).resolve().parents[2]
NOISY = noisy.noisy_problems()


def _square(params: dict[str, Any], previous: dict[str, Any] | None = None) -> tuple[float, float]:
    return params["x"] ** 2, 1.0 + params["x"]


TOY = Problem(
    name="toy-noisy",
    group="test",
    budget=10.0,
    evaluator=_square,
    noisy_evaluator=AdditiveNoise(_square, 0.5),
    params=(Param("x", "float", 0.0, 1.0),),
    f_star=0.0,
    settings={"noise": "gaussian sd=0.5"},
)


# -- the noise ------------------------------------------------------------------------------


def test_noise_is_a_function_of_seed_and_trial() -> None:
    p = NOISY["hartmann6-expensive-noise15"]
    params = p.decode(np.full(p.encoded_dim, 0.3))
    first = [p.observe(params, None, seed, trial) for seed in (0, 1) for trial in (0, 5)]
    again = [p.observe(params, None, seed, trial) for seed in (0, 1) for trial in (0, 5)]
    assert first == again
    assert len({v for v, _ in first}) == 4  # another seed or trial, another draw
    # the cost is the noise-free one; the noise is the same draw on another problem's scale
    base = SUITE["hartmann6-expensive"]
    assert {c for _, c in first} == {base.evaluate(params)[1]}
    z = [(v - p.true_value(params)) / 0.4831 for v, _ in first]
    q = NOISY["hartmann6-expensive-noise05"]
    z05 = [
        (q.observe(params, None, s, t)[0] - q.true_value(params)) / 0.1611
        for s in (0, 1)
        for t in (0, 5)
    ]
    assert z == pytest.approx(z05, rel=1e-9, abs=1e-9)
    assert p.true_value(params) == base.evaluate(params)[0]
    with pytest.raises(ValueError, match="seed and trial"):
        noise_rng(-1, 0)


def test_a_run_is_deterministic_and_methods_share_the_draws() -> None:
    p = dataclasses.replace(NOISY["branin-expensive-noise05"], budget=120.0)
    a, b = run_one(p, "random", 3), run_one(p, "random", 3)
    assert not a.error and a.values == b.values and a.true_values == b.true_values
    assert a.best_trials == b.best_trials
    tpe = run_one(p, "optuna-tpe", 3)  # the same first point (RandomSampler(seed)), same noise
    assert tpe.values[0] == a.values[0] and tpe.true_values[0] == a.true_values[0]
    noise = np.asarray(a.values) - np.asarray(a.true_values)
    assert np.all(noise != 0.0)


@pytest.mark.parametrize("name", sorted(NOISY))
def test_the_sd_is_the_declared_level_of_the_gap(name: str) -> None:
    p = NOISY[name]
    base_name, tag = name.rsplit("-", 1)
    level = {noisy.level_tag(level): level for level in noisy.LEVELS}[tag]
    sd = p.noisy_evaluator.sd  # type: ignore[union-attr]
    assert sd == pytest.approx(level * noisy.BASES[base_name], rel=1e-3)
    assert p.settings["noise"] == f"gaussian sd={sd!r}"
    # observed: 4000 trials of one configuration; the sample sd is within 8% (its relative SE
    # is 1/sqrt(2n) = 1.1%) and the mean within 4 standard errors of the noise-free value
    params = p.decode(np.full(p.encoded_dim, 0.6))
    truth = p.true_value(params)
    noise = np.array([p.observe(params, None, 0, t)[0] - truth for t in range(4000)])
    assert noise.std(ddof=1) == pytest.approx(sd, rel=0.08)
    assert abs(noise.mean()) < 4 * sd / math.sqrt(len(noise))


def test_the_gaps_are_those_of_the_bases() -> None:
    for name, gap in noisy.BASES.items():
        assert noisy.median_gap(SUITE[name]) == pytest.approx(gap, rel=1e-3), name


def test_the_group_is_in_both_halves_with_both_levels() -> None:
    problems = list(NOISY.values())
    assert len(problems) == len(noisy.BASES) * len(noisy.LEVELS) == 8
    assert {p.group for p in problems} == {"noisy"}
    for half in ("tuning", "confirmation"):
        chosen = split(problems, half)
        assert len(chosen) == 4
        assert {p.name.rsplit("-", 1)[1] for p in chosen} == {"noise05", "noise15"}
    # a noisy variant keeps its base's cost, budget, f* and space
    for p in problems:
        base = SUITE[p.name.rsplit("-", 1)[0]]
        assert (p.budget, p.f_star, p.params, p.max_trials) == (
            base.budget,
            base.f_star,
            base.params,
            base.max_trials,
        )
        assert p.noisy and not base.noisy and p.fingerprint != base.fingerprint


def test_fingerprints_of_existing_problems_are_unchanged() -> None:
    """The fields added for noise enter no fingerprint of a problem without noise: these are
    the fingerprints the committed suite cache carries (test_suite_smoke checks every run)."""
    root = ROOT / "benchmarks" / "suite" / "results" / "runs"
    for name in ("branin-uniform", "hartmann6-expensive", "size-expensive", "mixed-expensive"):
        run = cache.read_run(cache.run_path(root, name, "random", 0))
        assert run is not None, name
        assert run.meta["fingerprint"] == SUITE[name].fingerprint, name
        assert not run.true_values  # an old run: no noisy columns


def test_noisy_problems_take_no_steps_or_constraints() -> None:
    with pytest.raises(ValueError, match="neither steps nor constraints"):
        dataclasses.replace(TOY, constraints_fn=lambda params: [0.0])


# -- scoring --------------------------------------------------------------------------------


def _constructed_run() -> Run:
    """Five trials of cost 1 on TOY (budget 10, half 5): trial 1 has the lowest noisy value
    but trial 3 is the truly best; best_trial follows the noisy values, the recommendation
    moves to trial 3."""
    run = Run("toy-noisy", "rollout", 0, costs=[1.0, 1.0, 3.0, 1.0, 4.0])
    run.values = [0.50, -0.20, 0.40, 0.10, 0.30]  # noisy
    run.true_values = [0.45, 0.30, 0.35, 0.05, 0.20]  # trial 3 is the best
    run.best_trials = [0, 1, 1, 1, 1]
    run.recommended = [0, 0, 1, 3, 3]
    return run


def test_noise_free_scoring_picks_the_incumbent_not_the_lowest_observation() -> None:
    run = _constructed_run()
    s = report.score(run, TOY)
    assert s.noisy
    assert s.final == pytest.approx(0.30)  # best_trial: trial 1, true 0.30 (not -0.20, 0.05)
    assert s.final_rec == pytest.approx(0.05)  # the recommendation: trial 3
    # half budget (5): trials 0-2 (cumulative 1, 2, 5); the recommendation then was trial 1
    assert s.half == pytest.approx(0.30) and s.half_rec == pytest.approx(0.30)
    assert run.incumbent_true("recommended") == pytest.approx([0.45, 0.45, 0.30, 0.05, 0.05])
    # a problem without noise: the lowest value, as always
    plain = Run("toy", "random", 0, costs=[1.0, 1.0], values=[0.4, 0.1])
    s = report.score(plain, dataclasses.replace(TOY, noisy_evaluator=None))
    assert (s.final, s.half, s.noisy) == (pytest.approx(0.1), pytest.approx(0.1), False)
    assert math.isnan(s.final_rec)


def test_the_report_shows_both_scorings(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    scored = {}
    for seed in range(3):
        run = _constructed_run()
        run.seed = seed
        scored[("toy-noisy", "rollout", seed)] = report.score(run, TOY)
        other = _constructed_run()
        other.method, other.seed, other.recommended = "random", seed, list(other.best_trials)
        scored[("toy-noisy", "random", seed)] = report.score(other, TOY)
    path = report.write_suite_report(
        tmp_path, scored, [TOY], ["rollout", "random"], [0, 1, 2], "rollout",
        skipped={}, command="test",
    )  # fmt: skip
    text = path.read_text()
    assert "## Noisy problems: `study.best_trial` and the recommendation" in text
    assert "| toy-noisy | ours rollout h=2 | 0.3 ± 0 | 0.05 ± " in text
    assert "| toy-noisy | Random | 0.3 ± 0 | 0.3 ± 0 | 0.3 ± 0 | 0.3 ± 0 | 0/3/0 (1) |" in text
    header = (tmp_path / "runs_summary.csv").read_text().splitlines()[0]
    assert "final_regret_rec" in header


# -- the runner and the cache ---------------------------------------------------------------


def test_the_runner_records_the_recommendation_of_ours() -> None:
    seen: dict[str, Any] = {}

    def probe(sampler: Any, study: Any) -> dict[str, Any]:
        seen["attr"] = study.user_attrs.get(RECOMMENDED_ATTR)
        seen["best"] = study.best_trial.number
        return {}

    p = dataclasses.replace(NOISY["branin-expensive-noise15"], budget=500.0)
    run = run_one(p, "ei", 0, probe=probe)
    assert not run.error and run.n_trials > 8
    assert seen["attr"] is not None and run.recommended[-1] == seen["attr"]
    assert run.best_trials[-1] == seen["best"]
    assert run.best_trials[-1] == int(np.nanargmin(run.values))
    # before the model's first suggestion the recommendation is best_trial
    assert run.recommended[0] == run.best_trials[0] == 0
    assert len(run.true_values) == len(run.best_trials) == len(run.recommended) == run.n_trials


def test_noisy_runs_round_trip_and_old_runs_still_load(tmp_path: Path) -> None:
    run = _constructed_run()
    path = cache.write_run(tmp_path, TOY, run)
    header = path.read_text().splitlines()[1].split(",")
    assert header == ["trial", "cost", "value", *cache.NOISY_COLUMNS]
    back = cache.read_run(path)
    assert back is not None
    assert (back.values, back.true_values) == (run.values, run.true_values)
    assert (back.best_trials, back.recommended) == (run.best_trials, run.recommended)
    assert report.score(back, TOY).final_rec == pytest.approx(0.05)
    cut = cache.read_run(path, max_trials=2)
    assert cut is not None and len(cut.true_values) == len(cut.recommended) == 2
    # a file of the format before the noisy columns
    old = tmp_path / "old.csv"
    old.write_text(
        '# {"problem": "toy", "method": "ei", "seed": 0, "fingerprint": "x"}\n'
        "trial,cost,value\n0,1,0.5\n1,1,\n2,1,0.25\n"
    )
    loaded = cache.read_run(old)
    assert loaded is not None and loaded.values[0] == 0.5 and math.isnan(loaded.values[1])
    assert loaded.true_values == loaded.best_trials == loaded.recommended == []
    assert report.score(loaded, dataclasses.replace(TOY, noisy_evaluator=None)).final == 0.25


# -- the live problems: the validation split drawn per trial --------------------------------


def test_live_split_is_drawn_per_trial_and_the_noise_free_value_is_the_mean() -> None:
    pytest.importorskip("sklearn")
    from benchmarks.problems import hpo

    p = hpo.noisy_live_problems()["tree-digits-noisy"]
    assert p.noisy and p.group == "noisy-live" and p.clock == "reported" and p.f_star is None
    params = {"max_depth": 6, "min_samples_leaf": 3, "max_features": 0.5, "criterion": "gini"}
    values = [p.observe(params, None, 1, trial)[0] for trial in range(6)]
    assert values == [p.observe(params, None, 1, trial)[0] for trial in range(6)]  # costs vary
    assert len(set(values)) > 2  # another split, another error
    splits = p.noisy_evaluator
    assert isinstance(splits, hpo.SplitEvaluator)
    mean = np.mean([splits.at(params, s)[0] for s in range(hpo.NOISE_FREE_SPLITS)])
    assert p.true_value(params) == pytest.approx(mean)
    assert len(p.evaluator._known) == 1  # type: ignore[attr-defined]
    p.true_value(dict(params))  # the same configuration: not fitted again
    assert len(p.evaluator._known) == 1  # type: ignore[attr-defined]
