"""benchmarks/harness/cache.py: run files written loose, folded into packs, and read back from
either as the same runs; a loose file wins over its packed copy; repacking gives the same
bytes; discarding a method drops its packed runs too."""

from __future__ import annotations

import io
import math
from pathlib import Path
import tarfile

import pytest

from benchmarks.harness import best_known
from benchmarks.harness import cache
from benchmarks.harness.problem import Param
from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import Run


PROBLEM = Problem(
    name="toy",
    group="test",
    budget=10.0,
    evaluator=lambda params, previous: (params["x"] ** 2, 1.0),
    params=(Param("x", "float", -1.0, 1.0),),
    f_star=0.0,
)


def _run(method: str, seed: int, values: list[float]) -> Run:
    run = Run("toy", method, seed, costs=[1.0 + 0.5 * k for k in range(len(values))])
    run.values = list(values)
    run.run_s = 0.25 * (seed + 1)
    return run


def _write_runs(root: Path) -> dict[Path, bytes]:
    """Four runs (two methods, two seeds; one with a failed trial) written loose under root."""
    paths = [
        cache.write_run(root, PROBLEM, _run("ei", 0, [0.5, 0.2, math.nan])),
        cache.write_run(root, PROBLEM, _run("ei", 1, [0.4, 0.1])),
        cache.write_run(root, PROBLEM, _run("ours:acquisition=eipu", 0, [0.3])),
        cache.write_run(root, PROBLEM, _run("ours:acquisition=eipu", 1, [0.9, 0.05])),
    ]
    return {p: p.read_bytes() for p in paths}


def _same(a: Run | None, b: Run | None) -> bool:
    """Equal runs (``Run`` compares nan values as unequal: compare their reprs)."""
    assert a is not None and b is not None
    return repr(a) == repr(b)


def test_packed_runs_read_as_the_loose_files_did(tmp_path: Path) -> None:
    root = tmp_path / "exp" / "runs"
    files = _write_runs(root)
    before = {p: cache.read_run(p) for p in files}
    short = {p: cache.read_run(p, max_trials=1) for p in files}
    assert cache.pack(tmp_path / "exp") == 4
    pack = tmp_path / "exp" / cache.PACK
    assert pack.is_file() and not root.exists()  # the loose files and their folders are gone
    with tarfile.open(pack, "r:xz") as tar:
        names = sorted(tar.getnames())
        contents = {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]
    assert names == sorted(p.relative_to(tmp_path / "exp").as_posix() for p in files)
    assert names[0] == "runs/toy/ei/seed000.csv"
    for path, data in files.items():
        assert contents[path.relative_to(tmp_path / "exp").as_posix()] == data  # same bytes
        assert _same(cache.read_run(path), before[path])
        assert _same(cache.read_run(path, max_trials=1), short[path])
    assert cache.read_run(root / "toy" / "ei" / "seed002.csv") is None
    valid, failed, other = cache.load_all(
        root, PROBLEM, ["ei", "ours:acquisition=eipu"], [0, 1, 2]
    )
    assert sorted(valid) == [(m, s) for m in ("ei", "ours:acquisition=eipu") for s in (0, 1)]
    assert not failed and other == 0
    run = cache.load_valid(root, PROBLEM, "ei", 1)
    assert run is not None and run.values == [0.4, 0.1]


def test_a_loose_file_wins_over_its_packed_copy_and_replaces_it(tmp_path: Path) -> None:
    _write_runs(tmp_path / "runs")
    cache.pack(tmp_path)
    path = cache.write_run(tmp_path / "runs", PROBLEM, _run("ei", 0, [0.01, 0.02]))
    run = cache.read_run(path)
    assert run is not None and run.values == [0.01, 0.02]
    assert cache.pack(tmp_path) == 1  # folded into the same pack, replacing the entry
    assert not path.exists()
    run = cache.read_run(path)
    assert run is not None and run.values == [0.01, 0.02]
    other = cache.read_run(tmp_path / "runs" / "toy" / "ei" / "seed001.csv")
    assert other is not None and other.values == [0.4, 0.1]  # the rest of the pack kept


