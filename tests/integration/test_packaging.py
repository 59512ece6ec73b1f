"""The wheel and sdist build cleanly and pass twine's checks, the sdist's tests run from the
unpacked sdist against the installed package, the wheel builds with the lowest setuptools the
build system declares, and the classifiers name every supported Python."""

from __future__ import annotations

from pathlib import Path
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
import pytest


if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest depends on tomli before Python 3.11
    import tomli as tomllib


ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

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


def _floor_pins(requires: list[str]) -> list[str]:
    """Each build requirement pinned to its declared floor (``setuptools>=77`` ->
    ``setuptools==77``); a requirement without a floor is an error."""
    pins = []
    for text in requires:
        requirement = Requirement(text)
        floors = [s.version for s in requirement.specifier if s.operator == ">="]
        assert len(floors) == 1, f"build requirement {text!r} needs one '>=' floor"
        pins.append(f"{requirement.name}=={floors[0]}")
    return pins


def test_floor_pins_read_the_declared_floors() -> None:
    assert _floor_pins(["setuptools>=77.0.1", "wheel>=0.40,<1"]) == [
        "setuptools==77.0.1",
        "wheel==0.40",
    ]
    with pytest.raises(AssertionError, match="needs one '>=' floor"):
        _floor_pins(["wheel"])


@pytest.mark.slow
def test_the_wheel_builds_with_the_lowest_declared_build_requirements(tmp_path: Path) -> None:
    """A fresh venv with exactly the floors of ``[build-system] requires`` (from PyPI) builds
    the wheel without isolation; ``build`` checks that nothing else is needed."""
    pins = _floor_pins(PYPROJECT["build-system"]["requires"])
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / ("Scripts" if sys.platform == "win32" else "bin") / "python")
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", *pins, "build"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    # A copy of what the wheel is built from, so that the build writes nothing into the tree.
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "optuna_costbo", src / "optuna_costbo", ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy2(ROOT / name, src / name)
    out = tmp_path / "dist"
    built = subprocess.run(
        [python, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = out.glob("optuna_costbo-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    assert f"License-Expression: {PYPROJECT['project']['license']}" in text.splitlines()
    assert "Classifier: Programming Language :: Python :: 3.10" in text.splitlines()


def test_the_classifiers_name_each_python_from_the_floor_to_the_running_one() -> None:
    """``Programming Language :: Python :: 3.X`` for each minor version from requires-python's
    floor on, with no gap, the Python running the tests among them."""
    project = PYPROJECT["project"]
    prefix = "Programming Language :: Python :: 3."
    minors = sorted(
        int(c.removeprefix(prefix)) for c in project["classifiers"] if c.startswith(prefix)
    )
    requires_python = SpecifierSet(project["requires-python"])
    assert minors, "no Python version classifiers"
    assert f"3.{minors[0]}" in requires_python and f"3.{minors[0] - 1}" not in requires_python
    assert minors == list(range(minors[0], minors[-1] + 1)), minors
    assert sys.version_info.minor in minors, f"Python 3.{sys.version_info.minor} is not listed"
