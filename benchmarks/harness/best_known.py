"""The best known value of a problem: its f*, or a better value a stored run found.

A YAHPO problem's f* is the calibration's best known value (a large random search and the
suite's stored runs, ``benchmarks/yahpo_calibrate.py``). The pruning benchmark's runs beat it
on two lcbench instances (7593 by 0.017, 167185 by 0.0026), and :func:`report.score` clamps
a regret below 0 to 0 (meant for the rounding of a polished f*), so those runs all tied at 0
and the differences among them were lost. The regret of a benchmark is taken against the
lower of f* and the best final value of every run stored for it, kept in a committed JSON
table that its ``--update-best-known`` rewrites.

NOTE: the table moves only when a command rewrites it; a report says which value it used and
counts the runs that beat it (then clamped to 0), so a stale table shows.
"""

from __future__ import annotations

from collections.abc import Iterable
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from benchmarks.harness import cache
from benchmarks.harness.problem import Problem


__all__ = ["TOL", "beats", "load", "rescored", "scan", "update", "write"]

TOL = 1e-9
"""A run beats f* when it is lower by more than this (a polished f* is rounded in its last
digits; those runs are scored 0, as before)."""


def _same_function(problem: Problem, path: Path, meta: dict[str, Any]) -> bool:
    """Whether the run at ``path`` (``.../runs/<name>/<method>/seedNNN.csv``) is of ``problem``
    or of a variant of it that changes only the budget (``problem.variant(suffix,
    budget=...)``, as the stopping benchmark's ``-b2`` and ``-cap3``), by its fingerprint."""
    folder = path.parent.parent.name
    if folder == problem.name:
        return problem.accepts(meta.get("fingerprint"))
    budget = meta.get("budget")
    if not isinstance(budget, (int, float)):
        return False
    suffix = folder.removeprefix(f"{problem.name}-")
    return problem.variant(suffix, budget=float(budget)).accepts(meta.get("fingerprint"))


def scan(
    results: Path, problems: Iterable[Problem], tol: float = TOL, *, variants: bool = False
) -> dict[str, dict[str, Any]]:
    """Per problem with an f*: the lowest final value among the valid runs stored under
    ``results/**/runs/<problem>/*/seed*.csv`` (runs of the same definition, by fingerprint;
    with ``variants``, also those of its budget variants under ``runs/<problem>-<suffix>/``),
    and where it is; f* itself unless a run beat it by more than ``tol``. Problems without an
    f* (the live one) are left out."""
    out: dict[str, dict[str, Any]] = {}
    for problem in problems:
        if problem.f_star is None:
            continue
        best, where, n = math.inf, "", 0
        paths = [
            *cache.glob(results, f"**/runs/{problem.name}/*/seed*.csv"),
            *(cache.glob(results, f"**/runs/{problem.name}-*/*/seed*.csv") if variants else ()),
        ]
        for path in sorted(paths):
            run = cache.read_run(path)
            if run is None or run.error or not _same_function(problem, path, run.meta):
                continue
            n += 1
            finite = [v for v in run.values if math.isfinite(v)]
            if finite and min(finite) < best:
                best, where = min(finite), str(path.relative_to(results))
        beaten = best < problem.f_star - tol
        out[problem.name] = {
            "best": best if beaten else problem.f_star,
            "f_star": problem.f_star,
            "runs": n,
            "found_in": where if beaten else "f*",
        }
    return out


def write(path: Path, table: dict[str, dict[str, Any]]) -> None:
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


def update(
    path: Path, results: Path, problems: Iterable[Problem], *, variants: bool = False
) -> list[str]:
    """Rewrite the table at ``path`` from the runs under ``results`` (:func:`scan`); one line
    per problem and the path written, to print."""
    table = scan(results, problems, variants=variants)
    write(path, table)
    width = max((len(name) for name in table), default=0)
    lines = [
        f"{name:<{width}} f* {e['f_star']:.6g}  best {e['best']:.6g}  "
        f"({e['runs']} runs; {e['found_in']})"
        for name, e in table.items()
    ]
    return [*lines, f"wrote {path}"]


def load(path: Path) -> dict[str, dict[str, Any]]:
    """The table at ``path``; empty if there is none."""
    if not path.exists():
        return {}
    table: dict[str, dict[str, Any]] = json.loads(path.read_text())
    return table


def rescored(
    problem: Problem, table: dict[str, dict[str, Any]], key: str | None = None
) -> Problem:
    """``problem`` with f* the lower of its own and the table's best (for scoring only: its
    fingerprint changes, so cached runs are read with the original). ``key``: the table's
    entry to read (None: ``problem.name``; a budget variant reads its base problem's)."""
    entry = table.get(problem.name if key is None else key)
    if problem.f_star is None or entry is None:
        return problem
    return dataclasses.replace(problem, f_star=min(problem.f_star, float(entry["best"])))


def beats(values: Iterable[float], f_star: float | None, tol: float = TOL) -> bool:
    """Whether a run's best value is below ``f_star`` by more than ``tol`` (scored 0)."""
    finite = [v for v in values if math.isfinite(v)]
    return f_star is not None and bool(finite) and min(finite) < f_star - tol
