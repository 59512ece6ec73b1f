"""benchmarks/harness/package_probes.py: every private name the benchmarks use resolves in the
installed package (this fails first when the package's modules move: retarget there)."""

from __future__ import annotations

import pytest

from benchmarks.harness import package_probes


@pytest.mark.parametrize("name", sorted(package_probes.NAMES))
def test_every_private_name_resolves(name: str) -> None:
    assert getattr(package_probes, name) is not None


def test_a_fit_schedule_is_set_on_one_sampler_only() -> None:
    from optuna_costbo import CostRolloutSampler

    shipped = package_probes.shipped_fit_schedule()
    a, b = CostRolloutSampler(1.0), CostRolloutSampler(1.0)
    package_probes.set_fit_schedule(a, package_probes.fit_schedule(1, 2, 0.5, 3))
    assert a._suggester.schedule.max_model_points == 3
    assert b._suggester.schedule == shipped == package_probes.shipped_fit_schedule()
    with pytest.raises(AttributeError, match="no attribute"):
        package_probes.__getattr__("not_a_probe")


def test_profiled_seconds_find_the_ledger_and_the_model() -> None:
    import cProfile

    import optuna

    from optuna_costbo import CostRolloutSampler
    from optuna_costbo import report_cost

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, 1.0)
        return (x - 0.3) ** 2

    study = optuna.create_study(sampler=CostRolloutSampler(100.0, seed=0, n_startup_trials=3))
    profile = cProfile.Profile()
    profile.enable()
    study.optimize(objective, n_trials=5)
    profile.disable()
    seconds = package_probes.profiled_seconds(profile)
    assert seconds["ledger"] > 0.0 and seconds["model"] > 0.0
    assert seconds["model"] > seconds["ledger"]  # two GP fits and a rollout per suggestion
