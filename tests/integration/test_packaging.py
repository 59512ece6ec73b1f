"""The wheel and sdist build cleanly and pass twine's checks, and the sdist's tests run from
the unpacked sdist against the installed package."""

from __future__ import annotations

from pathlib import Path
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest


ROOT = Path(__file__).resolve().parents[2]

# Test folders the sdist leaves out: they check benchmarks/, docs/ and .ci/, which it has not.
LEFT_OUT = ("tests/benchmarks", "tests/docs")


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel and the sdist, built once from this tree."""
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    wheels = list(out.glob("optuna_costbo-*.whl"))
    sdists = list(out.glob("optuna_costbo-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    return wheels[0], sdists[0]


def test_wheel_and_sdist_build_and_pass_twine_check(dists: tuple[Path, Path]) -> None:
    pytest.importorskip("twine")
    wheel, sdist = dists
    names = zipfile.ZipFile(wheel).namelist()
    assert "optuna_costbo/py.typed" in names
    assert "optuna_costbo/sampler.py" in names
    assert not any(n.startswith("tests/") for n in names)
    out = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("PASSED") == 2


def _shipped_tests(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in (root / "tests").rglob("test_*.py")
        if not p.relative_to(root).as_posix().startswith(LEFT_OUT)
    }


@pytest.mark.slow
def test_the_sdists_tests_run_from_it_against_the_installed_package(
    dists: tuple[Path, Path], tmp_path: Path
) -> None:
    _, sdist = dists
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    (tree,) = tmp_path.iterdir()
    shipped = {p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()}
    assert {"tests/SKIPS.md", "tests/conftest.py", "tests/sampler/data/proposals.json"} <= shipped
    assert not any(name.startswith(LEFT_OUT) for name in shipped)
    assert _shipped_tests(tree) == _shipped_tests(ROOT)
    # The package's own copy goes, so that the tests import the installed package.
    shutil.rmtree(tree / "optuna_costbo")

    def pytest_in_tree(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
            capture_output=True,
            text=True,
            cwd=tree,
            timeout=600,
        )

    collected = pytest_in_tree("--collect-only", "-n", "0")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    assert not re.search(r"\berrors?\b", collected.stdout.splitlines()[-1]), collected.stdout
    files = {line.split("::")[0] for line in collected.stdout.splitlines() if "::" in line}
    assert files == _shipped_tests(tree)  # every shipped test file collects at least one test
    # A quick subset: a recorded proposal (read from the shipped data) and a budgeted study.
    ran = pytest_in_tree(
        "-n",
        "0",
        "tests/sampler/test_proposals_unchanged.py::test_proposals_are_unchanged[synthetic-ei-2-0]",
        "tests/integration/test_lowest_versions.py::test_a_budgeted_study_stops_by_itself[memory]",
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert re.search(r"^2 passed", ran.stdout.splitlines()[-1]), ran.stdout
