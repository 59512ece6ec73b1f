"""The results format of every benchmark: one CSV file per (problem, method, seed).

``<root>/<problem>/<method>/seed<NNN>.csv``: a first line ``# {json}`` with what the run was
(problem, fingerprint, budget, method, seed, timings, versions, error, and whatever the
experiment adds), then one row per trial: ``trial,cost,value`` (value empty for a trial that
did not complete), plus ``elapsed`` (seconds since the study started, at the trial's end) for
wall-clock problems, ``step,state`` (the last step reached; ``complete``, ``pruned`` or
``fail``) for problems with steps, ``true_value,best_trial,best_true,recommended,
recommended_true`` for noisy problems (the noise-free value of the trial's configuration,
then the numbers of ``study.best_trial`` and of the recommendation once the trial finished,
-1 for none, with their noise-free values; ``runner.Run``), ``objectives`` (JSON list of
the m values, empty for a trial that did not complete; the ``value`` column is then empty)
for multi-objective problems, and ``params`` (JSON) for problems that record them. Columns
are only added: a reader takes what a file has, so the runs written before a column existed
load as they were. The
cost of a pruned trial is what it had spent at the step it was pruned at. A cached run counts
(:func:`load_valid`) only if its problem fingerprint matches the current definition and it
has no error; failed runs are written too (the report lists them), and run again by a resumed
session.

Committed runs live in packs: ``<folder>/runs.tar.xz``, a tar archive of run files at their
paths relative to ``<folder>`` (``runs/<problem>/<method>/seed000.csv``, or
``<tag>/runs/...`` for a folder of several experiments), compressed with xz. A solid xz
archive, because the runs of a folder (and of related folders) repeat each other: per-file
compression (zip) left them twice as large. A run is read from its loose file if there is
one, else from the nearest pack above it that holds it (:func:`read_run`, :func:`glob`);
runs are written loose (:func:`write_run`); :func:`pack` folds the loose runs of a folder into
its pack, deterministically (entries sorted, fixed timestamps and owners: the same runs give
the same bytes); ``tar -xJf runs.tar.xz`` unpacks a pack into loose files.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from collections.abc import Sequence
import csv
import functools
from importlib import metadata
import io
import json
import lzma
import math
import os
from pathlib import Path
import re
import shutil
import sys
import tarfile
from typing import Any

from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import Run


def method_dir(method: str) -> str:
    """The folder name of a method (its name; characters other than letters, digits and
    ``._=,+-`` become ``_``, e.g. the ``:`` of ``ours:acquisition=eipu``)."""
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", method)


def run_path(root: Path, problem: str, method: str, seed: int) -> Path:
    return Path(root) / problem / method_dir(method) / f"seed{seed:03d}.csv"


PACK = "runs.tar.xz"
RUN_FILE = re.compile(r"seed\d+\.csv")  # the name of a run file (:func:`run_path`)
_PRESET = 9  # xz's preset: its 64 MB window spans a folder's runs (preset 6: 8 MB, 1.5x larger)


_PACKS: dict[Path, tuple[tuple[int, int, int], dict[str, bytes]]] = {}  # pack -> (stamp, entries)


def _entries(pack: Path) -> dict[str, bytes]:
    """The entries of ``pack`` (name -> bytes; none if it does not exist), read once per
    version of the file (its inode, size and mtime)."""
    pack = Path(os.path.abspath(pack))
    try:
        st = pack.stat()
    except OSError:
        return {}
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _PACKS.get(pack)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    entries: dict[str, bytes] = {}
    with tarfile.open(pack, "r:xz") as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                entries[member.name] = handle.read()
    _PACKS[pack] = (stamp, entries)
    return entries


def _packs_above(path: Path) -> Iterable[Path]:
    """The packs in the folders holding ``path``, nearest first (``path`` itself included)."""
    path = Path(os.path.abspath(path))
    for folder in (path, *path.parents):
        if (folder / PACK).is_file():
            yield folder / PACK


def _packed(path: Path) -> bytes | None:
    """The bytes of run file ``path`` in the nearest pack above it that holds it."""
    for pack in _packs_above(Path(path).parent):
        name = Path(os.path.abspath(path)).relative_to(pack.parent).as_posix()
        data = _entries(pack).get(name)
        if data is not None:
            return data
    return None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A regular expression for the relative paths ``Path.glob(pattern)`` matches: ``**`` for
    any number of folders, ``*`` and ``?`` within a name, every other character itself."""
    parts = []
    for part in pattern.split("/"):
        if part == "**":
            parts.append("(?:[^/]+/)*")
            continue
        body = "".join(
            "[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch) for ch in part
        )
        parts.append(body + "/")
    return re.compile("".join(parts).removesuffix("/"))


