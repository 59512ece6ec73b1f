"""Median suggestion time of CostRolloutSampler against Optuna's GPSampler, side by side.

For each dimension D and number of completed trials n, every sampler gets the same n trials
(random points of a cost-varying test function, added with ``add_trial``), then makes
one cold suggestion (a fresh sampler: a new worker or a resumed study) and then ``--repeats``
consecutive suggestions, each told its value before the next, as in a real run: warm starts
from earlier fits are used the way each sampler normally uses them. The samplers take turns,
one suggestion each, so that a change of the machine's load falls on all of them alike.
Reported: the median (and mean) seconds of one warm ``ask`` plus all ``suggest_*`` calls, and
the cold one.
Single-threaded: BLAS by the entry point's preamble, torch by ``torch.set_num_threads(1)``.

    pip install torch==2.13.0     # for GPSampler
    python -m benchmarks speed [--dims 2 5 10] [--trials 25 50 100 200 500 1000]

``--space conditional`` times a define-by-run space instead (a categorical ``kind`` of three
choices first, then x0 and x1 always and the other D - 2 coordinates only for two of the kinds,
as a booster's tree knobs): D is then the number of floats, plus a one-hot block of 3 columns.

``--runs R`` times every cell R times over (fresh studies in the same states): the tables give
the median over the runs, and a last table each ratio's median and range over them. One run's
per-cell ratio at 25-100 trials moved by 30-40 % between runs of the same code here.

``--objectives 2`` times a 2-objective study (issue 52): the test function's value and
sum((x - 0.5)^2), both minimized, the same cost; with ``--samplers "rollout h=2" GPSampler`` the
package's default (whose multi-objective form is the cooled EHVI per unit cost for every
horizon) against GPSampler's log EHVI, e.g. ``--dims 5 --trials 200 --objectives 2``.

``--clock cpu`` times CPU seconds of this process instead of wall-clock seconds (for a machine
shared with other work). ``--baseline DIR`` also times the package found in ``DIR`` (another
checkout, e.g. a ``git worktree`` of the commit before a change) in the same run: for each cell
a child process (``--child``, with ``DIR`` on its ``PYTHONPATH``: ``benchmarks/_preamble.py``)
times the baseline's samplers and another child the current ones, and the table
gets a "current / baseline" column per sampler; with ``--runs R`` each cell has R such rounds,
alternating which child goes first, and each time is the median over the rounds (the
machine's speed can drift between the two children of one round).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Sequence
import functools
import json
import math
import os
from pathlib import Path
import statistics
import subprocess
import sys
import time

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution

import optuna_costbo
from optuna_costbo import CostRolloutSampler


ROOT = Path(__file__).resolve().parents[1]
"""The checkout whose ``benchmarks`` the ``--child`` processes run."""


optuna.logging.set_verbosity(optuna.logging.ERROR)

HORIZONS = (1, 2, 4)


def test_function(x: np.ndarray) -> tuple[float, float]:
    """Styblinski-Tang-like objective on [-1, 1]^D and a cost growing with sum(x) (~20x)."""
    z = 2.5 * x
    value = float(np.sum(z**4 - 16 * z**2 + 5 * z) / 2.0)
    cost = float(math.exp(1.5 * np.mean(x) + 1.5))
    return value, cost


_KINDS = ("linear", "tree", "dart")

# NOTE: "--space conditional" (passed to the children of --baseline through the environment).
_CONDITIONAL = os.environ.get("COSTBO_SPEED_SPACE") == "conditional"


# NOTE: "--objectives 2" (passed to the children of --baseline through the environment).
_OBJECTIVES = int(os.environ.get("COSTBO_SPEED_OBJECTIVES", "1"))


def _values(params: dict[str, object], dim: int) -> tuple[list[float], float]:
    """The objective values of a trial (``--objectives``; the second is sum((x - 0.5)^2)) and
    its cost."""
    value, cost = _point(params, dim)
    if _OBJECTIVES == 1:
        return [value], cost
    x = np.array([float(params.get(f"x{i}", 0.0)) for i in range(dim)])  # type: ignore[arg-type]
    return [value, float(np.sum((x - 0.5) ** 2))], cost


def _point(params: dict[str, object], dim: int) -> tuple[float, float]:
    """The test function at a trial's parameters (inactive coordinates at 0), plus an offset
    per kind in the conditional space."""
    x = np.array([float(params.get(f"x{i}", 0.0)) for i in range(dim)])  # type: ignore[arg-type]
    value, cost = test_function(x)
    if "kind" in params:
        value += 3.0 * _KINDS.index(str(params["kind"]))
    return value, cost


def make_study(sampler: optuna.samplers.BaseSampler, dim: int, n: int, seed: int) -> optuna.Study:
    rng = np.random.default_rng(seed)
    study = optuna.create_study(sampler=sampler, directions=["minimize"] * _OBJECTIVES)
    dists: dict[str, BaseDistribution] = {
        f"x{i}": FloatDistribution(-1.0, 1.0) for i in range(dim)
    }
    for _ in range(n):
        x = rng.uniform(-1.0, 1.0, dim)
        params: dict[str, object] = {f"x{i}": float(x[i]) for i in range(dim)}
        if _CONDITIONAL:
            params["kind"] = _KINDS[int(rng.integers(3))]
            if params["kind"] == "linear":
                params = {k: v for k, v in params.items() if k in ("kind", "x0", "x1")}
        values, cost = _values(params, dim)
        study.add_trial(
            optuna.create_trial(
                params=params,
                distributions={
                    k: CategoricalDistribution(_KINDS) if k == "kind" else dists[k] for k in params
                },
                values=values,
                user_attrs={"cost": cost},
            )
        )
    return study


def _ask(trial: optuna.Trial, dim: int) -> dict[str, object]:
    """The trial's parameters, asked as the space says (define-by-run when conditional)."""
    params: dict[str, object] = {}
    if _CONDITIONAL:
        params["kind"] = trial.suggest_categorical("kind", _KINDS)
    for i in range(dim):
        if i < 2 or params.get("kind") != "linear":
            params[f"x{i}"] = trial.suggest_float(f"x{i}", -1.0, 1.0)
    return params


