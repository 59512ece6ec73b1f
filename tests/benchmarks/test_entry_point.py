"""``python -m benchmarks``: the studies it lists, every command's --help, the former module
commands forwarded to it, and the preamble it applies before numpy and the package load."""

from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys

import pytest

from benchmarks import _preamble
from benchmarks.__main__ import STUDIES
from benchmarks.__main__ import resolve


ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [[name] for name in STUDIES] + [
    [name, step] for name, study in STUDIES.items() for step in study.steps
]


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the thread caps (and without PYTHONPATH)."""
    drop = {*_preamble.THREAD_VARIABLES, "PYTHONPATH"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def test_the_help_lists_every_study_and_step_on_one_line() -> None:
    proc = _run(["-m", "benchmarks", "--help"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "usage: python -m benchmarks STUDY [STEP] [OPTIONS]"
    for words in COMMANDS:
        command = STUDIES[words[0]] if len(words) == 1 else STUDIES[words[0]].steps[words[1]]
        indent = "  " if len(words) == 1 else "    "
        (line,) = [x for x in lines if x.startswith(indent + words[-1] + " ")]
        assert line.split(maxsplit=1)[1] == command.summary
    assert {"suite", "pruning", "stopping", "paper", "speed", "cheap-trials"} <= set(STUDIES)


def test_no_command_or_an_unknown_study_fails_with_the_list() -> None:
    for args in ([], ["nope"]):
        proc = _run(["-m", "benchmarks", *args])
        assert proc.returncode == 2
        assert "studies (and their steps):" in proc.stderr


_HELP_DRIVER = """
import contextlib, io, json, sys
from benchmarks import _preamble
_preamble.apply()
from benchmarks.__main__ import main
out = {}
for words in json.loads(sys.argv[1]):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        try:
            code = main([*words, "--help"])
        except SystemExit as stop:
            code = stop.code
    out[" ".join(words)] = [code, text.getvalue()]
print(json.dumps(out))
"""


def test_every_command_prints_its_own_options() -> None:
    """Each command's --help, as ``python -m benchmarks ... --help`` runs it (the preamble,
    then the dispatch), all in one subprocess: exit 0 and argparse's usage under the
    command's full name; a study with steps lists them after its options."""
    proc = _run(["-c", _HELP_DRIVER, json.dumps(COMMANDS)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    helps = json.loads(proc.stdout.splitlines()[-1])
    assert set(helps) == {" ".join(words) for words in COMMANDS}
    for name, (code, text) in helps.items():
        assert code == 0, name
        assert text.startswith(f"usage: python -m benchmarks {name} [-h]"), text[:200]
        words = name.split()
        steps = STUDIES[words[0]].steps if len(words) == 1 else {}
        for step in steps:
            assert f"\n  {step} " in text.split("steps of ")[-1], (name, step)


def test_a_step_name_goes_to_the_step_and_anything_else_to_the_study() -> None:
    assert resolve(["pruning", "equal-spend", "--out", "x"])[1:] == (
        STUDIES["pruning"].steps["equal-spend"],
        ["--out", "x"],
    )
    assert resolve(["pruning", "--tag", "equal-spend"])[1:] == (
        STUDIES["pruning"],
        ["--tag", "equal-spend"],
    )
    assert resolve(["paper", "hpo", "--smoke"])[1:] == (STUDIES["paper"], ["hpo", "--smoke"])


def test_every_top_level_module_is_a_study_or_a_step() -> None:
    """A new benchmark script is registered in ``STUDIES`` (or it is not a top-level module)."""
    registered = {c.module for c in STUDIES.values()}
    registered |= {s.module for c in STUDIES.values() for s in c.steps.values()}
    top = {
        f"benchmarks.{p.stem}"
        for p in (ROOT / "benchmarks").glob("*.py")
        if p.stem not in ("__init__", "__main__", "_preamble")
    }
    assert top <= registered, sorted(top - registered)
    assert registered - top == {"benchmarks.suite.run"}


def test_the_preamble_is_written_once() -> None:
    """No benchmark module caps threads or edits sys.path itself."""
    for path in (ROOT / "benchmarks").rglob("*.py"):
        if path.name == "_preamble.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert not any(f'"{v}"' in text for v in _preamble.THREAD_VARIABLES), path
        assert "sys.path.append" not in text and "sys.path.insert" not in text, path


_BLAS_DRIVER = """
import json, os, runpy, sys
variables = json.loads(sys.argv[2])
sys.argv = ["benchmarks", *json.loads(sys.argv[1])]
if sys.argv[1:]:
    try:
        runpy.run_module("benchmarks", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
import numpy, threadpoolctl
import optuna_costbo
print(json.dumps({
    "env": {v: os.environ.get(v) for v in variables},
    "threads": [i["num_threads"] for i in threadpoolctl.threadpool_info()],
    "package": optuna_costbo.__file__,
}))
"""


def _blas(args: list[str], env: dict[str, str]) -> dict:
    variables = json.dumps(list(_preamble.THREAD_VARIABLES))
    proc = _run(["-c", _BLAS_DRIVER, json.dumps(args), variables], env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_the_entry_point_caps_blas_before_numpy_loads() -> None:
    """``python -m benchmarks speed --help`` (numpy loads with the study) leaves one BLAS
    thread and the caps in the environment for the processes it starts; without the entry
    point, numpy takes a thread per core."""
    result = _blas(["speed", "--help"], _clean_env())
    assert set(result["env"].values()) == {"1"}
    assert result["threads"] and set(result["threads"]) == {1}
    control = _blas([], _clean_env())
    assert set(control["env"].values()) == {None}
    if (os.cpu_count() or 1) > 1:
        assert max(control["threads"]) > 1


def test_a_package_on_pythonpath_is_the_one_measured(tmp_path: Path) -> None:
    """With a directory holding an ``optuna_costbo`` on PYTHONPATH (another checkout), that
    package is imported, although the working directory (this checkout) comes first on
    sys.path; the benchmarks stay this checkout's."""
    other = tmp_path / "optuna_costbo"
    other.mkdir()
    (other / "__init__.py").write_text("")
    measured = _blas(["--help"], _clean_env(PYTHONPATH=str(tmp_path)))
    assert Path(measured["package"]).parent == other
    unchanged = _blas([], _clean_env(PYTHONPATH=str(tmp_path)))  # no preamble: cwd first
    assert Path(unchanged["package"]).parent == ROOT / "optuna_costbo"


def test_the_preamble_refuses_to_run_after_numpy() -> None:
    assert "numpy" in sys.modules  # imported by this test process
    before = {v: os.environ.get(v) for v in _preamble.THREAD_VARIABLES}
    with pytest.raises(RuntimeError, match="numpy"):
        _preamble.apply()
    assert {v: os.environ.get(v) for v in _preamble.THREAD_VARIABLES} == before


def test_the_former_module_command_runs_through_the_entry_point() -> None:
    """``python -m benchmarks.pruning_equal_spend --help`` (the commands the reports record)
    is ``python -m benchmarks pruning equal-spend --help``, with the preamble."""
    proc = _run(["-m", "benchmarks.pruning_equal_spend", "--help"], env=_clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("usage: python -m benchmarks pruning equal-spend [-h]")
