"""How well the completion model's probability predicts that a proposed trial completes.

Once a study has pruned trials, every acquisition is weighted by the probability of
feasibility of one more constraint, completion (``feasibility.with_completion``: a GP of +1
for each pruned trial and -1 for each completed one). This script runs pruning-benchmark
studies (``benchmarks/problems/stepped.py``) with the default sampler, records that
probability at every point the models propose, and tabulates it against whether the trial
then completed: the calibration of the model, and how many proposals it gives little chance.

    COSTBO_DATA_DIR=... python -m benchmarks.completion_calibration \
        --problems yahpo-lcbench-7593-epochs yahpo-lcbench-167185-epochs \
        --methods rollout+median rollout+hyperband --seeds 1 [--stop-chance] \
        [--out benchmarks/results/pruning/completion_calibration.md]

``--stop-chance`` adds a second table per run set: the proposals binned by the chance of a stop
that the expected cost reads off the objective model (``PrunedCost``: the chance that the
value lands among the study's pruned share), next to the completion model's probability and
how the trials ended (completed, stopped at their first step). The two models judge the same
event; the table shows which of them the first-step stops escape.

The probability is read by wrapping the sampler's call of the full route (``propose``) and the
model build it makes, in this process only: the runs make the trials the benchmark makes (the
extra prediction draws no random numbers). The YAHPO problems need the benchmark environment.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
import itertools
from pathlib import Path
import sys
import time
from typing import Any

import numpy as np


if __package__ in (None, ""):
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import report


EDGES = (0.0, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0)
"""Bins of the probability of completing, [lo, hi) (the last one includes 1)."""

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "pruning" / "completion_calibration.md"


def _bins(x: np.ndarray, edges: Sequence[float]) -> Iterator[tuple[float, float, np.ndarray]]:
    """Each bin [lo, hi) of ``edges`` (the last one includes hi) and which finite entries of
    ``x`` (k,) fall in it, (k,) bool."""
    known = np.isfinite(x)
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        last = i == len(edges) - 2
        yield float(lo), float(hi), known & (x >= lo) & ((x <= hi) if last else (x < hi))


def stop_chance_rows(
    p_stop: np.ndarray,  # (k,) the objective model's chance of a stop, NaN: no pruning yet
    pf: np.ndarray,  # (k,) the completion model's probability of completing, NaN: none yet
    completed: np.ndarray,  # (k,) bool, the trial completed
    first_stop: np.ndarray,  # (k,) bool, the trial was stopped at its first step
    edges: Sequence[float] = EDGES,
) -> list[dict[str, Any]]:
    """Per bin of ``p_stop``: proposals, their mean ``p_stop`` and mean ``pf`` (over those
    with a completion model), the share that completed, and the number stopped at their
    first step. Proposals without a chance of a stop are left out."""
    p_stop, pf = np.asarray(p_stop, dtype=float), np.asarray(pf, dtype=float)
    completed = np.asarray(completed, dtype=bool)
    first_stop = np.asarray(first_stop, dtype=bool)
    if not p_stop.shape == pf.shape == completed.shape == first_stop.shape:
        raise ValueError(
            "p_stop, pf, completed and first_stop differ in shape: "
            f"{p_stop.shape}, {pf.shape}, {completed.shape} and {first_stop.shape}"
        )
    rows = []
    for lo, hi, sel in _bins(p_stop, edges):
        n = int(sel.sum())
        with_pf = sel & np.isfinite(pf)
        rows.append(
            {
                "lo": lo,
                "hi": hi,
                "n": n,
                "mean_p_stop": float(p_stop[sel].mean()) if n else float("nan"),
                "mean_pf": float(pf[with_pf].mean()) if with_pf.any() else float("nan"),
                "completed_share": float(completed[sel].mean()) if n else float("nan"),
                "first_stops": int(first_stop[sel].sum()),
            }
        )
    return rows


def calibration_rows(
    pf: np.ndarray,  # (k,) probability of completing at each proposal, NaN: no model yet
    completed: np.ndarray,  # (k,) bool, the trial completed
    edges: Sequence[float] = EDGES,
) -> list[dict[str, Any]]:
    """Per bin of ``pf``: proposals, their mean ``pf``, the share that completed, and the
    expected and observed numbers of completions. Proposals without a model are left out."""
    pf = np.asarray(pf, dtype=float)
    completed = np.asarray(completed, dtype=bool)
    if pf.shape != completed.shape:
        raise ValueError(f"pf and completed differ in shape: {pf.shape} and {completed.shape}")
    rows = []
    for lo, hi, sel in _bins(pf, edges):
        n = int(sel.sum())
        rows.append(
            {
                "lo": float(lo),
                "hi": float(hi),
                "n": n,
                "mean_pf": float(pf[sel].mean()) if n else float("nan"),
                "completed_share": float(completed[sel].mean()) if n else float("nan"),
                "expected": float(pf[sel].sum()),
                "observed": int(completed[sel].sum()),
            }
        )
    return rows


@contextlib.contextmanager
def recording(stop_chance: list[float] | None = None) -> Iterator[list[float]]:
    """While open, the probability of completing at each full-route proposal of this process,
    in order (NaN while the study has no pruned trial). With ``stop_chance``, also appends
    there, per proposal, the chance of a stop that the expected cost reads off the objective
    model (NaN while the cost model does not count on the pruner)."""
    from scipy.special import ndtr

    from optuna_costbo._numerics import policy
    from optuna_costbo._numerics.cost_model import PrunedCost
    from optuna_costbo._numerics.feasibility import Feasibility
    from optuna_costbo._sampler import suggest

    records: list[float] = []
    built: dict[str, Any] = {}
    original_build, original_propose = policy.build_models, suggest.propose

    def build_models(*args: Any, **kwargs: Any) -> Any:
        built["models"] = original_build(*args, **kwargs)
        return built["models"]

    def propose(request: Any, acquisition: Any, rng: Any, **kwargs: Any) -> Any:
        proposal = original_propose(request, acquisition, rng, **kwargs)
        models = built.pop("models", None)
        pf = float("nan")
        stopped = request.stopped
        if models is not None and models.feasibility is not None and stopped is not None:
            if np.any(stopped):  # completion is the last constraint (with_completion)
                completion = Feasibility(models.feasibility.models[-1:])
                pf = float(completion.pf(proposal.z[None])[0])
        records.append(pf)
        if stop_chance is not None:
            cost = models.cost if models is not None else None
            p = float("nan")
            if isinstance(cost, PrunedCost):
                mean, var = cost.objective.predict(proposal.z[None])
                p = float(ndtr((mean[0] - cost.threshold) / np.sqrt(var[0])))
            stop_chance.append(p)
        return proposal

    policy.build_models, suggest.propose = build_models, propose
    try:
        yield records
    finally:
        policy.build_models, suggest.propose = original_build, original_propose


def record_run(
    name: str, method: str, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One run, per model proposal (k,): the probability of completing, whether that trial
    completed, the objective model's chance of a stop, and whether the trial was stopped at
    its first step. The models' trials are the run's last k (the start-up design first; one
    worker, so no proposal is made again)."""
    from benchmarks.harness import runner
    from benchmarks.problems import stepped

    p_stop: list[float] = []
    factory = stepped.ProblemFactory(name)
    with recording(p_stop) as records:
        run = runner.run_one(factory, method, seed)
    if run.error:
        raise RuntimeError(f"{name} / {method} / seed {seed} failed: {run.error}")
    k = len(records)
    states = run.states[len(run.states) - k :]
    first = factory().steps[0]
    steps = run.steps[len(run.steps) - k :]
    first_stop = [s == "pruned" and step == first for s, step in zip(states, steps, strict=True)]
    return (
        np.array(records),
        np.array([s == "complete" for s in states]),
        np.array(p_stop),
        np.array(first_stop),
    )