def test_repacking_the_same_runs_gives_the_same_bytes(tmp_path: Path) -> None:
    files = _write_runs(tmp_path / "a" / "runs")
    cache.pack(tmp_path / "a")
    first = (tmp_path / "a" / cache.PACK).read_bytes()
    # the same runs, written in another order at other times, into another folder
    for path in sorted(files, reverse=True):
        target = tmp_path / "b" / path.relative_to(tmp_path / "a")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[path])
    cache.pack(tmp_path / "b")
    assert (tmp_path / "b" / cache.PACK).read_bytes() == first
    # unpacked and packed again: the same bytes; fixed timestamps and owners inside
    with tarfile.open(fileobj=io.BytesIO(first), mode="r:xz") as tar:
        assert {(m.mtime, m.uid, m.gid, m.uname, m.mode) for m in tar} == {(0, 0, 0, "", 0o644)}
        for member in tar:
            target = tmp_path / "c" / member.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
    cache.pack(tmp_path / "c")
    assert (tmp_path / "c" / cache.PACK).read_bytes() == first


def test_discard_drops_a_method_from_the_pack_and_the_loose_files(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _write_runs(root)
    cache.pack(tmp_path)
    cache.write_run(root, PROBLEM, _run("ei", 2, [0.3]))  # one loose, two packed
    assert cache.discard(root, ["ei"]) == 3
    assert all(cache.read_run(cache.run_path(root, "toy", "ei", s)) is None for s in (0, 1, 2))
    kept = cache.read_run(cache.run_path(root, "toy", "ours:acquisition=eipu", 1))
    assert kept is not None and kept.values == [0.9, 0.05]
    with tarfile.open(tmp_path / cache.PACK, "r:xz") as tar:
        assert all("/ei/" not in name for name in tar.getnames())
    assert cache.discard(root, ["ours:acquisition=eipu"]) == 2
    assert not (tmp_path / cache.PACK).exists()  # nothing left to hold
    assert cache.discard(root, ["ei"]) == 0


def test_runs_go_to_the_nearest_pack_and_are_found_from_any_folder(tmp_path: Path) -> None:
    """A folder of experiments packed as one (``<tag>/runs/...`` entries), a later experiment
    packed on its own: each run is read from the pack that holds it, glob finds them all."""
    _write_runs(tmp_path / "study" / "first" / "runs")
    assert cache.pack(tmp_path / "study") == 4
    _write_runs(tmp_path / "study" / "second" / "runs")
    assert cache.pack(tmp_path / "study" / "second") == 4  # a pack of its own
    late = cache.write_run(tmp_path / "study" / "first" / "runs", PROBLEM, _run("ei", 5, [0.7]))
    assert cache.pack(tmp_path / "study") == 1  # into the study's pack, not the second's
    with tarfile.open(tmp_path / "study" / cache.PACK, "r:xz") as tar:
        assert "first/runs/toy/ei/seed005.csv" in tar.getnames()
        assert not any(name.startswith("second/") for name in tar.getnames())
    assert cache.read_run(late) is not None
    found = cache.glob(tmp_path, "**/runs/toy/*/seed*.csv")
    assert len(found) == 9 and found == sorted(found)
    assert tmp_path / "study" / "second" / "runs" / "toy" / "ei" / "seed001.csv" in found
    # the same from a folder below the packs, and mixed with loose files
    loose = cache.write_run(tmp_path / "study" / "second" / "runs", PROBLEM, _run("x", 0, [1.0]))
    below = cache.glob(tmp_path / "study" / "second" / "runs", "*/*/seed*.csv")
    assert len(below) == 5 and loose in below
    assert cache.glob(tmp_path / "study" / "first" / "runs", "toy/ei/seed00?.csv") == [
        tmp_path / "study" / "first" / "runs" / "toy" / "ei" / f"seed00{s}.csv" for s in (0, 1, 5)
    ]
    assert cache.glob(tmp_path / "nowhere", "**/*.csv") == []


def test_best_known_scans_the_packed_runs_as_the_loose_ones(tmp_path: Path) -> None:
    _write_runs(tmp_path / "a" / "runs")
    _write_runs(tmp_path / "b" / "c" / "runs")
    loose = best_known.scan(tmp_path, [PROBLEM])
    cache.pack(tmp_path / "a")
    cache.pack(tmp_path / "b")
    assert best_known.scan(tmp_path, [PROBLEM]) == loose
    assert loose["toy"]["runs"] == 8


def test_the_command_line_packs_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_runs(tmp_path / "runs")
    assert cache.main(["pack", str(tmp_path)]) == 0
    assert "4 loose runs folded; 4 runs in 1 packs" in capsys.readouterr().out
    assert (tmp_path / cache.PACK).is_file()
