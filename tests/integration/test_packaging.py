"""The wheel and sdist build cleanly and pass twine's checks."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import zipfile

import pytest


ROOT = Path(__file__).resolve().parents[2]


def test_wheel_and_sdist_build_and_pass_twine_check(tmp_path: Path) -> None:
    pytest.importorskip("build")
    pytest.importorskip("twine")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--sdist",
            "--wheel",
            "--outdir",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    wheels = list(tmp_path.glob("optuna_costbo-*.whl"))
    sdists = list(tmp_path.glob("optuna_costbo-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "optuna_costbo/py.typed" in names
    assert "optuna_costbo/sampler.py" in names
    assert not any(n.startswith("tests/") for n in names)
    out = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheels[0]), str(sdists[0])],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("PASSED") == 2
