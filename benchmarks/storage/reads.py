"""4. The sampler's reads per trial, old path against new.

The sampler's storage time, ledger time and the rest per trial, on studies pre-filled with
``--reads-trials`` finished trials (1k and 10k), SQLite and PostgreSQL, ``--reads-workers``
worker processes; the sampler held in its start-up design so that no model is fitted (the
model's time is measured apart, on a ``--model-trials`` study). Run on the package of git
``--baseline-ref`` (old, extracted with ``git archive``) and on this checkout (new) side by
side, each worker a subprocess ``python -m benchmarks storage --reads-worker`` with that
package on its ``PYTHONPATH`` (which puts it first: ``benchmarks/_preamble.py``). The
ledger's and the model's times are read off a profile
(``benchmarks.harness.package_probes.profiled_seconds``): nothing of the package is
replaced, so both versions are measured alike (the profiler's overhead included).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
import cProfile
import json
import os
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any
import uuid

import optuna
from optuna.trial import FrozenTrial

from benchmarks.harness import package_probes
from benchmarks.storage.instruments import CountingStorage
from benchmarks.storage.instruments import PhasedSampler
from benchmarks.storage.instruments import Tally
from benchmarks.storage.studies import delete_study
from benchmarks.storage.studies import fill_study
from benchmarks.storage.studies import fill_study_fast
from benchmarks.storage.studies import objective
from benchmarks.storage.studies import table
from optuna_costbo import CostRolloutSampler


ROOT = Path(__file__).resolve().parents[2]
"""This checkout: the workers run its ``benchmarks`` (``python -m benchmarks storage``)."""


def reads_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One worker process of the reads benchmark (run with the path under test importable).

    Runs one warm-up trial (its first read loads every trial into Optuna's cache), waits for
    ``spec["go_at"]``, then ``spec["n_trials"]`` trials; returns per-trial means. With
    ``spec["stub_model"]`` the sampler never leaves its start-up design (its reads and ledger
    run, no model is fitted). The ledger's and the model's times are read off a profile of
    the measured trials (:func:`benchmarks.harness.package_probes.profiled_seconds`): nothing
    of the package is replaced, so every version is measured alike, and every time (storage,
    ledger, the sampler's) is taken under the profiler.
    """
    return _measured_worker(spec)


def _measured_worker(spec: dict[str, Any]) -> dict[str, Any]:
    hooks = Tally()

    class Sampler(PhasedSampler):
        def _timed(self, trial: FrozenTrial, fn: Callable[[], Any]) -> Any:
            start = time.perf_counter()
            try:
                return super()._timed(trial, fn)
            finally:
                hooks.add("suggest", time.perf_counter() - start)

        def before_trial(self, study: Any, trial: Any) -> None:
            start = time.perf_counter()
            try:
                super().before_trial(study, trial)
            finally:
                hooks.add("before", time.perf_counter() - start)

        def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
            start = time.perf_counter()
            try:
                super().after_trial(study, trial, state, values)
            finally:
                hooks.add("after", time.perf_counter() - start)

    storage = CountingStorage(optuna.storages.get_storage(spec["url"]))
    sampler = package_probes.without_chart(
        Sampler,
        budget=1e12,
        seed=spec["seed"],
        acquisition=spec["acquisition"],
        n_startup_trials=10**9 if spec["stub_model"] else 4,
    )
    study = optuna.load_study(study_name=spec["name"], storage=storage, sampler=sampler)
    study.optimize(objective, n_trials=1)  # warm-up
    for t in (storage.tally, hooks):
        t.reset()
    barrier = Path(spec["barrier"])
    (barrier / f"ready-{spec['seed']}").touch()
    while not (barrier / "go").exists():
        time.sleep(0.05)
    n = spec["n_trials"]
    profile = cProfile.Profile()
    profile.enable()
    study.optimize(objective, n_trials=n)
    profile.disable()
    profiled = package_probes.profiled_seconds(profile)
    api = storage.tally

    def ms(tally: Tally, prefix: str = "") -> float:
        return 1e3 * sum(s for k, s in tally.seconds.items() if k.startswith(prefix)) / n

    sampler_storage = ms(api, "suggest:") + ms(api, "sampler:")
    return {
        "reads_all": sum(c for k, c in api.calls.items() if k.endswith(":get_all_trials")) / n,
        "optuna_reads_all": api.calls["optuna:get_all_trials"] / n,
        "sampler_calls": sum(c for k, c in api.calls.items() if not k.startswith("optuna:")) / n,
        "storage_ms": sampler_storage,
        "ledger_ms": 1e3 * profiled["ledger"] / n,
        "model_ms": 1e3 * profiled["model"] / n,
        "sampler_ms": ms(hooks),
    }


