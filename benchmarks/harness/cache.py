"""The on-disk cache: one CSV per (problem, method, seed).

``<out>/runs/<problem>/<method>/seed<NNN>.csv``: a first line ``# {json}`` with what the run
was (problem fingerprint, budget, method, seed, timings, versions, error), then
``trial,cost,value`` rows (value empty for a trial that did not complete). A cached run
counts only if its problem fingerprint matches the current definition and it has no error.
"""

from __future__ import annotations

import csv
import functools
from importlib import metadata
import io
import json
import math
from pathlib import Path
import shutil
from typing import Any

from benchmarks.suite.methods import MAX_TRIALS
from benchmarks.suite.methods import Run
from benchmarks.suite.problems import Problem


def run_path(out: Path, problem: str, method: str, seed: int) -> Path:
    return out / "runs" / problem / method / f"seed{seed:03d}.csv"


@functools.cache
def _versions() -> dict[str, str]:
    """Installed versions (from the package metadata: nothing is imported)."""
    out: dict[str, str] = {}
    for name in ("optuna-costbo", "optuna", "botorch", "torch"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def write_run(out: Path, problem: Problem, run: Run) -> Path:
    path = run_path(out, run.problem, run.method, run.seed)
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
    buf = io.StringIO()
    buf.write("# " + json.dumps(meta) + "\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["trial", "cost", "value"])
    for k, (c, v) in enumerate(zip(run.costs, run.values, strict=True)):
        writer.writerow([k, f"{c:.10g}", "" if math.isnan(v) else repr(v)])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(buf.getvalue())
    tmp.replace(path)  # atomic: a stopped session never leaves half a file
    return path


def read_run(path: Path) -> Run | None:
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
    if len(run.costs) > MAX_TRIALS:  # cached under a higher cap: the same first trials
        del run.costs[MAX_TRIALS:], run.values[MAX_TRIALS:]
        run.capped = True
    return run


def load_valid(out: Path, problem: Problem, method: str, seed: int) -> Run | None:
    """The cached run if it is there, of the current problem definition, and not failed."""
    run = read_run(run_path(out, problem.name, method, seed))
    if run is None or run.error or run.meta.get("fingerprint") != problem.fingerprint:
        return None
    return run


def discard(out: Path, methods: list[str]) -> int:
    """Delete the cached runs of ``methods`` (every problem); how many files went."""
    n = 0
    runs = out / "runs"
    if not runs.is_dir():
        return 0
    for problem_dir in runs.iterdir():
        for method in methods:
            target = problem_dir / method
            if target.is_dir():
                n += sum(1 for _ in target.glob("*.csv"))
                shutil.rmtree(target)
    return n
