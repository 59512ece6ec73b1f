"""What must hold on every Optuna, NumPy and SciPy the package declares, the lowest included.

``.ci/run`` runs this module (and the sampler contract tests) in a fresh Python 3.10 venv with
the floors of ``pyproject.toml`` pinned (``.ci/lowest-constraints.txt``); the normal suite runs
it on the newest releases. It needs nothing beyond the package and pytest.
"""

from __future__ import annotations

import importlib
from pathlib import Path
import subprocess
import sys

import optuna
from packaging.version import Version
import pytest

import optuna_costbo
from optuna_costbo import CostRolloutSampler
from optuna_costbo import report_cost
from optuna_costbo.storage import RetryingRDBStorage


PACKAGE = Path(optuna_costbo.__file__).resolve().parent


def public_modules() -> list[str]:
    """Every module of the installed package whose dotted name has no part starting with
    ``_`` (``optuna_costbo``, ``optuna_costbo.storage``, ``optuna_costbo.visualization``,
    ...), found by walking its files, so that a new module is covered without a list."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if not any(part.startswith("_") for part in parts):
            names.append(".".join(parts))
    return names


def test_the_walk_finds_the_documented_modules() -> None:
    found = set(public_modules())
    documented = {
        "optuna_costbo",
        "optuna_costbo.sampler",
        "optuna_costbo.pruner",
        "optuna_costbo.storage",
        "optuna_costbo.stopping",
        "optuna_costbo.progress",
        "optuna_costbo.dashboard",
        "optuna_costbo.visualization",
        "optuna_costbo.visualization.matplotlib",
    }
    assert documented <= found, sorted(documented - found)
    assert not any("._" in name for name in found), sorted(found)


@pytest.mark.parametrize("module", public_modules())
def test_every_public_module_imports_on_its_own(module: str, tmp_path: Path) -> None:
    # A fresh interpreter, outside the source tree: nothing imported before it hides an
    # import that fails on this Optuna (the optional plotting, progress and dashboard packages
    # are imported only when used).
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_optuna_ships_the_contract_tests_from_4_8_on() -> None:
    # tests/sampler/test_contract.py skips below Optuna 4.8 (tests/SKIPS.md); from 4.8 on the
    # module it needs must be there, or the skip would hide the contract tests.
    name = "optuna.testing.pytest_samplers"
    if Version(optuna.__version__) < Version("4.8"):
        with pytest.raises(ImportError):
            importlib.import_module(name)
    else:
        importlib.import_module(name)


BUDGET = 12.0
MAX_TRIALS = 40  # far above what the budget buys (at most 12 trials of cost >= 1)


def _objective(trial: optuna.Trial) -> float:
    if trial.number >= MAX_TRIALS:
        trial.study.stop()  # the sampler failed to stop the study: the test fails below
    x = trial.suggest_float("x", -1.0, 1.0)
    y = trial.suggest_float("y", 0.0, 1.0)
    kind = trial.suggest_categorical("kind", ["a", "b"])
    report_cost(trial, 1.0 + y)  # costs from 1 to 2
    return (x - 0.3) ** 2 + y + (0.1 if kind == "b" else 0.0)


@pytest.mark.parametrize("storage", ["memory", "retrying-sqlite"])
def test_a_budgeted_study_stops_by_itself(storage: str, tmp_path: Path) -> None:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    sampler = CostRolloutSampler(budget=BUDGET, seed=0)
    study = optuna.create_study(
        sampler=sampler,
        storage=(
            None
            if storage == "memory"
            else RetryingRDBStorage(f"sqlite:///{tmp_path / 'study.db'}", outage_timeout=5.0)
        ),
    )
    study.optimize(_objective)  # no n_trials, no timeout: the budget ends it
    trials = study.get_trials(deepcopy=False)
    ledger = sampler.ledger(study)
    assert len(trials) < MAX_TRIALS
    # Reported costs: the budget is hard ("auto"). The study stops when no trial fits the
    # budget left, the last one asked skipped unrun (pruned, no params, no cost).
    ran, last = trials[:-1], trials[-1]
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in ran)
    if last.state == optuna.trial.TrialState.COMPLETE:
        ran = trials
    else:
        assert last.state == optuna.trial.TrialState.PRUNED and not last.params
        assert "cost" not in last.user_attrs
    assert ledger.spent <= BUDGET
    assert BUDGET - ledger.spent < 2.0  # what is left pays for no trial of cost <= 2
    assert ledger.spent == pytest.approx(sum(1.0 + t.params["y"] for t in ran))
    assert BUDGET / 2.0 <= len(ran) <= BUDGET
    assert sampler.remaining_budget(study) == pytest.approx(BUDGET - ledger.spent)
    assert sampler.stop_reason(study)
    assert study.best_value < 1.0
