"""Shared by the benchmark tests: the repository root on sys.path (for ``benchmarks``), one
BLAS thread (as the benchmark scripts run: several threads on a shared 2-core machine make the
sensor problem's kriging 20x slower), and the offline data, found through
``COSTBO_DATA_DIR``, else ``../shared/data`` beside the repository; a test that needs absent
data is skipped with the reason; ``surrogates``: skip unless yahpo_gym and the YAHPO Gym data
are there."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import os
from pathlib import Path
import sys

import pytest
from threadpoolctl import threadpool_limits


ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NO_DATA = "offline data not found: set COSTBO_DATA_DIR to shared/data"


def data_dir() -> Path | None:
    env = os.environ.get("COSTBO_DATA_DIR", "")
    if env:
        return Path(env)
    shared = ROOT.parent / "shared" / "data"
    return shared if shared.is_dir() else None


@pytest.fixture(autouse=True)
def one_blas_thread() -> Iterator[None]:
    with threadpool_limits(limits=1):
        yield


@pytest.fixture
def need_data() -> Callable[..., Path]:
    """``need_data("libsvm/a1a", ...)``: the data directory, or skip (with the reason) when
    it or one of these files is absent."""

    def need(*relative: str) -> Path:
        root = data_dir()
        if root is None:
            pytest.skip(NO_DATA)
        for rel in relative:
            if not (root / rel).exists():
                pytest.skip(f"{NO_DATA} ({root / rel} is absent)")
        return root

    return need


@pytest.fixture(scope="module")
def surrogates() -> None:
    """Skip unless yahpo_gym and the YAHPO data are there."""
    pytest.importorskip(
        "yahpo_gym",
        reason="yahpo_gym is not installed (benchmark-only: benchmarks/problems/README_yahpo.md)",
    )
    from benchmarks.problems import yahpo

    try:
        yahpo.yahpo_data_dir()
    except FileNotFoundError as exc:
        pytest.skip(f"the YAHPO Gym data folder is absent: {exc}")
