"""The results format of every benchmark: one CSV file per (problem, method, seed).

``<root>/<problem>/<method>/seed<NNN>.csv``: a first line ``# {json}`` with what the run was
(problem, fingerprint, budget, method, seed, timings, versions, error, and whatever the
experiment adds), then one row per trial: ``trial,cost,value`` (value empty for a trial that
did not complete), plus ``elapsed`` (seconds since the study started, at the trial's end) for
wall-clock problems, ``step,state`` (the last step reached; ``complete``, ``pruned`` or
``fail``) for problems with steps, and ``params`` (JSON) for problems that record them. The
cost of a pruned trial is what it had spent at the step it was pruned at. A cached run counts
(:func:`load_valid`) only if its problem fingerprint matches the current definition and it
has no error; failed runs are written too (the report lists them), and run again by a resumed
session.
"""

from __future__ import annotations

import csv
import functools
from importlib import metadata
import io
import json
import math
from pathlib import Path
import re
import shutil
from typing import Any

from benchmarks.harness.problem import Problem
from benchmarks.harness.runner import Run


def method_dir(method: str) -> str:
    """The folder name of a method (its name; characters other than letters, digits and
    ``._=,+-`` become ``_``, e.g. the ``:`` of ``ours:acquisition=eipu``)."""
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", method)


def run_path(root: Path, problem: str, method: str, seed: int) -> Path:
    return Path(root) / problem / method_dir(method) / f"seed{seed:03d}.csv"


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
        **run.meta,
    }
    columns = ["trial", "cost", "value"]
    if run.elapsed:
        columns.append("elapsed")
    if run.states:
        columns += ["step", "state"]
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
        if run.params:
            row.append(json.dumps(run.params[k]))
        writer.writerow(row)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(buf.getvalue())
    tmp.replace(path)
    return path


def read_run(path: Path, max_trials: int | None = None) -> Run | None:
    """The run in ``path`` (None if it is missing or not a run file). A run with more than
    ``max_trials`` trials (cached under a higher cap) is cut to its first ``max_trials``: runs
    are sequential, so these are the trials a run under the lower cap makes."""
    try:
        text = path.read_text()
    except OSError:
        return None
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
        if row.get("params"):
            run.params.append(json.loads(row["params"]))
    if max_trials is not None and len(run.costs) > max_trials:
        for column in (run.costs, run.values, run.elapsed, run.params, run.steps, run.states):
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
    """Delete the cached runs of ``methods`` (every problem); how many files went."""
    n = 0
    root = Path(root)
    if not root.is_dir():
        return 0
    for problem_dir in root.iterdir():
        for method in methods:
            target = problem_dir / method_dir(method)
            if target.is_dir():
                n += sum(1 for _ in target.glob("*.csv"))
                shutil.rmtree(target)
    return n
