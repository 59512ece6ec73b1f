"""Smoke tests: every script in examples/ runs to the end with a tiny budget.

Each example runs as a subprocess (as a user would run it), with a budget small enough that the
study ends after a few trials and its SQLite storage in a temporary directory; the test checks
the exit code and a line the example prints at the end. The whole file takes about a minute.
Each example's ``--help`` shows every option's default.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Callable
import json
import os
from pathlib import Path
import re
import runpy
import subprocess
import sys

import optuna
import pytest


REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

# example -> (arguments besides --storage, lines expected in its output)
CASES: dict[str, tuple[list[str], list[str]]] = {
    "quickstart.py": (
        ["--budget", "0.5"],
        ["best validation error:", "spent/budget:", "optuna-dashboard sqlite:///"],
    ),
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
    "constraints.py": (
        ["--budget", "20", "--max-mb", "20"],
        ["within 20 MB", "best error", "spent/budget:"],
    ),
    "stopping.py": (
        ["--value-per-cost", "0.002"],
        ["CostRolloutSampler:", "TPE with CostAwareStopping:", "not worth its cost"],
    ),
    "pruning.py": (
        ["--budget", "20"],
        ["trials: ", "best validation error:", "spent/budget:"],
    ),
    "multi_objective.py": (
        ["--budget", "2"],
        ["Pareto front (", "  trial ", "spent/budget:"],
    ),
    "warm_start.py": (
        ["--budget", "0.5", "--yesterday-budget", "0.5"],
        ["yesterday: ", "imported trials", "spent/budget:"],
    ),
    "sklearn_search_cv.py": (
        ["--budget", "0.5"],
        ["best params:", "test accuracy of the refitted forest:", "spent/budget:"],
    ),
}

SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))


def _dashboard_charts(storage: str) -> dict[str, dict]:  # type: ignore[type-arg]
    """The plotly charts optuna-dashboard shows on the (one) study's page, by ID.

    optuna-dashboard's ``save_plotly_graph_object`` stores a chart's JSON in the study's
    system attrs, cut into pieces ``dashboard:plot_data:<id>:0``, ``...:1``, ... (its
    ``_custom_plot_data`` module), which the dashboard joins back when it serves the page.
    """
    study = optuna.load_study(study_name=None, storage=storage)
    attrs = study._storage.get_study_system_attrs(study._study_id)
    pieces: dict[str, dict[int, str]] = {}
    for key, value in attrs.items():
        if key.startswith("dashboard:plot_data:"):
            graph_id, index = key.removeprefix("dashboard:plot_data:").rsplit(":", 1)
            pieces.setdefault(graph_id, {})[int(index)] = value
    return {
        graph_id: json.loads("".join(parts[i] for i in range(len(parts))))
        for graph_id, parts in pieces.items()
    }


def _check_quickstart(proc: subprocess.CompletedProcess[str], storage: str) -> None:
    """The README's main job: a budget bar while it runs, and the chart in the study."""
    from optuna_costbo.dashboard import GRAPH_NAME
    from optuna_costbo.dashboard import GRAPH_OBJECT_ID

    assert "Cost: 100%|" in proc.stderr and "/0.5 s [" in proc.stderr  # the progress bar
    assert f"optuna-dashboard {storage}" in proc.stdout
    charts = _dashboard_charts(storage)
    assert GRAPH_OBJECT_ID in charts, f"no optuna-dashboard chart in the study: {list(charts)}"
    chart = charts[GRAPH_OBJECT_ID]
    assert chart["layout"]["title"]["text"] == GRAPH_NAME
    assert chart["layout"]["xaxis"]["title"]["text"] == "Cumulative Cost (s, incl. sampler time)"
    assert chart["layout"]["shapes"][0]["x0"] == 0.5  # the budget line
    # The curve ends at the ledger's spent (the sampler's time included), not short of it.
    spent = optuna.load_study(study_name=None, storage=storage).user_attrs["cost_spent"]
    assert chart["data"][-1]["x"][-1] == pytest.approx(spent, rel=0.02)


def _check_parallel(proc: subprocess.CompletedProcess[str], storage: str) -> None:
    """The overrun printed is the ledger's: spent beyond the budget."""
    spent, budget, overrun = map(
        float, re.findall(r"spent/budget: (\S+) s / (\S+) s \(overrun (\S+) s", proc.stdout)[0]
    )
    assert overrun == pytest.approx(max(spent - budget, 0.0), abs=0.011)


# example -> a check of what it left behind, after the lines it printed
def _check_money(proc: subprocess.CompletedProcess[str], storage: str) -> None:
    """A hard $1 budget: spent at most $1.00, and the study says why it stopped."""
    study = optuna.load_study(study_name=None, storage=storage)
    spent = sum(t.user_attrs.get("cost", 0.0) for t in study.trials)
    assert 0.5 < spent <= 1.0, proc.stdout[-2000:]
    assert "no configuration's cost fits the budget left" in study.user_attrs["cost_stop_reason"]


