"""The OptunaHub package folder: registry layout, README front matter, and loading it.

``package/samplers/cost_rollout/`` follows the optunahub-registry layout for samplers
(``package/<category>/<name>/`` with ``__init__.py``, ``README.md``, ``LICENSE``,
``requirements.txt`` and ``example.py``), so that it can be copied into the registry as is.
"""

from __future__ import annotations

from pathlib import Path
import re
import runpy
import types

import optuna
import pytest

import optuna_costbo


optunahub = pytest.importorskip("optunahub")
yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "package" / "samplers" / "cost_rollout"


def _load_local(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.chdir(REPO)
    module: types.ModuleType = optunahub.load_local_module(
        "samplers/cost_rollout", registry_root="package"
    )
    return module


def _readme() -> tuple[dict[str, object], str]:
    text = (FOLDER / "README.md").read_text()
    match = re.match(r"---\n(.*?)\n---\n(.*)", text, flags=re.DOTALL)
    assert match, "README.md must start with the registry's front matter between --- lines"
    front = yaml.safe_load(match[1])
    assert isinstance(front, dict)
    return front, match[2]


def test_load_local_module_gives_the_installed_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _load_local(monkeypatch)
    assert module.CostRolloutSampler is optuna_costbo.CostRolloutSampler
    assert module.report_cost is optuna_costbo.report_cost
    assert module.CostBudgetPruner is optuna_costbo.CostBudgetPruner

    sampler = module.CostRolloutSampler(budget=3.0, n_startup_trials=10, seed=0)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        module.report_cost(trial, 1.0)
        return x

    study.optimize(objective)  # stops by itself at the budget
    assert len(study.trials) == 3


def test_folder_has_the_registry_layout() -> None:
    names = {p.name for p in FOLDER.iterdir() if not p.name.startswith((".", "__pycache__"))}
    assert {"__init__.py", "README.md", "LICENSE"} <= names
    assert names <= {"__init__.py", "README.md", "LICENSE", "requirements.txt", "example.py"}
    assert FOLDER.name.isidentifier()  # the registry's rule: a valid Python module name
    assert (FOLDER / "LICENSE").read_text().startswith("MIT License")
    requirements = (FOLDER / "requirements.txt").read_text().split()
    assert "optuna-costbo" in requirements
    assert "from optuna_costbo import CostRolloutSampler" in (FOLDER / "__init__.py").read_text()


def test_readme_has_the_registry_front_matter_and_sections() -> None:
    front, body = _readme()
    assert set(front) == {"author", "title", "description", "tags", "optuna_versions", "license"}
    for key in ("author", "title", "description", "license"):
        assert isinstance(front[key], str) and front[key], key
    assert front["license"] == "MIT License"
    assert " " in str(front["title"])  # a human-readable title, not a class name
    tags = front["tags"]
    assert isinstance(tags, list) and "sampler" in tags
    versions = front["optuna_versions"]
    assert isinstance(versions, list) and versions
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", str(v)) for v in versions)
    headings = re.findall(r"^## (.+)$", body, flags=re.MULTILINE)
    assert headings[:4] == ["Abstract", "APIs", "Installation", "Example"]
    assert "load_local_module" not in body  # the registry wants load_module in examples


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_readme_example_and_example_py_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both load ``samplers/cost_rollout`` from the hub; here it comes from this folder."""
    module = _load_local(monkeypatch)
    monkeypatch.setattr(optunahub, "load_module", lambda package, **kwargs: module)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    (code,) = _python_blocks(_readme()[1])
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    study = namespace["study"]
    assert isinstance(study, optuna.Study)
    sampler = namespace["sampler"]
    spent = sampler.ledger(study).spent  # type: ignore[attr-defined]
    # Reported costs: the budget is hard by default; the study stops within it, by itself.
    assert 30.0 < spent <= 40.0
    assert sampler.stop_reason(study) is not None  # type: ignore[attr-defined]

    runpy.run_path(str(FOLDER / "example.py"), run_name="__main__")
    assert "of 40" in capsys.readouterr().out
