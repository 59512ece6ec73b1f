"""Shared by every test folder: the ``--runslow`` option; ``tests/helpers/`` on ``sys.path``
(its modules are imported by the tests and run as worker scripts, where their own folder is
the script's); and, with ``COSTBO_STRICT_SKIPS=1`` (``.ci/run``), a run that fails when a test
skips for a reason ``tests/SKIPS.md`` does not list."""

from __future__ import annotations

import os
from pathlib import Path
import re
import sys

import pytest


TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS / "helpers"))

STRICT_SKIPS_ENV = "COSTBO_STRICT_SKIPS"


def allowed_skips(path: Path = TESTS / "SKIPS.md") -> list[re.Pattern[str]]:
    """The skip reasons CI allows: the first column (in backticks) of the table's rows."""
    patterns = []
    for line in path.read_text().splitlines():
        match = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        if match:
            patterns.append(re.compile(match.group(1)))
    return patterns


def skip_reason(report: pytest.TestReport) -> str:
    """The reason of a skipped test's report (``longrepr`` is (file, line, "Skipped: ...")."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return str(text).removeprefix("Skipped: ")


_unexpected: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail") or not os.environ.get(STRICT_SKIPS_ENV):
        return
    reason = skip_reason(report)
    if not any(p.search(reason) for p in allowed_skips()):
        _unexpected.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _unexpected and not hasattr(session.config, "workerinput"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _unexpected:
        terminalreporter.section(f"skips not allowed by tests/SKIPS.md ({STRICT_SKIPS_ENV}=1)")
        for line in _unexpected:
            terminalreporter.write_line(line)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run slow tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)