# NOTE: "--clock cpu" (also passed to the children of --baseline through the environment)
# times this process's CPU seconds instead of wall-clock ones: on a machine shared with other
# work, wall-clock times of two runs differ by the load each met, CPU times much less.
_CPU_CLOCK = os.environ.get("COSTBO_SPEED_CLOCK") == "cpu"


def _now() -> float:
    return time.process_time() if _CPU_CLOCK else time.perf_counter()


def time_suggestions(study: optuna.Study, dim: int, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = _now()
        trial = study.ask()
        params = _ask(trial, dim)
        times.append(_now() - start)
        values, cost = _values(params, dim)
        trial.set_user_attr("cost", cost)
        study.tell(trial, values[0] if len(values) == 1 else values)
    return times


def samplers() -> dict[str, Callable[[], optuna.samplers.BaseSampler]]:
    out: dict[str, Callable[[], optuna.samplers.BaseSampler]] = {
        "costbo EI": lambda: CostRolloutSampler(
            1e12, acquisition="ei", n_startup_trials=0, seed=0
        ),
        "costbo EIpu": lambda: CostRolloutSampler(
            1e12, acquisition="eipu", n_startup_trials=0, seed=0
        ),
    }
    for h in HORIZONS:
        out[f"costbo rollout h={h}"] = functools.partial(
            CostRolloutSampler, 1e12, acquisition="rollout", horizon=h, n_startup_trials=0, seed=0
        )
    try:
        import torch

        torch.set_num_threads(1)
        out["optuna GPSampler"] = lambda: optuna.samplers.GPSampler(seed=0, n_startup_trials=0)
    except ImportError:
        print("torch is not installed: GPSampler is left out (pip install torch==2.13.0)")
    return out


def _cell(
    makers: dict[str, Callable[[], optuna.samplers.BaseSampler]], dim: int, n: int, repeats: int
) -> dict[str, tuple[float, float, float]]:
    """(median, mean, first) seconds per suggestion of each sampler on one (D, n) cell.

    The first suggestion of a fresh sampler is cold (no warm start: a new process joining or
    resuming the study); median and mean are over the ``repeats`` warm ones after it. The
    samplers take turns, one suggestion each, so that a change of the machine's load during
    the cell falls on all of them alike.
    """
    studies = {
        name: make_study(make(), dim, n, seed=dim * 1000 + n) for name, make in makers.items()
    }
    first = {name: time_suggestions(study, dim, 1)[0] for name, study in studies.items()}
    times: dict[str, list[float]] = {name: [] for name in studies}
    for _ in range(repeats):
        for name, study in studies.items():
            times[name] += time_suggestions(study, dim, 1)
    return {
        name: (statistics.median(t), statistics.fmean(t), first[name]) for name, t in times.items()
    }


def _child(
    dim: int, n: int, repeats: int, baseline: str | None, words: list[str] | None = None
) -> dict[str, list[float]]:
    """One cell timed in a fresh process importing the package from ``baseline`` (or here),
    of the samplers whose names contain one of ``words`` (all if None)."""
    env = dict(os.environ)
    if words:
        env["SUGGEST_SPEED_SAMPLERS"] = "\t".join(words)
    if baseline is not None:
        env["PYTHONPATH"] = baseline + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "benchmarks", "speed", "--child", str(dim), str(n), str(repeats)]
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    result: dict[str, list[float]] = json.loads(out.strip().splitlines()[-1])
    return result


