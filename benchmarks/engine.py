"""The engine around the model (issue 57): four tables, this checkout beside a baseline.

1. **depth**: the most package frames, and files, on the stack at any call into scipy.optimize
   during model-based suggestions (:data:`DEPTH_SCENARIOS`), a worker thread's counted with its
   caller's; the deepest stack.
2. **reads**: full reads of the trial list per trial on SQLite (Optuna's cached RDB storage's
   ``get_all_trials``), TPE beside ours.
3. **sqlite**: ``study.optimize`` on SQLite with the study's wall clock as the budget, trials
   of 20-160 ms: the wall clock beyond the budget and the last trial, in % of the budget.
4. **lines**: the package's lines and the docstrings' share.

Each measurement runs in a fresh process with ``PYTHONPATH=<root>`` in front, for this checkout
and for ``--baseline DIR`` (e.g. ``git archive 7aafb4ce optuna_costbo | tar -x -C /tmp/base``).

    python -m benchmarks engine [--baseline /tmp/base] [--seeds 3] [--budgets 3 10]
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Sequence
import json
import os
from pathlib import Path
import subprocess
import sys
from typing import Any


ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, os, sys, time, traceback, random
import optuna
optuna.logging.set_verbosity(optuna.logging.ERROR)
import optuna_costbo
from optuna_costbo import CostRolloutSampler, report_cost
kind, arg = sys.argv[1], json.loads(sys.argv[2])
pkg = os.path.dirname(optuna_costbo.__file__)

def objective(trial):
    x = trial.suggest_float("x", -2.0, 2.0)
    y = trial.suggest_float("y", -2.0, 2.0)
    report_cost(trial, 1.0 + x * x)
    return (x - 1.0) ** 2 + y * y

if kind == "depth":
    # Every call into scipy.optimize during model-based suggestions: the package frames on the
    # stack; in a worker thread, the calling thread's (waiting at the hand-off) and the
    # worker's. threading.setprofile reaches the L-BFGS-B threads, all started after it.
    import threading
    main, on, chains = threading.get_ident(), [False], {}
    def ours(frame):
        return [f for f in traceback.extract_stack(frame) if f.filename.startswith(pkg)]
    def probe(frame, event, c_func):
        # a compiled routine of scipy.optimize called from our own frame counts too (a package
        # that drives scipy's private _lbfgsb.setulb itself, as 7aafb4ce did)
        into = "scipy/optimize" in frame.f_code.co_filename if event == "call" else (
            event == "c_call" and "scipy.optimize" in str(getattr(c_func, "__module__", "")))
        if on[0] and into:
            chain = ours(frame)
            if threading.get_ident() != main:
                chain = ours(sys._current_frames()[main]) + chain
            chains[tuple(f"{os.path.relpath(f.filename, pkg)}:{f.name}" for f in chain)] = 1
    threading.setprofile(probe)
    sys.setprofile(probe)
    out = []
    for scenario in arg["scenarios"]:
        options = {"overrun_risk": None, **scenario["options"]}
        if scenario.get("constraint"):
            options["constraints_func"] = lambda t: (t.params["x"] - 1.5,)
        if scenario.get("cost_fn"):
            options["cost_fn"] = lambda params: 1.0 + params["x"] ** 2
        objectives = scenario.get("objectives", 1)
        study = optuna.create_study(
            directions=["minimize"] * objectives,
            sampler=CostRolloutSampler(budget=1e9, seed=0, **options))
        two = lambda t: (objective(t), (t.params["x"] + 1.0) ** 2)
        study.optimize(objective if objectives == 1 else two, n_trials=10)
        chains.clear()
        on[0] = True
        study.optimize(objective if objectives == 1 else two, n_trials=2)
        on[0] = False
        deepest = max(chains, key=lambda c: (len(c), len({x.split(":")[0] for x in c})))
        worst = max(chains, key=lambda c: (len({x.split(":")[0] for x in c}), len(c)))
        out.append({"name": scenario["name"], "calls": len(chains), "stack": list(deepest),
                    "frames": len(deepest), "files": len({x.split(":")[0] for x in worst})})
    sys.setprofile(None)
    print(json.dumps(out))
elif kind == "reads":
    from optuna.storages._cached_storage import _CachedStorage
    count = [0]
    real = _CachedStorage.get_all_trials
    def counting(self, *a, **k):
        count[0] += 1
        return real(self, *a, **k)
    _CachedStorage.get_all_trials = counting
    out = {}
    for name in ("tpe", "ours"):
        path = arg["dir"] + f"/reads_{name}.db"
        if os.path.exists(path):
            os.remove(path)
        sampler = (optuna.samplers.TPESampler(seed=0) if name == "tpe"
                   else CostRolloutSampler(budget=1e9, seed=0))
        study = optuna.create_study(sampler=sampler, storage=f"sqlite:///{path}")
        study.optimize(objective, n_trials=10)
        count[0] = 0
        study.optimize(objective, n_trials=20)
        out[name] = count[0] / 20
    print(json.dumps(out))
elif kind == "sqlite":
    budget, seed = arg["budget"], arg["seed"]
    rng = random.Random(seed)
    def timed(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        time.sleep(0.02 + 0.14 * x)
        return (x - 0.3) ** 2 + (y - 0.6) ** 2 + 0.01 * rng.random()
    path = arg["dir"] + f"/wall_{seed}.db"
    if os.path.exists(path):
        os.remove(path)
    sampler = CostRolloutSampler(budget=budget, seed=seed)
    study = optuna.create_study(sampler=sampler, storage=f"sqlite:///{path}")
    start = time.perf_counter()
    study.optimize(timed)
    wall = time.perf_counter() - start
    last = [t for t in study.trials if t.datetime_complete is not None][-1]
    duration = (last.datetime_complete - last.datetime_start).total_seconds()
    print(json.dumps({"wall": wall, "last": duration, "trials": len(study.trials),
                      "excess": 100.0 * (wall - budget - duration) / budget}))
"""


