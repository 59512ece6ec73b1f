"""How well the completion model's probability predicts that a proposed trial completes.

Once a study has pruned trials, every acquisition is weighted by the probability of
feasibility of one more constraint, completion (``feasibility.with_completion``: a GP of +1
for each pruned trial and -1 for each completed one). This script runs pruning-benchmark
studies (``benchmarks/problems/stepped.py``) with the default sampler, records that
probability at every point the models propose, and tabulates it against whether the trial
then completed: the calibration of the model, and how many proposals it gives little chance.

    COSTBO_DATA_DIR=... python -m benchmarks.completion_calibration \
        --problems yahpo-lcbench-7593-epochs yahpo-lcbench-167185-epochs \
        --methods rollout+median rollout+hyperband --seeds 1 \
        [--out benchmarks/results/pruning/completion_calibration.md]

The probability is read by wrapping the sampler's call of the full route (``propose``) and the
model build it makes, in this process only: the runs make the trials the benchmark makes (the
extra prediction draws no random numbers). The YAHPO problems need the benchmark environment.
"""

from __future__ import annotations

import argparse
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
    known = np.isfinite(pf)
    rows = []
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        last = i == len(edges) - 2
        sel = known & (pf >= lo) & ((pf <= hi) if last else (pf < hi))
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
def recording() -> Iterator[list[float]]:
    """While open, the probability of completing at each full-route proposal of this process,
    in order (NaN while the study has no pruned trial)."""
    from optuna_costbo._numerics import policy
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
        return proposal

    policy.build_models, suggest.propose = build_models, propose
    try:
        yield records
    finally:
        policy.build_models, suggest.propose = original_build, original_propose


def record_run(name: str, method: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One run: the probability of completing at each model proposal (k,) and whether that
    trial completed (k,). The models' trials are the run's last k (the start-up design first;
    one worker, so no proposal is made again)."""
    from benchmarks.harness import runner
    from benchmarks.problems import stepped

    with recording() as records:
        run = runner.run_one(stepped.ProblemFactory(name), method, seed)
    if run.error:
        raise RuntimeError(f"{name} / {method} / seed {seed} failed: {run.error}")
    k = len(records)
    states = run.states[len(run.states) - k :]
    return np.array(records), np.array([s == "complete" for s in states])


def table(title: str, rows: list[dict[str, Any]]) -> list[str]:
    """The markdown table of :func:`calibration_rows`."""
    header = [
        "probability of completing",
        "proposals",
        "mean probability",
        "completed",
        "completions expected / observed",
    ]
    cells = [
        [
            f"[{r['lo']:.2f}, {r['hi']:.2f}{']' if r['hi'] >= 1.0 else ')'}",
            str(r["n"]),
            f"{r['mean_pf']:.3f}",
            f"{100 * r['completed_share']:.0f}%",
            f"{r['expected']:.1f} / {r['observed']}",
        ]
        for r in rows
        if r["n"]
    ]
    return [f"### {title}", "", *report.table(header, cells), ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=["yahpo-lcbench-7593-epochs"])
    parser.add_argument("--methods", nargs="+", default=["rollout+median"])
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    body: list[str] = []
    for name in args.problems:
        for method in args.methods:
            pfs, dones = [], []
            for seed in range(args.seeds):
                pf, done = record_run(name, method, seed)
                pfs.append(pf)
                dones.append(done)
                print(f"{name} {method} seed {seed}: {len(pf)} proposals", flush=True)
            pf, done = np.concatenate(pfs), np.concatenate(dones)
            known = np.isfinite(pf)
            title = (
                f"{name}, {method}: {int(known.sum())} proposals with a completion model, "
                f"{100 * done[known].mean():.0f}% completed, mean probability "
                f"{pf[known].mean():.2f}"
            )
            body += table(title, calibration_rows(pf, done))
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