def _median_of(results: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Each sampler's (median, mean, first) seconds, each the median over the children."""
    return {
        name: [statistics.median(r[name][i] for r in results) for i in range(3)]
        for name in results[0]
    }


def compare(args: argparse.Namespace) -> None:
    """The costbo samplers of this checkout against those of ``args.baseline``, cell by cell."""
    rows = []
    for dim in args.dims:
        for n in args.trials:
            # NOTE: the two children of a round run one after the other, so a drift of the
            # machine's speed between them (measured here: up to 40 % within a minute) falls on
            # one of them; with --runs R the rounds alternate which child goes first, and each
            # time is the median over the rounds.
            bases, curs = [], []
            for r in range(max(args.runs, 1)):
                order = (str(args.baseline), None) if r % 2 == 0 else (None, str(args.baseline))
                for where in order:
                    out = _child(dim, n, args.repeats, where, args.samplers)
                    (bases if where is not None else curs).append(out)
            base, cur = _median_of(bases), _median_of(curs)
            rows.append((dim, n, base, cur))
            print(
                f"D={dim:<3} n={n:<4} "
                + "  ".join(
                    f"{k}: {cur[k][0] * 1e3:.1f} vs {base[k][0] * 1e3:.1f} ms" for k in cur
                ),
                flush=True,
            )
    # NOTE: the median of the warm suggestions is the measure; the mean also counts
    # the occasional slow one (a fit with restarts, every 5th), which is the sampler time a
    # whole run adds up.
    names = [k for k in rows[0][3] if k != "optuna GPSampler"]
    header = "| D | n | " + " | ".join(
        f"{k}: median, current / baseline ms (ratio) | {k}: mean (ratio)" for k in names
    )
    lines = [header + " |", "|" + "---|" * (2 * len(names) + 2)]
    for dim, n, base, cur in rows:
        cells = [
            f"{cur[k][0] * 1e3:.1f} / {base[k][0] * 1e3:.1f} ({cur[k][0] / base[k][0]:.2f}) | "
            f"{cur[k][1] * 1e3:.1f} / {base[k][1] * 1e3:.1f} ({cur[k][1] / base[k][1]:.2f})"
            for k in names
        ]
        lines.append(f"| {dim} | {n} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)

    def geo(i: int) -> float:
        return statistics.geometric_mean(
            cur[k][i] / base[k][i] for _, _, base, cur in rows for k in names
        )

    mean = f"geometric mean of current / baseline: median {geo(0):.3f}, mean {geo(1):.3f}"
    print()
    print(table)
    print(f"\n{mean}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "suggest_speed_vs_baseline.md").write_text(
        _header("warm median, this checkout against the baseline cell by cell")
        + f"\n\n{table}\n\n{mean}\n"
    )


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 4 and argv[0] == "--child":
        dim, n, repeats = (int(a) for a in argv[1:])
        makers = {k: v for k, v in samplers().items() if k != "optuna GPSampler"}
        words = os.environ.get("SUGGEST_SPEED_SAMPLERS")
        if words:
            makers = {k: v for k, v in makers.items() if any(w in k for w in words.split("\t"))}
        for make in makers.values():  # warm-up: imports, first calls
            time_suggestions(make_study(make(), 2, 5, 0), 2, 1)
        print(json.dumps(_cell(makers, dim, n, repeats)))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--trials", type=int, nargs="+", default=[25, 50, 100, 200, 500, 1000])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another checkout's root to time in the same run",
    )
    parser.add_argument(
        "--clock", choices=["wall", "cpu"], default="wall", help="seconds measured (default wall)"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="time every cell this many times (fresh studies, the same states): the tables "
        "give the median over runs, and a last table the spread of each ratio over the runs "
        "(with --baseline: rounds of both children, alternating which goes first)",
    )
    parser.add_argument(
        "--space",
        choices=["box", "conditional"],
        default="box",
        help="the space of the study (default box: D floats)",
    )
    parser.add_argument(
        "--objectives",
        type=int,
        choices=[1, 2],
        default=1,
        help="objectives of the study (default 1; 2: the value and sum((x - 0.5)^2))",
    )
    parser.add_argument(
        "--samplers",
        nargs="+",
        default=None,
        help="time only the samplers whose names contain one of these words",
    )
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        global _CPU_CLOCK
        _CPU_CLOCK = True
        os.environ["COSTBO_SPEED_CLOCK"] = "cpu"  # for the children of --baseline
    if args.space == "conditional":
        global _CONDITIONAL
        _CONDITIONAL = True
        os.environ["COSTBO_SPEED_SPACE"] = "conditional"  # for the children of --baseline
    if args.objectives != 1:
        global _OBJECTIVES
        _OBJECTIVES = args.objectives
        os.environ["COSTBO_SPEED_OBJECTIVES"] = str(args.objectives)  # for the children
    if args.baseline is not None:
        compare(args)
        return

    makers = samplers()
    if args.samplers:
        makers = {k: v for k, v in makers.items() if any(w in k for w in args.samplers)}
    # Warm-up: the first suggestion in a process pays for imports (torch especially).
    for make in makers.values():
        time_suggestions(make_study(make(), 2, 5, 0), 2, 1)

    rows = []
    per_run: dict[tuple[int, int], list[dict[str, tuple[float, float, float]]]] = {}
    for dim in args.dims:
        for n in args.trials:
            runs = [_cell(makers, dim, n, args.repeats) for _ in range(args.runs)]
            per_run[(dim, n)] = runs
            medians = {
                k: (
                    statistics.median(r[k][0] for r in runs),
                    statistics.fmean(r[k][1] for r in runs),
                    statistics.median(r[k][2] for r in runs),
                )
                for k in runs[0]
            }
            rows.append((dim, n, medians))
            cells = "  ".join(f"{k}: {v[0] * 1e3:7.1f} ms" for k, v in medians.items())
            print(f"D={dim:<3} n={n:<4} {cells}", flush=True)

    table = report(rows, list(makers), args)
    if args.runs > 1:
        table += run_spread(per_run, list(makers))
    print()
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "suggest_speed.md").write_text(table)


