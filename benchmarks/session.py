"""A resumable benchmark session: runs whose CSVs are rewritten after every finished run.

:func:`run_session` stores its settings (budget, problem, ...) in ``<prefix>_settings.json``
and with ``resume`` runs only the (method, seed) pairs the CSVs do not hold yet;
:func:`saved_budget` reads the budget back (for ``--report-only``).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
import json
from pathlib import Path
from typing import Any

from results_io import read_csvs
from results_io import write_csvs
from runner import SAFETY_TRIALS
from runner import Problem
from runner import Run
from runner import execute
from runner import group_runs
from runner import print_progress


def run_session(
    tasks: Sequence[tuple[str, int]],
    budget: float,
    problem: Problem | Callable[[], Problem],
    prefix: Path,
    *,
    settings: dict[str, Any],
    jobs: int,
    resume: bool = False,
    fresh_process: bool = False,
    preload: Sequence[str] = (),
    safety_trials: int = SAFETY_TRIALS,
    on_run: Callable[[Run], None] | None = None,
) -> tuple[dict[str, list[Run]], float]:
    """:func:`execute` with the CSVs rewritten after every finished run, so that a session
    that is stopped keeps what it ran, and ``resume`` to skip the (method, seed) pairs the
    CSVs already hold (a crashed run is run again). ``settings`` (budget, problem, ...) are
    stored in ``<prefix>_settings.json``; resuming with different settings is refused.
    ``on_run``: called after each finished run (e.g. to append its parameters to a file)."""
    settings = {**settings, "budget": budget}
    settings_path = Path(f"{prefix}_settings.json")
    done: list[Run] = []
    if resume and Path(f"{prefix}_run_summary.csv").is_file():
        if settings_path.is_file():
            saved = json.loads(settings_path.read_text())
            if saved != json.loads(json.dumps(settings)):
                raise SystemExit(
                    f"--resume: {settings_path} has {saved}, this invocation {settings}; "
                    "use the same settings or another --out"
                )
        done = [r for rs in read_csvs(prefix).values() for r in rs if not r.error]
    settings_path.write_text(json.dumps(settings, indent=1) + "\n")
    skip = {(r.method, r.seed) for r in done}
    todo = [t for t in tasks if t not in skip]
    if skip:
        print(f"resuming: {len(skip)} runs already in {prefix}_*.csv, {len(todo)} to go")
    results = list(done)

    def on_done(k: int, n: int, elapsed: float, r: Run) -> None:
        print_progress(k, n, elapsed, r)
        results.append(r)
        write_csvs(group_runs(results), budget, prefix)
        if on_run is not None:
            on_run(r)

    if not todo:
        return group_runs(results), 0.0
    _, total_s = execute(
        todo,
        budget,
        problem,
        jobs=jobs,
        fresh_process=fresh_process,
        preload=preload,
        safety_trials=safety_trials,
        on_done=on_done,
    )
    return group_runs(results), total_s


def saved_budget(prefix: Path) -> float | None:
    """The budget stored by :func:`run_session` for ``prefix`` (for ``--report-only``)."""
    path = Path(f"{prefix}_settings.json")
    if not path.is_file():
        return None
    return float(json.loads(path.read_text())["budget"])