def _binned_table(
    title: str,
    header: list[str],
    rows: list[dict[str, Any]],
    cells: Callable[[dict[str, Any]], list[str]],
) -> list[str]:
    """A markdown table of binned rows: the bin, then ``cells(row)``; empty bins left out."""
    body = [
        [f"[{r['lo']:.2f}, {r['hi']:.2f}{']' if r['hi'] >= 1.0 else ')'}", *cells(r)]
        for r in rows
        if r["n"]
    ]
    return [f"### {title}", "", *report.table(header, body), ""]


def stop_table(title: str, rows: list[dict[str, Any]]) -> list[str]:
    """The markdown table of :func:`stop_chance_rows`."""
    header = [
        "objective model's chance of a stop",
        "proposals",
        "mean chance of a stop",
        "mean probability of completing",
        "completed",
        "stopped at the first step",
    ]
    return _binned_table(
        title,
        header,
        rows,
        lambda r: [
            str(r["n"]),
            f"{r['mean_p_stop']:.3f}",
            f"{r['mean_pf']:.3f}",
            f"{100 * r['completed_share']:.0f}%",
            str(r["first_stops"]),
        ],
    )


def table(title: str, rows: list[dict[str, Any]]) -> list[str]:
    """The markdown table of :func:`calibration_rows`."""
    header = [
        "probability of completing",
        "proposals",
        "mean probability",
        "completed",
        "completions expected / observed",
    ]
    return _binned_table(
        title,
        header,
        rows,
        lambda r: [
            str(r["n"]),
            f"{r['mean_pf']:.3f}",
            f"{100 * r['completed_share']:.0f}%",
            f"{r['expected']:.1f} / {r['observed']}",
        ],
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=["yahpo-lcbench-7593-epochs"])
    parser.add_argument("--methods", nargs="+", default=["rollout+median"])
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--stop-chance",
        action="store_true",
        help="also tabulate the objective model's chance of a stop (the expected cost's)",
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    body: list[str] = []
    for name in args.problems:
        for method in args.methods:
            pfs, dones, stops, firsts = [], [], [], []
            for seed in range(args.seeds):
                pf, done, p_stop, first_stop = record_run(name, method, seed)
                pfs.append(pf)
                dones.append(done)
                stops.append(p_stop)
                firsts.append(first_stop)
                print(f"{name} {method} seed {seed}: {len(pf)} proposals", flush=True)
            pf, done = np.concatenate(pfs), np.concatenate(dones)
            known = np.isfinite(pf)
            title = (
                f"{name}, {method}: {int(known.sum())} proposals with a completion model, "
                f"{100 * done[known].mean():.0f}% completed, mean probability "
                f"{pf[known].mean():.2f}"
            )
            body += table(title, calibration_rows(pf, done))
            if args.stop_chance:
                p_stop, first_stop = np.concatenate(stops), np.concatenate(firsts)
                known_p = np.isfinite(p_stop)
                stop_title = (
                    f"{name}, {method}: the objective model's chance of a stop, "
                    f"{int(known_p.sum())} proposals, {int(first_stop.sum())} stopped at "
                    "their first step"
                )
                body += stop_table(stop_title, stop_chance_rows(p_stop, pf, done, first_stop))
    command = "python -m benchmarks.completion_calibration " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    lines = [
        "# The completion model's probability against completion (issue 24)",
        "",
        f"Command: `{command.strip()}`; seeds 0..{args.seeds - 1}. "
        f"{report.versions_line(time.perf_counter() - start)}",
        "",
        "Every point the models proposed once the study had a pruned trial, binned by the "
        "probability of completing that the completion model gave it; `completed`: the share "
        "of those trials that completed; expected: the sum of the probabilities.",
        "",
        *body,
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
