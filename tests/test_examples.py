"""Smoke tests: every script in examples/ runs to the end with a tiny budget.

Each example runs as a subprocess (as a user would run it), with a budget small enough that the
study ends after a few trials and its SQLite storage in a temporary directory; the test checks
the exit code and a line the example prints at the end. The whole file takes about a minute.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
import subprocess
import sys

import pytest


REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# example -> (arguments besides --storage, lines expected in its output)
CASES: dict[str, tuple[list[str], list[str]]] = {
    "quickstart.py": (["--budget", "0.5"], ["best validation error:", "spent/budget:"]),
    # No --no-openml: without the openml package or the network it must fall back by itself.
    "knn_openml.py": (["--budget", "0.5"], ["dataset:", "spent/budget:"]),
    "random_forest_openml.py": (
        ["--budget", "0.5", "--no-openml"],
        ["dataset: scikit-learn breast cancer", "spent/budget:"],
    ),
    "parallel_workers.py": (["--budget", "1", "--workers", "2"], ["worker ", "spent/budget:"]),
    "dashboard.py": (["--budget", "0.5"], ["optuna-dashboard sqlite:///", "cost_budget"]),
    "ask_and_tell.py": (["--budget", "2"], ["trial   0:", "spent/budget:"]),
    "money_cost.py": (["--budget", "1"], ["trial   0:", "spent/budget: $"]),
}

SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))


def test_every_example_is_smoke_tested() -> None:
    assert set(SCRIPTS) == set(CASES), "add a case for each script in examples/"


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_has_a_docstring_and_a_budget_option(name: str) -> None:
    source = (EXAMPLES / name).read_text()
    docstring = ast.get_docstring(ast.parse(source))
    assert docstring, f"{name} needs a module docstring saying what it shows"
    assert '"--budget"' in source, f"{name} needs a --budget argument"


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs(name: str, tmp_path: Path) -> None:
    args, expected = CASES[name]
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["MPLBACKEND"] = "Agg"
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args, "--storage", storage],
        cwd=tmp_path,  # anything an example writes by default lands here
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{name} exited with {proc.returncode}:\n{output[-4000:]}"
    for line in expected:
        assert line in proc.stdout, f"{name} did not print {line!r}:\n{output[-4000:]}"
