"""The repository stays lean: at most 2,000 tracked files and 40 MB of them, and no loose run
file of a benchmark is tracked (runs are committed packed: ``benchmarks/harness/cache.py``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
import re
import shutil
import subprocess

import pytest


REPO = Path(__file__).resolve().parents[2]
MAX_FILES = 2_000
MAX_BYTES = 40_000_000
LOOSE_RUN = re.compile(r"(^|/)runs/[^/]+/[^/]+/seed\d+\.csv$")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout


def _tracked() -> dict[str, int]:
    """Tracked path -> size in bytes of its blob in the index."""
    if shutil.which("git") is None:
        pytest.skip("not a git checkout: git is not installed")
    try:
        top = _git("rev-parse", "--show-toplevel").strip()
    except subprocess.CalledProcessError:
        pytest.skip("not a git checkout: no repository around the tests (an unpacked sdist)")
    if Path(top).resolve() != REPO:
        pytest.skip(f"not a git checkout: the tests are not at the top of {top}")
    entries = [line.split(maxsplit=3) for line in _git("ls-files", "-s", "-z").split("\0") if line]
    blobs = "\n".join(e[1] for e in entries) + "\n"
    sizes = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "--batch-check=%(objectsize)"],
        input=blobs,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {e[3]: int(size) for e, size in zip(entries, sizes, strict=True)}


def _largest_folders(tracked: dict[str, int], by_size: bool) -> str:
    counts: Counter[str] = Counter()
    for path, size in tracked.items():
        counts["/".join(path.split("/")[:3])] += size if by_size else 1
    counts = Counter(dict(counts.most_common(5)))
    shown = (f"{n / 1e6:.1f} MB" if by_size else f"{n:,}" for n in counts.values())
    return ", ".join(f"{f}: {n}" for f, n in zip(counts, shown, strict=True))


def test_the_tree_holds_at_most_2000_files() -> None:
    tracked = _tracked()
    assert len(tracked) <= MAX_FILES, (
        f"{len(tracked):,} tracked files (at most {MAX_FILES:,}); the most: "
        + _largest_folders(tracked, by_size=False)
    )


def test_the_tracked_files_weigh_at_most_40_mb() -> None:
    tracked = _tracked()
    total = sum(tracked.values())
    assert total <= MAX_BYTES, (
        f"{total / 1e6:.1f} MB tracked (at most {MAX_BYTES / 1e6:.0f} MB); the heaviest: "
        + _largest_folders(tracked, by_size=True)
    )


def test_no_loose_run_file_is_tracked() -> None:
    loose = sorted(path for path in _tracked() if LOOSE_RUN.search(path))
    assert not loose, (
        f"{len(loose)} loose run files tracked, e.g. {loose[:3]}: fold them into their "
        "folder's pack (python -m benchmarks.harness.cache pack FOLDER) and commit the pack"
    )


def test_the_loose_run_pattern_matches_run_files_only() -> None:
    assert LOOSE_RUN.search("benchmarks/results/stopping/runs/branin/rollout/seed003.csv")
    assert LOOSE_RUN.search("runs/p/m/seed000.csv")
    assert not LOOSE_RUN.search("benchmarks/results/stopping/runs.tar.xz")
    assert not LOOSE_RUN.search("benchmarks/results/stopping_now_pooled/seeds10_PREREG.md")
    assert not LOOSE_RUN.search("benchmarks/results/x/runs/p/seed000.csv")  # not a run's depth
