"""The limits that keep the user guide a guide and the package free of research narrative.

Every page of the user guide has at most 300 lines (the benchmark overview 400): the record of
experiments lives in ``benchmarks/reports/``. The package's modules point to
``docs/design-decisions.md`` for evidence instead of telling it: at most 5 lines of its ``.py``
files name the benchmarks.
"""

from __future__ import annotations

from pathlib import Path
import re

import pytest


REPO = Path(__file__).resolve().parents[2]
GUIDE = [
    "index",
    "quickstart",
    "concepts",
    "pruning",
    "multi_objective",
    "stopping",
    "constraints",
    "parallel",
    "dashboard",
    "faq",
    "examples",
]
PAGE_LINES = 300
OVERVIEW_LINES = 400
BENCHMARK_LINES = 5


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("page", GUIDE)
def test_a_user_guide_page_is_short(page: str) -> None:
    assert _lines(REPO / "docs" / f"{page}.md") <= PAGE_LINES


def test_the_benchmark_overview_is_short() -> None:
    assert _lines(REPO / "docs" / "benchmarks.md") <= OVERVIEW_LINES


def benchmark_lines(root: Path) -> list[str]:
    """``file:line`` of every line of the ``.py`` files under ``root`` that names benchmarks."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search("benchmark", line, re.IGNORECASE):
                found.append(f"{path.relative_to(root.parent)}:{number}")
    return found


def test_the_package_points_to_evidence_instead_of_telling_it() -> None:
    found = benchmark_lines(REPO / "optuna_costbo")
    assert len(found) <= BENCHMARK_LINES, found


def test_the_count_sees_a_mention(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text('"""Measured by benchmarks/x.py."""\nx = 1  # BENCHMARK\n')
    assert benchmark_lines(package) == ["pkg/m.py:1", "pkg/m.py:2"]