def _run_workers(
    path: Path, spec: dict[str, Any], n_workers: int, timeout: float
) -> list[dict[str, Any]]:
    """``n_workers`` processes running :func:`reads_worker` with the package in ``path``."""
    env = {**os.environ, "PYTHONPATH": str(path)}
    barrier = Path(tempfile.mkdtemp(prefix="reads-barrier-"))
    procs = []
    for i in range(n_workers):
        worker_spec = {**spec, "seed": i, "barrier": str(barrier)}
        procs.append(
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "benchmarks", "storage"),
                    *("--reads-worker", json.dumps(worker_spec)),
                ],
                env=env,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    # Every worker has done its warm-up (its first read loads the whole study): go together.
    deadline = time.monotonic() + timeout
    while len(list(barrier.glob("ready-*"))) < n_workers:
        if time.monotonic() > deadline or any(p.poll() not in (None, 0) for p in procs):
            for p in procs:
                p.kill()
            raise RuntimeError("a reads worker did not get ready")
        time.sleep(0.1)
    (barrier / "go").touch()
    out = []
    for p in procs:
        stdout, _ = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"a reads worker failed ({p.returncode})")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def export_baseline(ref: str, into: Path) -> Path:
    """The package as of git ``ref``, extracted under ``into`` (the old path)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "optuna_costbo"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def measure_model_time(n_finished: int, acquisition: str, repeats: int) -> float:
    """Mean seconds of the sampler's model and acquisition (the policy's ``propose``) on
    ``n_finished`` finished trials, one process, read off a profile."""
    storage = optuna.storages.InMemoryStorage()
    fill_study(storage, "model", n_finished, 0)
    sampler = package_probes.without_chart(
        CostRolloutSampler, budget=1e12, seed=0, acquisition=acquisition, n_startup_trials=4
    )
    study = optuna.load_study(study_name="model", storage=storage, sampler=sampler)
    profile = cProfile.Profile()
    profile.enable()
    study.optimize(objective, n_trials=repeats)
    profile.disable()
    return package_probes.profiled_seconds(profile)["model"] / repeats


def measure_reads(args: argparse.Namespace, tmp: Path) -> list[str]:
    """Section 4: per trial, the sampler's storage time, ledger time and the rest, on the code
    of ``--baseline-ref`` (old) and on this checkout (new), in one run."""
    here = ROOT
    old = export_baseline(args.baseline_ref, tmp / "baseline")
    model_s = {}
    for acquisition in ("ei", "rollout"):
        model_s[acquisition] = measure_model_time(
            args.model_trials, acquisition, args.model_repeats
        )
        print(f"  model n={args.model_trials} {acquisition}: {model_s[acquisition]:.2f} s")
    backends = [("SQLite", f"sqlite:///{tmp / 'reads.db'}")]
    if args.postgres_url:
        backends.append(("PostgreSQL", args.postgres_url))
    rows = []
    for label, url in backends:
        for n in args.reads_trials:
            name = f"reads-{uuid.uuid4().hex[:8]}"
            start = time.perf_counter()
            fill_study_fast(url, name, n)
            print(f"  {label} n={n}: filled in {time.perf_counter() - start:.0f} s", flush=True)
            for w in args.reads_workers:
                spec = {
                    "url": url,
                    "name": name,
                    "n_trials": args.reads_per_worker,
                    "acquisition": args.acquisition,
                    "stub_model": True,
                }
                result = {}
                for path_name, path in (("old", old), ("new", here)):
                    runs = _run_workers(path, spec, w, timeout=3600.0)
                    result[path_name] = {k: statistics.mean(r[k] for r in runs) for k in runs[0]}
                    print(f"  {label} n={n} W={w} {path_name}: {result[path_name]}", flush=True)
                o, v = result["old"], result["new"]
                sl_old = o["storage_ms"] + o["ledger_ms"]
                sl_new = v["storage_ms"] + v["ledger_ms"]

                def share(r: dict[str, float], acquisition: str) -> str:
                    sl = r["storage_ms"] + r["ledger_ms"]
                    rest = r["sampler_ms"] - r["model_ms"]  # the sampler without the model
                    return f"{100 * sl / (rest + 1e3 * model_s[acquisition]):.1f}"

                rows.append(
                    [
                        f"{n:,}",
                        label,
                        str(w),
                        f"{o['reads_all']:.0f} -> {v['reads_all']:.0f}",
                        f"{o['storage_ms']:.1f} -> {v['storage_ms']:.1f}",
                        f"{o['ledger_ms']:.1f} -> {v['ledger_ms']:.2f}",
                        f"{sl_old:.1f} -> {sl_new:.1f}",
                        f"{sl_old / max(sl_new, 1e-9):.1f}x",
                        f"{o['sampler_ms'] - o['model_ms']:.0f} -> "
                        f"{v['sampler_ms'] - v['model_ms']:.0f}",
                        f"{share(o, 'ei')} -> {share(v, 'ei')}",
                        f"{share(o, 'rollout')} -> {share(v, 'rollout')}",
                    ]
                )
            if label == "PostgreSQL":
                delete_study(url, name)
    return [
        f"## 4. The sampler's reads per trial, old ({args.baseline_ref}) -> new (this checkout)",
        "",
        f"A study pre-filled with n finished trials (``add_trials``); W worker processes each "
        f"run {args.reads_per_worker} trials together after a warm-up trial, with the model "
        "held in its start-up design, so that storage and ledger are measured, not the GP "
        "(times under cProfile). "
        "Per trial, means over the workers: reads of all trials (``get_all_trials``, Optuna's "
        "own included), the sampler's storage calls (all of them, reads and writes, in its "
        "hooks), the ledger computed from trials already read (and dead trials settled), "
        "the sampler's whole time without the model, and the share of storage + ledger in the "
        f"sampler's time with the model of a {args.model_trials}-trial study (measured here: "
        f'``"ei"`` {model_s["ei"]:.2f} s, ``"rollout"`` {model_s["rollout"]:.2f} s per '
        "suggestion, one process, InMemoryStorage).",
        "",
        *table(
            [
                "n trials",
                "storage",
                "W workers",
                "get_all_trials / trial",
                "sampler's storage ms / trial",
                "ledger ms / trial",
                "storage + ledger ms",
                "ratio",
                "sampler ms without model",
                f"share % (ei, {args.model_trials}-trial model)",
                f"share % (rollout, {args.model_trials}-trial model)",
            ],
            rows,
        ),
        "",
    ]