def _header(what: str) -> str:
    """The first line of a result file: the command, the clock, then ``what`` was timed."""
    command = " ".join(["python -m benchmarks speed", *sys.argv[1:]])
    clock = "CPU" if _CPU_CLOCK else "wall-clock"
    study = f"a {_OBJECTIVES}-objective study" if _OBJECTIVES > 1 else "one objective"
    return (
        f"`{command}`: {clock} time of one `ask` and its `suggest_*` calls, one thread, "
        f"{study}, {what}."
    )


def package_version() -> str:
    """The optuna_costbo this process imported: its folder and, in a git checkout, the
    commit (a venv's editable install may point at another worktree than this script's)."""
    root = Path(optuna_costbo.__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "optuna_costbo"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"`{root}`"
    return f"`{root}` at {commit}" + (" with uncommitted changes" if dirty else "")


def run_spread(
    per_run: dict[tuple[int, int], list[dict[str, tuple[float, float, float]]]],
    names: list[str],
) -> str:
    """The last section with ``--runs``: each ratio of warm medians, run by run, as its median
    [min - max] over the runs (how much one run's verdict on a cell can be trusted)."""
    pairs = [
        (k, ref)
        for ref in ("optuna GPSampler", "costbo EIpu")
        if ref in names
        for k in names
        if k not in (ref, "optuna GPSampler")
    ]
    if not pairs:
        return ""
    short = {"optuna GPSampler": "GPSampler", "costbo EIpu": "EIpu"}
    runs = len(next(iter(per_run.values())))
    lines = [
        "",
        f"## Ratios over {runs} runs: median [min - max]",
        "",
        "| D | n | " + " | ".join(f"{k} / {short[r]}" for k, r in pairs) + " |",
        "|" + "---|" * (len(pairs) + 2),
    ]
    for (dim, n), cell_runs in per_run.items():
        cells = []
        for k, r in pairs:
            ratios = [c[k][0] / c[r][0] for c in cell_runs]
            cells.append(
                f"{statistics.median(ratios):.2f} [{min(ratios):.2f} - {max(ratios):.2f}]"
            )
        lines.append(f"| {dim} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def report(
    rows: list[tuple[int, int, dict[str, tuple[float, float, float]]]],
    names: list[str],
    args: argparse.Namespace,
) -> str:
    """The result file: the command, then one section per table (warm times, their ratios to
    GPSampler and to EIpu, cold first suggestions), each under a heading of its own."""
    lines = [
        _header("each cell in one run of the samplers side by side"),
        "",
        f"Package measured: {package_version()}.",
        "",
        "## Warm suggestion, median (mean) ms",
        "",
        "| D | n | " + " | ".join(names) + " |",
        "|" + "---|" * (len(names) + 2),
    ]
    for dim, n, med in rows:
        cells = [f"{med[k][0] * 1e3:.1f} ({med[k][1] * 1e3:.1f})" for k in names]
        lines.append(f"| {dim} | {n} | " + " | ".join(cells) + " |")
    ratios = []  # (numerator, denominator) sampler names
    for ref in ("optuna GPSampler", "costbo EIpu"):
        if ref in names:
            ratios += [(k, ref) for k in names if k not in (ref, "optuna GPSampler")]
    if ratios:
        lines += ["", "## Ratios of the warm medians", ""]
        short = {"optuna GPSampler": "GPSampler", "costbo EIpu": "EIpu"}
        header = " | ".join(f"{k} / {short[r]}" for k, r in ratios)
        lines += ["| D | n | " + header + " |", "|" + "---|" * (len(ratios) + 2)]
        for dim, n, med in rows:
            cells = [f"{med[k][0] / med[r][0]:.2f}" for k, r in ratios]
            lines.append(f"| {dim} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "## Cold first suggestion of a fresh sampler, seconds", ""]
    lines += ["| D | n | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 2)]
    for dim, n, med in rows:
        lines.append(f"| {dim} | {n} | " + " | ".join(f"{med[k][2]:.2f}" for k in names) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # the former way, python -m benchmarks.suggest_speed
    from benchmarks import _preamble

    _preamble.forward("speed")