def _check_front(proc: subprocess.CompletedProcess[str], storage: str) -> None:
    """Two objectives: the bar shows the front, and the front printed is the study's."""
    assert "front=" in proc.stderr  # the progress bar's postfix
    study = optuna.load_study(study_name=None, storage=storage)
    assert len(study.directions) == 2
    values = [t.values for t in study.trials if t.values]
    if values and all(len({v[j] for v in values}) > 1 for j in range(2)):
        assert ", hv=" in proc.stderr  # once every objective has a range
    assert f"Pareto front ({len(study.best_trials)} trials)" in proc.stdout


def _check_constraints(proc: subprocess.CompletedProcess[str], storage: str) -> None:
    """The size limit is stored with each trial (by ``trial.set_constraint`` where Optuna has
    it, else by ``constraints_func``), read by the sampler, and respected by the best trial."""
    from optuna_costbo._optuna_compat import trial_constraints

    study = optuna.load_study(study_name=None, storage=storage)
    done = study.get_trials(states=[optuna.trial.TrialState.COMPLETE])
    assert done
    for trial in done:
        limit = trial.user_attrs["size_mb"] - 20.0  # --max-mb 20
        assert trial_constraints(trial) == pytest.approx((limit,))
        if hasattr(optuna.trial.Trial, "set_constraint"):
            assert trial.constraints == pytest.approx({"size_mb": limit})
    assert study.best_trial.user_attrs["size_mb"] <= 20.0


def _check_warm(proc: subprocess.CompletedProcess[str], storage: str) -> None:
    """Yesterday's trials are in today's study, imported: today's budget pays for today's."""
    yesterday = optuna.load_study(study_name="yesterday", storage=storage)
    today = optuna.load_study(study_name="today", storage=storage)
    assert today.user_attrs["cost_imported_trials"] == len(yesterday.trials)
    run_today = today.trials[len(yesterday.trials) :]
    assert run_today and today.user_attrs["cost_spent"] == pytest.approx(
        sum(t.user_attrs["cost"] + t.system_attrs["costbo:sampler_seconds"] for t in run_today)
    )


CHECKS: dict[str, Callable[[subprocess.CompletedProcess[str], str], None]] = {
    "quickstart.py": _check_quickstart,
    "constraints.py": _check_constraints,
    "money_cost.py": _check_money,
    "multi_objective.py": _check_front,
    "parallel_workers.py": _check_parallel,
    "warm_start.py": _check_warm,
}


def test_examples_extra_installs_what_the_quickstart_shows() -> None:
    """The README's main job installs ".[examples]": the dashboard chart and the bar need these.

    Read from the installed package's metadata (what pip installs for the extra; works on
    every supported Python, tomllib being 3.11+)."""
    from importlib import metadata

    requires = metadata.requires("optuna-costbo") or []
    names = {
        re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0]
        for req in requires
        if re.search(r"extra\s*==\s*['\"]examples['\"]", req)
    }
    assert {"scikit-learn", "optuna-dashboard", "plotly", "tqdm"} <= names, names


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
    if name in CHECKS:
        CHECKS[name](proc, storage)


def _help_entries(text: str) -> dict[str, str]:
    """The options section of a ``--help`` text: each long option's entry, its lines joined."""
    entries: dict[str, str] = {}
    option = None
    for line in text.splitlines():
        match = re.match(r"^  (?:-\w, )?(--[\w-]+)", line)
        if match:
            option = match[1]
            entries[option] = line.strip()
        elif option and line.startswith("   "):
            entries[option] += " " + line.strip()
        else:
            option = None
    return entries


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_help_shows_every_default(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python examples/<name> --help``, run in this process so that the parser it builds can
    be asked for its defaults (``parse_args([])``)."""
    parsers: list[argparse.ArgumentParser] = []
    parse_args = argparse.ArgumentParser.parse_args

    def recording(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> object:
        parsers.append(self)
        return parse_args(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", recording)
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    monkeypatch.setenv("COLUMNS", "200")  # one line an option where it fits
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert exit_info.value.code == 0
    entries = _help_entries(capsys.readouterr().out)
    (parser,) = parsers
    defaults = vars(parse_args(parser, []))
    assert defaults, f"{name} has no options"
    for dest, default in defaults.items():
        option = "--" + dest.replace("_", "-")
        assert option in entries, f"{name} --help does not list {option}"
        assert f"(default: {default})" in entries[option], f"{name}: {entries[option]!r}"


def test_help_entries_are_read_option_by_option() -> None:
    text = (
        "options:\n  -h, --help  show this help message and exit\n"
        "  --budget BUDGET  seconds\n      of time (default: 60.0)\n"
        "  --seed SEED  the seed\n\nother:\n  x (default: 1)\n"
    )
    assert _help_entries(text) == {
        "--help": "-h, --help  show this help message and exit",
        "--budget": "--budget BUDGET  seconds of time (default: 60.0)",
        "--seed": "--seed SEED  the seed",
    }
