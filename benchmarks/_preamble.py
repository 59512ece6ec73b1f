"""What every benchmark process sets up before numpy or the package loads.

- One BLAS / OpenMP thread (:data:`THREAD_VARIABLES`, read when those libraries load, so
  before numpy is imported): several threads per process on a shared 2-core machine slow the
  benchmarks' small linear algebra (the sensor problem's kriging 20x) and make timings depend
  on the machine's other work. Worker processes inherit the setting through the environment.
- The package measured: a directory on ``PYTHONPATH`` that holds an ``optuna_costbo`` (another
  checkout, or a ``git archive`` of a commit's package) goes before the working directory on
  ``sys.path``, so that its package is the one timed or profiled (``speed --baseline``,
  ``speed profile``, the reads of ``storage``); without one, this checkout's. The benchmarks
  themselves are always this checkout's (``benchmarks`` is imported before the change).

``python -m benchmarks`` (``benchmarks/__main__.py``) calls :func:`apply` before it imports a
study; :func:`forward` runs the former ``python -m benchmarks.<module>`` through it.
"""

from __future__ import annotations

import os
from pathlib import Path
import sys
from typing import NoReturn


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Environment variables that cap the threads of OpenMP, OpenBLAS and MKL; all set to 1."""

LOADED_TOO_EARLY = ("numpy", "optuna_costbo")
"""Modules that must not be loaded when :func:`apply` runs (it could no longer affect them)."""


def pin_threads() -> None:
    """Set every variable of :data:`THREAD_VARIABLES` to 1, for this process if BLAS has not
    loaded yet and for every process it starts (``harness/runner.py`` calls it too, so that
    its worker processes get one thread whoever imports the harness)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"


def apply() -> None:
    """Pin BLAS and OpenMP to one thread and put a package named by ``PYTHONPATH`` first.

    Raises RuntimeError when numpy or optuna_costbo is already imported.
    """
    early = [name for name in LOADED_TOO_EARLY if name in sys.modules]
    if early:
        raise RuntimeError(f"the benchmarks' preamble must run before {early} is imported")
    pin_threads()
    measured = [
        entry
        for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if entry and (Path(entry) / "optuna_costbo").is_dir()
    ]
    sys.path[:0] = measured


def forward(*command: str) -> NoReturn:
    """Replace this process by ``python -m benchmarks COMMAND... ARGS`` (ARGS: this process's
    arguments), so that the former ``python -m benchmarks.<module> ARGS`` runs with
    :func:`apply` applied before numpy loads (it was imported by the module already)."""
    os.execv(sys.executable, [sys.executable, "-m", "benchmarks", *command, *sys.argv[1:]])
