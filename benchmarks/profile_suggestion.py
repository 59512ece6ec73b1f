"""Where one suggestion of the default sampler spends its time, phase by phase.

For each dimension D and number of completed trials n, the study of ``suggest_speed.py``
(random points of its cost-varying test function) gets suggestions from
``CostRolloutSampler(acquisition="rollout")``, each told its value before the next: two to
warm up (warm starts as in a real run), ``--repeats`` timed (CPU seconds, one BLAS thread)
and as many under a sampling profiler. Means, not medians: every 5th fit of a model adds
random restarts, and the default 5 repeats hold one such suggestion each.

The profiler reads the running code (nothing in the package is replaced, so any version of
it is measured alike): every 0.5 ms of CPU time (SIGPROF) it looks at the Python stack and
charges the CPU time since its last look to every phase whose function is on the stack. A
look delayed by a long call into numpy or LAPACK is charged in full, so numpy-heavy and
Python-heavy phases are measured alike (a deterministic profiler slows the Python-heavy
ones several times more). "Sampler glue" is the rest: Optuna's ``ask`` and
``suggest_float``, the study read, the codec, the strategy's own code.

    python -m benchmarks speed profile [--dims 3 5 10] [--trials 50 200 500 1000]

Another checkout of the package is profiled with ``PYTHONPATH=<its root>`` in front (e.g. the
commit before a change, exported with ``git archive``; ``benchmarks/_preamble.py``). POSIX
only (SIGPROF).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
import signal
import statistics
import time
from types import CodeType
from types import FrameType

import numpy as np
import optuna

from benchmarks.suggest_speed import make_study
from benchmarks.suggest_speed import test_function
import optuna_costbo
from optuna_costbo import CostRolloutSampler


optuna.logging.set_verbosity(optuna.logging.ERROR)

Site = tuple[str, str, str | None]
"""(file name, function name, calling function or None for every caller)."""

#: Phases: a name and the functions whose time (on the stack) it is. A function a version of
#: the package lacks counts 0. Indented names are parts of the phase above them.
PHASES: list[tuple[str, list[Site]]] = [
    ("GP fit, objective", [("models.py", "_objective_model", None)]),
    ("GP fit, log cost", [("models.py", "_cost_model", None)]),
    ("shared screen (predictions at the pool)", [("screening.py", "screen", None)]),
    (
        "maximizers of EI, EIpu, EI-cool",
        [
            ("strategies.py", "maximize", None),
            ("strategies.py", "maximize_each", None),
            ("optimize.py", "maximize", "choose"),
        ],
    ),
    ("  of which screening, value-only calls", [("ei.py", "__call__", "values_of")]),
    (
        "  of which L-BFGS-B",
        [
            ("optimize.py", "_lbfgsb", "maximize_acquisition"),
            ("lbfgsb.py", "lbfgsb_runs", "_maximize_columns"),
            ("optimize.py", "lbfgsb_runs", "maximize"),
        ],
    ),
    ("rollout (first actions, scoring, polish)", [("rollout.py", "rollout_choice", None)]),
    (
        "  of which its pool's predictions",
        [
            ("model.py", "predict", "rollout_choice"),
            ("cost_model.py", "cost", "rollout_choice"),
        ],
    ),
    (
        "  of which scoring (Lambda_h)",
        [
            ("rollout.py", "rollout_values_on", None),
            ("scoring.py", "scorer", None),
            ("rollout_values.py", "rollout_values", "score"),
        ],
    ),
    (
        "  of which polish of the finalists",
        [
            ("optimize.py", "local_maximize", "rollout_choice"),
            ("lbfgsb.py", "local_maximize", "rollout_choice"),
            ("optimize.py", "lbfgsb_runs", "rollout_choice"),
        ],
    ),
]
_TOP_LEVEL = [name for name, _ in PHASES if not name.startswith(" ")]
_WHOLE = "suggestion, mean (unprofiled)"
_MEDIAN = "suggestion, median (unprofiled)"


class _PhaseSampler:
    """CPU seconds charged to each phase by stack samples (see the module docstring)."""

    interval = 0.0005

    def __init__(self) -> None:
        self.samples: list[tuple[float, tuple[CodeType, ...]]] = []  # (seconds, stack)
        self.last = 0.0

    def __enter__(self) -> _PhaseSampler:
        self.last = time.process_time()
        signal.signal(signal.SIGPROF, self._sample)
        signal.setitimer(signal.ITIMER_PROF, self.interval, self.interval)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0.0, 0.0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def _sample(self, signum: int, frame: FrameType | None) -> None:
        weight = time.process_time() - self.last
        codes = []
        while frame is not None:
            codes.append(frame.f_code)
            frame = frame.f_back
        self.samples.append((weight, tuple(codes)))
        self.last = time.process_time()  # the handler's own time is charged to nothing

    def seconds(self) -> tuple[dict[str, float], float]:
        """CPU seconds of each phase, and of all samples."""
        names: dict[CodeType, tuple[str, str]] = {}
        out = dict.fromkeys([name for name, _ in PHASES], 0.0)
        for weight, codes in self.samples:
            stack = [
                names.setdefault(c, (Path(c.co_filename).name, c.co_name)) for c in codes
            ]  # (file name, function), innermost first
            for name, sites in PHASES:
                if any(_on_stack(stack, site) for site in sites):
                    out[name] += weight
        return out, sum(weight for weight, _ in self.samples)


def _on_stack(stack: list[tuple[str, str]], site: Site) -> bool:
    file, function, caller = site
    for i, (f, fn) in enumerate(stack):
        if fn == function and f == file:
            if caller is None or (i + 1 < len(stack) and stack[i + 1][1] == caller):
                return True
    return False


def _suggest(study: optuna.Study, dim: int) -> None:
    trial = study.ask()
    x = np.array([trial.suggest_float(f"x{i}", -1.0, 1.0) for i in range(dim)])
    value, cost = test_function(x)
    trial.set_user_attr("cost", cost)
    study.tell(trial, value)


def profile_cell(dim: int, n: int, repeats: int) -> dict[str, float]:
    """Milliseconds per suggestion of each phase, the glue and the whole, on one cell."""
    sampler = CostRolloutSampler(1e12, acquisition="rollout", n_startup_trials=0, seed=0)
    study = make_study(sampler, dim, n, seed=dim * 1000 + n)
    for _ in range(2):
        _suggest(study, dim)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        _suggest(study, dim)
        times.append(time.process_time() - start)
    with _PhaseSampler() as sampler:
        for _ in range(repeats):
            _suggest(study, dim)
    seconds, total = sampler.seconds()
    whole = statistics.fmean(times)
    scale = whole / (total / repeats)  # to the unprofiled times
    out = {name: seconds[name] / repeats * scale for name, _ in PHASES}
    out["sampler glue, the rest"] = whole - sum(out[name] for name in _TOP_LEVEL)
    out[_WHOLE] = whole
    out[_MEDIAN] = statistics.median(times)
    return {k: v * 1e3 for k, v in out.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--trials", type=int, nargs="+", default=[50, 200, 500, 1000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--title", default="", help="a line written above the table")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "profile_suggestion.md"
    )
    args = parser.parse_args(argv)
    _suggest(make_study(CostRolloutSampler(1e12, n_startup_trials=0, seed=0), 2, 5, 0), 2)
    cells = {}
    for dim in args.dims:
        for n in args.trials:
            cells[(dim, n)] = profile_cell(dim, n, args.repeats)
            print(f"D={dim} n={n}: {cells[(dim, n)][_WHOLE]:.1f} ms", flush=True)
    rows = [name for name, _ in PHASES] + ["sampler glue, the rest", _WHOLE, _MEDIAN]
    header = "| phase, CPU ms per suggestion | " + " | ".join(f"D={d}, n={n}" for d, n in cells)
    lines = [header + " |", "|---|" + "---|" * len(cells)]
    for row in rows:
        cells_ms = " | ".join(f"{cells[c][row]:.1f}" for c in cells)
        label = row.replace("  of which", "&nbsp;&nbsp;of which")
        lines.append(f"| {label} | {cells_ms} |")
    if args.title:
        lines = [args.title, "", *lines]
    table = "\n".join(lines)
    print()
    print(f"package: {Path(optuna_costbo.__file__).parent}")
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table + "\n")


if __name__ == "__main__":  # the former way, python -m benchmarks.profile_suggestion
    from benchmarks import _preamble

    _preamble.forward("speed", "profile")