def glob(root: Path, pattern: str) -> list[Path]:
    """The run files under ``root`` whose path relative to it matches ``pattern`` (as
    ``Path.glob`` does; ``*``, ``?`` and ``**`` only): the loose ones and those in the packs
    above, at or below ``root``, each path once, sorted."""
    root = Path(root)
    found = {p for p in root.glob(pattern) if p.is_file()}
    regex = _glob_regex(pattern)
    absolute = Path(os.path.abspath(root))
    packs = [*_packs_above(root), *(root.rglob(PACK) if root.is_dir() else ())]
    for pack in dict.fromkeys(Path(os.path.abspath(p)) for p in packs):
        for name in _entries(pack):
            path = pack.parent / name
            if absolute in path.parents and regex.fullmatch(path.relative_to(absolute).as_posix()):
                found.add(root / path.relative_to(absolute))
    return sorted(found)


def _write_pack(pack: Path, entries: dict[str, bytes]) -> None:
    """Write ``entries`` (name -> bytes) to ``pack`` (atomically), or delete the pack if there
    are none. Sorted entries, fixed timestamps and owners: the same entries, the same bytes."""
    if not entries:
        pack.unlink(missing_ok=True)
        _PACKS.pop(Path(os.path.abspath(pack)), None)
        return
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(entries[name]), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(entries[name]))
    tmp = pack.with_name(pack.name + ".tmp")
    tmp.write_bytes(lzma.compress(buf.getvalue(), preset=_PRESET))
    tmp.replace(pack)
    _PACKS.pop(Path(os.path.abspath(pack)), None)  # a reused inode must not look unchanged


def _loose_runs(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("seed*.csv") if RUN_FILE.fullmatch(p.name))


def _remove_empty_folders(paths: Iterable[Path], top: Path) -> None:
    """Remove the folders of ``paths`` below ``top`` that are left empty, deepest first."""
    folders = {q for p in paths for q in p.parents if top in q.parents}
    for folder in sorted(folders, key=lambda q: len(q.parts), reverse=True):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def pack(root: Path) -> int:
    """Fold the loose run files under ``root`` into packs and delete them; how many were
    folded. A run goes into the pack of the nearest folder between it and ``root`` that has
    one, else into ``root``'s (made if missing); it replaces the entry of the same path."""
    root = Path(root)
    groups: dict[Path, list[Path]] = {}
    for path in _loose_runs(root):
        owner = next(
            (f for f in path.parents if f == root or (root in f.parents and (f / PACK).is_file())),
            root,
        )
        groups.setdefault(owner, []).append(path)
    for folder, paths in sorted(groups.items()):
        entries = dict(_entries(folder / PACK))
        entries.update((p.relative_to(folder).as_posix(), p.read_bytes()) for p in paths)
        _write_pack(folder / PACK, entries)
        for path in paths:
            path.unlink()
        _remove_empty_folders(paths, folder)
    return sum(len(paths) for paths in groups.values())


