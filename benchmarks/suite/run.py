"""Run the suite and write its report: ``python -m benchmarks.suite.run [options]``.

    python -m benchmarks.suite.run --quick                    # 3 seeds, every problem and method
    nice -n 10 python -m benchmarks.suite.run --seeds 20 --resume
    python -m benchmarks.suite.run --resume --rerun rollout ei   # re-run ours after a change
    python -m benchmarks.suite.run --report-only               # rebuild the report from the cache
    python -m benchmarks.suite.run --list                      # problems and methods

Every finished run is cached as ``<out>/runs/<problem>/<method>/seed<NNN>.csv``; ``--resume``
runs only what is missing (or cached from an older problem definition, or failed), so the
baselines (Optuna's, BoTorch's) run once and are re-used; ``--rerun METHOD ...`` discards the
cached runs of those methods first (and implies ``--resume`` for the rest). The report
(``report.md``, CSVs, ``regret_vs_cost.png``) covers the requested problems, methods and seeds
found in the cache.
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
from collections.abc import Sequence
import concurrent.futures
from pathlib import Path
import sys
import time


if __package__ in (None, ""):  # run as a script: python benchmarks/suite/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.suite import cache
from benchmarks.suite import methods as methods_mod
from benchmarks.suite import report
from benchmarks.suite.problems import PROBLEMS
from benchmarks.suite.problems import describe


DEFAULT_OUT = Path(__file__).resolve().parent / "results"
QUICK_SEEDS = 3
DEFAULT_SEEDS = 20


def _init_worker() -> None:
    """One torch thread (torch reads OMP_NUM_THREADS=1 if it is imported later)."""
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.set_num_threads(1)


def _task(problem_name: str, method: str, seed: int, out: str) -> methods_mod.Run:
    problem = PROBLEMS[problem_name]
    run = methods_mod.run_one(problem, method, seed)
    if not run.error:
        cache.write_run(Path(out), problem, run)
    return run


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"seeds 0..N-1 (default {DEFAULT_SEEDS}; --quick: {QUICK_SEEDS})",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="method names (see --list); any other name ACQ or ACQ-hN is passed to "
        "CostRolloutSampler(acquisition=ACQ, horizon=N)",
    )
    parser.add_argument("--problems", nargs="+", default=None, choices=list(PROBLEMS))
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_SEEDS} seeds (unless --seeds)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="cache and report folder")
    parser.add_argument(
        "--report-dir", type=Path, default=None, help="write the report here (default: --out)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument(
        "--resume", action="store_true", help="run only runs missing from the cache"
    )
    parser.add_argument(
        "--rerun",
        nargs="+",
        default=[],
        metavar="METHOD",
        help="discard the cached runs of these methods first (implies --resume)",
    )
    parser.add_argument(
        "--reference", default="eipu", help="method of the paired tests (default eipu)"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="no runs: report from the cache"
    )
    parser.add_argument("--list", action="store_true", help="list problems and methods, then exit")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print(describe())
        print()
        for m in methods_mod.REGISTRY.values():
            print(f"{m.name:<18} {m.label}")
        return 0
    n_seeds = (
        args.seeds if args.seeds is not None else (QUICK_SEEDS if args.quick else DEFAULT_SEEDS)
    )
    seeds = list(range(n_seeds))
    problems = [PROBLEMS[n] for n in (args.problems or PROBLEMS)]
    requested = list(dict.fromkeys(args.methods or methods_mod.DEFAULT_METHODS))
    skipped: dict[str, str] = {}
    for m in requested:
        why = methods_mod.unavailable(methods_mod.resolve(m))
        if why:
            skipped[m] = why
            print(f"skipping method {m!r}: {why}", flush=True)
    methods = [m for m in requested if m not in skipped]
    out: Path = args.out
    resume = args.resume or bool(args.rerun)
    if args.rerun and not args.report_only:
        n = cache.discard(out, list(args.rerun))
        print(f"--rerun: discarded {n} cached runs of {', '.join(args.rerun)}", flush=True)

    if not args.report_only:
        todo = [
            (p, m, s)
            for s in seeds
            for p in problems
            for m in methods
            if not (resume and cache.load_valid(out, p, m, s) is not None)
        ]
        total = len(seeds) * len(problems) * len(methods)
        print(f"{total - len(todo)} of {total} runs cached, {len(todo)} to run", flush=True)
        start = time.perf_counter()
        failures = 0

        def done(k: int, run: methods_mod.Run) -> None:
            nonlocal failures
            elapsed = time.perf_counter() - start
            eta = elapsed / k * (len(todo) - k)
            flag = f" ERROR {run.error}" if run.error else ""
            flag += " CAPPED" if run.capped else ""
            failures += bool(run.error)
            print(
                f"[{k}/{len(todo)} {elapsed:6.0f}s eta {eta / 60:5.1f} min] {run.problem:<22} "
                f"{run.method:<16} seed {run.seed:<3} trials {len(run.costs):<3} "
                f"{run.run_s:6.1f}s{flag}",
                flush=True,
            )

        if args.jobs <= 1:
            _init_worker()
            for k, (p, m, s) in enumerate(todo, 1):
                done(k, _task(p.name, m, s, str(out)))
        else:
            with concurrent.futures.ProcessPoolExecutor(
                args.jobs, initializer=_init_worker
            ) as pool:
                futures = [pool.submit(_task, p.name, m, s, str(out)) for p, m, s in todo]
                for k, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                    done(k, fut.result())
        if todo:
            print(
                f"ran {len(todo)} runs in {(time.perf_counter() - start) / 60:.1f} min, "
                f"{failures} failed",
                flush=True,
            )

    scored = {}
    for p in problems:
        for m in methods:
            for s in seeds:
                run = cache.load_valid(out, p, m, s)
                if run is not None:
                    scored[(p.name, m, s)] = report.score(run, p)
    command = "python -m benchmarks.suite.run " + " ".join(sys.argv[1:] if argv is None else argv)
    path = report.write_report(
        args.report_dir or out,
        scored,
        problems,
        methods,
        seeds,
        args.reference,
        skipped=skipped,
        command=command.strip(),
    )
    print(f"report: {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
