"""CI runs what README says, fails without PostgreSQL, lets no test skip unannounced, and
runs a job on the lowest versions pyproject.toml declares."""

from __future__ import annotations

from pathlib import Path
import re
import subprocess
import sys

from packaging.requirements import Requirement
from packaging.version import Version
import pytest

from tests.conftest import allowed_skips


REPO = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return [line for block in blocks for line in block.splitlines() if line.startswith("python3")]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = _readme_commands()
    tests = [c for c in commands if "pytest" in c]
    assert len(tests) == 1, commands
    ci = (REPO / ".ci" / "run").read_text()
    assert tests[0] in ci.splitlines()
    for step in ("ruff check .", "ruff format --check .", "mypy", "--runslow"):
        assert step in tests[0]


def test_ci_fails_when_postgresql_cannot_be_set_up(tmp_path: Path) -> None:
    # .ci/run with a set-up that fails (PostgreSQL's tools replaced by a failing command):
    # it must stop with an error before any test runs, not skip PostgreSQL's tests.
    ci = (REPO / ".ci" / "run").read_text()
    broken = ci.replace("setup_postgres() {", "setup_postgres() {\n    return 1", 1)
    assert broken != ci
    script = tmp_path / "run"
    script.write_text(broken.replace('cd "$(dirname "$0")/.."', f'cd "{tmp_path}"', 1))
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "PostgreSQL could not be set up" in proc.stderr
    assert not (tmp_path / ".venv").exists()  # nothing after the set-up ran


def test_skips_md_lists_patterns_that_match_their_reasons() -> None:
    patterns = allowed_skips()
    assert len(patterns) >= 3
    assert any(p.search("yahpo_gym is not installed (benchmark-only: ...)") for p in patterns)
    # PostgreSQL, the slow tests and the optional packages of the test extra may not skip.
    for reason in (
        "PostgreSQL test skipped: set COSTBO_TEST_POSTGRES_URL (.ci/run does) to run it",
        "slow: run with --runslow",
        "could not import 'plotly': No module named 'plotly'",
        # The contract tests may skip only on an Optuna that does not ship them.
        "Optuna 4.8.0 ships no optuna.testing.pytest_samplers (from 4.8 on)",
        "Optuna 5.0.0 ships no optuna.testing.pytest_samplers (from 4.8 on)",
    ):
        assert not any(p.search(reason) for p in patterns), reason
    for version in ("4.0.0", "4.7.1"):
        reason = f"Optuna {version} ships no optuna.testing.pytest_samplers (from 4.8 on)"
        assert any(p.search(reason) for p in patterns), reason


def test_an_unlisted_skip_fails_a_strict_run(tmp_path: Path) -> None:
    test = tmp_path / "test_skipper.py"
    test.write_text(
        "import pytest\n\n"
        "def test_listed():\n    pytest.skip('yahpo_gym is not installed (here)')\n\n"
        "def test_unlisted():\n    pytest.skip('the moon is full')\n"
    )
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\nfrom tests.conftest import *  # noqa\n"
    )
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
    env = {"PATH": "/usr/bin:/bin", "COSTBO_STRICT_SKIPS": "1"}
    strict = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert strict.returncode == pytest.ExitCode.TESTS_FAILED, strict.stdout
    assert "test_unlisted: the moon is full" in strict.stdout
    assert "test_listed" not in strict.stdout.split("skips not allowed")[-1]
    lax = subprocess.run(
        args, capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}
    )
    assert lax.returncode == pytest.ExitCode.OK, lax.stdout


def _pyproject() -> dict[str, object]:
    """pyproject.toml's ``[project]`` table (CI runs these checks on Python 3.11)."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in Python 3.11 and later")
    project: dict[str, object] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project


def test_the_lowest_constraints_pin_the_declared_floors() -> None:
    pins = {}
    for line in (REPO / ".ci" / "lowest-constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.strip()] = Version(version.strip())
    floors = {}
    for text in _pyproject()["dependencies"]:  # type: ignore[attr-defined]
        requirement = Requirement(text)
        (spec,) = requirement.specifier  # one lower bound per runtime dependency
        assert spec.operator == ">=", text
        floors[requirement.name] = Version(spec.version)
    assert pins == floors


def test_ci_runs_the_lowest_versions_job_on_the_lowest_python_first() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert _pyproject()["requires-python"] == ">=3.10"
    assert "sys.version_info[:2] == (3, 10)" in ci
    assert 'pip" install -q -c .ci/lowest-constraints.txt . pytest' in ci
    job = ci[ci.index("lowest_job() {") : ci.index("if ! lowest_job; then")]
    for module in ("tests/integration/test_lowest_versions.py", "tests/sampler/test_contract.py"):
        assert module in job and (REPO / module).exists(), module
    # Before the README's command, whose status is the script's: a failure stops the run.
    assert ci.index("if ! lowest_job; then") < ci.index("rm -rf .venv")
    assert 'echo "ERROR: the lowest-versions job failed" >&2\n    exit 1' in ci