DEPTH_SCENARIOS: list[dict[str, object]] = [
    {"name": "rollout, constraint, learned cost", "options": {}, "constraint": True},
    {"name": "rollout, cost_fn", "options": {}, "cost_fn": True},
    {"name": "rollout, hard budget", "options": {"overrun_risk": 0.05}, "constraint": True},
    {"name": "eipu, cost_fn", "options": {"acquisition": "eipu"}, "cost_fn": True},
    {"name": "ei", "options": {"acquisition": "ei"}},
    {"name": "rollout, two objectives", "options": {}, "objectives": 2},
]
"""The suggestions whose calls into scipy.optimize the depth table measures."""


def _run(root: Path, kind: str, arg: dict[str, object]) -> Any:
    env = {**os.environ, "PYTHONPATH": str(root)}  # BLAS threads: capped by the preamble
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, json.dumps(arg)],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _lines(package: Path) -> tuple[int, int]:
    """(lines, docstring lines) of every module under ``package``."""
    total = docs = 0
    for path in package.rglob("*.py"):
        source = path.read_text()
        total += len(source.splitlines())
        for node in ast.walk(ast.parse(source)):
            kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            body = getattr(node, "body", None)
            if isinstance(node, kinds) and body and isinstance(body[0], ast.Expr):
                value = body[0].value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    docs += (body[0].end_lineno or body[0].lineno) - body[0].lineno + 1
    return total, docs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks engine",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--baseline", type=Path, default=None, help="another package root")
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the SQLite runs")
    parser.add_argument("--budgets", type=float, nargs="+", default=[3.0, 10.0])
    parser.add_argument("--tmp", type=Path, default=Path("/tmp/costbo-engine"))
    args = parser.parse_args(argv)
    args.tmp.mkdir(parents=True, exist_ok=True)
    roots = {"this checkout": ROOT}
    if args.baseline is not None:
        roots = {"baseline": args.baseline.resolve(), **roots}

    print("| package | suggestion | frames | files | deepest stack |\n|---|---|---|---|---|")
    for name, root in roots.items():
        for d in _run(root, "depth", {"scenarios": DEPTH_SCENARIOS}):
            stack = " > ".join(d["stack"])
            print(f"| {name} | {d['name']} | {d['frames']} | {d['files']} | {stack} |")

    print("\n| package | reads per trial, TPE | reads per trial, ours |\n|---|---|---|")
    for name, root in roots.items():
        r = _run(root, "reads", {"dir": str(args.tmp)})
        print(f"| {name} | {r['tpe']:.2f} | {r['ours']:.2f} |")

    print(
        "\n| package | budget (s) | seed | trials | wall (s) | last trial (s) "
        "| beyond budget + last trial |\n|---|---|---|---|---|---|---|"
    )
    for budget in args.budgets:
        for seed in range(args.seeds):
            for name, root in roots.items():  # side by side, seed by seed
                w = _run(root, "sqlite", {"budget": budget, "seed": seed, "dir": str(args.tmp)})
                print(
                    f"| {name} | {budget:g} | {seed} | {w['trials']} | {w['wall']:.2f} "
                    f"| {w['last']:.2f} | {w['excess']:+.1f} % |"
                )

    print("\n| package | lines | docstring lines | share |\n|---|---|---|---|")
    for name, root in roots.items():
        total, docs = _lines(root / "optuna_costbo")
        print(f"| {name} | {total} | {docs} | {100.0 * docs / total:.1f} % |")


if __name__ == "__main__":
    main()