@functools.cache
def _versions() -> dict[str, str]:
    """Installed versions (from the package metadata: nothing is imported)."""
    out: dict[str, str] = {}
    for name in ("optuna-costbo", "optuna", "botorch", "torch", "HEBO", "pymoo", "gpytorch"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


NOISY_COLUMNS = ["true_value", "best_trial", "best_true", "recommended", "recommended_true"]
"""The columns of a noisy problem's run; ``best_true`` and ``recommended_true`` are written
for the reader's sake (``Run.incumbent_true`` recomputes them from the others)."""


def _number(x: float) -> str:
    return "" if math.isnan(x) else repr(x)


def _objectives_text(values: list[float]) -> str:
    """A trial's objective values as a JSON list (repr: round-trips), empty if any is nan."""
    if any(math.isnan(v) for v in values):
        return ""
    return "[" + ", ".join(repr(float(v)) for v in values) + "]"


def write_run(root: Path, problem: Problem, run: Run) -> Path:
    """Write ``run`` (atomically: a stopped session never leaves half a file)."""
    path = run_path(root, run.problem, run.method, run.seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "problem": run.problem,
        "fingerprint": problem.fingerprint,
        "budget": problem.budget,
        "method": run.method,
        "seed": run.seed,
        "run_s": round(run.run_s, 3),
        "suggest_s": round(run.suggest_s, 3),
        "n_warnings": run.n_warnings,
        "capped": run.capped,
        "error": run.error,
        "versions": _versions(),
        **({"reference_point": list(problem.reference_point)} if problem.multi else {}),
        **run.meta,
    }
    columns = ["trial", "cost", "value"]
    if run.elapsed:
        columns.append("elapsed")
    if run.states:
        columns += ["step", "state"]
    best_true = run.incumbent_true("best_trial")  # (n,), empty without noise
    recommended_true = run.incumbent_true("recommended")
    if run.true_values:
        columns += NOISY_COLUMNS
    if run.objectives:
        columns.append("objectives")
    if run.params:
        columns.append("params")
    buf = io.StringIO()
    buf.write("# " + json.dumps(meta) + "\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for k, (c, v) in enumerate(zip(run.costs, run.values, strict=True)):
        row: list[Any] = [k, f"{c:.10g}", "" if math.isnan(v) else repr(v)]
        if run.elapsed:
            row.append(f"{run.elapsed[k]:.6f}")
        if run.states:
            row += [run.steps[k], run.states[k]]
        if run.true_values:
            row += [
                _number(run.true_values[k]),
                run.best_trials[k],
                _number(best_true[k]),
                run.recommended[k],
                _number(recommended_true[k]),
            ]
        if run.objectives:
            row.append(_objectives_text(run.objectives[k]))
        if run.params:
            row.append(json.dumps(run.params[k]))
        writer.writerow(row)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(buf.getvalue())
    tmp.replace(path)
    return path


def read_run(path: Path, max_trials: int | None = None) -> Run | None:
    """The run in ``path``, from the loose file or else from a pack (None if it is in neither
    or not a run file). A run with more than
    ``max_trials`` trials (cached under a higher cap) is cut to its first ``max_trials``: runs
    are sequential, so these are the trials a run under the lower cap makes."""
    try:
        text = Path(path).read_text()
    except OSError:
        data = _packed(path)
        if data is None:
            return None
        text = data.decode()
    first, _, body = text.partition("\n")
    if not first.startswith("# "):
        return None
    meta: dict[str, Any] = json.loads(first[2:])
    run = Run(meta["problem"], meta["method"], int(meta["seed"]))
    run.run_s = float(meta.get("run_s", 0.0))
    run.suggest_s = float(meta.get("suggest_s", 0.0))
    run.n_warnings = int(meta.get("n_warnings", 0))
    run.capped = bool(meta.get("capped", False))
    run.error = str(meta.get("error", ""))
    run.meta = meta
    for row in csv.DictReader(io.StringIO(body)):
        run.costs.append(float(row["cost"]))
        run.values.append(float(row["value"]) if row["value"] else math.nan)
        if row.get("elapsed"):
            run.elapsed.append(float(row["elapsed"]))
        if row.get("state"):
            run.steps.append(int(row["step"]))
            run.states.append(row["state"])
        if row.get("best_trial"):
            run.true_values.append(float(row["true_value"]) if row["true_value"] else math.nan)
            run.best_trials.append(int(row["best_trial"]))
            run.recommended.append(int(row["recommended"]))
        if "objectives" in row:
            text = row["objectives"]
            m = len(meta.get("reference_point", ())) or (len(json.loads(text)) if text else 1)
            run.objectives.append(json.loads(text) if text else [math.nan] * m)
        if row.get("params"):
            run.params.append(json.loads(row["params"]))
    if max_trials is not None and len(run.costs) > max_trials:
        columns: tuple[list[Any], ...] = (
            run.costs,
            run.values,
            run.elapsed,
            run.params,
            run.steps,
            run.states,
            run.true_values,
            run.best_trials,
            run.recommended,
            run.objectives,
        )
        for column in columns:
            del column[max_trials:]
        run.capped = True
    return run


def load_valid(root: Path, problem: Problem, method: str, seed: int) -> Run | None:
    """The cached run if it is there, of the current problem definition, not failed, and not
    cut short by a lower trial cap than the problem's (:func:`cut_short`)."""
    run = read_run(run_path(root, problem.name, method, seed), problem.max_trials)
    if run is None or run.error or not problem.accepts(run.meta.get("fingerprint")):
        return None
    return None if cut_short(run, problem) else run


def cut_short(run: Run, problem: Problem) -> bool:
    """Whether ``run`` stopped at a trial cap lower than ``problem.max_trials`` with budget
    left: under the problem's cap it would have gone on, so it is not a run of this setting."""
    return run.capped and len(run.costs) < problem.max_trials


def load_all(
    root: Path, problem: Problem, methods: list[str], seeds: list[int]
) -> tuple[dict[tuple[str, int], Run], list[Run], int]:
    """The valid cached runs ``(method, seed) -> Run``, the failed ones, and how many files
    hold another definition of the problem (another fingerprint: another budget, ...) or a run
    cut short by a lower trial cap (:func:`cut_short`)."""
    valid: dict[tuple[str, int], Run] = {}
    failed: list[Run] = []
    other = 0
    for m in methods:
        for s in seeds:
            run = read_run(run_path(root, problem.name, m, s), problem.max_trials)
            if run is None:
                continue
            if not problem.accepts(run.meta.get("fingerprint")) or cut_short(run, problem):
                other += 1
            elif run.error:
                failed.append(run)
            else:
                valid[(m, s)] = run
    return valid, failed, other


def discard(root: Path, methods: list[str]) -> int:
    """Delete the cached runs of ``methods`` (every problem), loose and packed; how many runs
    went."""
    root = Path(root)
    folders = {method_dir(m) for m in methods}
    gone: set[Path] = set()
    if root.is_dir():
        for problem_dir in root.iterdir():
            for name in folders:
                target = problem_dir / name
                if target.is_dir():
                    gone.update(target.glob("*.csv"))
                    shutil.rmtree(target)
    absolute = Path(os.path.abspath(root))
    packs = [*_packs_above(root), *(root.rglob(PACK) if root.is_dir() else ())]
    for pack_file in dict.fromkeys(Path(os.path.abspath(p)) for p in packs):
        entries = _entries(pack_file)
        kept = {}
        for name, data in entries.items():
            path = pack_file.parent / name
            parts = path.relative_to(absolute).parts if absolute in path.parents else ()
            if len(parts) == 3 and parts[1] in folders:
                gone.add(root / Path(*parts))
            else:
                kept[name] = data
        if len(kept) < len(entries):
            _write_pack(pack_file, kept)
    return len(gone)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.harness.cache", description="The run caches' packs."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fold = commands.add_parser("pack", help=pack.__doc__.splitlines()[0] if pack.__doc__ else "")
    fold.add_argument("folders", type=Path, nargs="+")
    args = parser.parse_args(argv)
    for folder in args.folders:
        n = pack(folder)
        packs = sorted(folder.rglob(PACK))
        held = sum(len(_entries(p)) for p in packs)
        size = sum(p.stat().st_size for p in packs) / 1e6
        print(f"{folder}: {n} loose runs folded; {held} runs in {len(packs)} packs, {size:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
