"""Fixtures of the rollout tests: one BLAS thread, and the small fitted problems."""

from __future__ import annotations

from collections.abc import Iterator

from _rollout_reference import _make_problem_1d
from _rollout_reference import _make_problem_2d
from _rollout_reference import _Problem
import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def _one_blas_thread() -> Iterator[None]:
    # Small dense linear algebra: multi-threaded BLAS only adds spin-waiting (see gp.py).
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture(scope="module")
def problem_1d() -> _Problem:
    return _make_problem_1d()


@pytest.fixture(scope="module")
def problem_2d() -> _Problem:
    return _make_problem_2d()
