"""Budgets and best known values of the YAHPO instances: ``suite calibrate-yahpo``.

    export COSTBO_YAHPO_DATA=/path/to/yahpo_data    # see benchmarks/problems/README_yahpo.md
    nice -n 10 python -m benchmarks suite calibrate-yahpo    # all instances, 5-7 min, one core
    python -m benchmarks suite calibrate-yahpo --instances yahpo-rpart-41161   # some entries
    python -m benchmarks suite calibrate-yahpo --screen      # the screen (yahpo_screen.md)

Per instance (:data:`benchmarks.problems.yahpo.INSTANCES`), at the maximum fidelity:

- costs of ``--n-cost`` random configurations (Optuna's RandomSampler distribution), exactly as
  :meth:`YahpoInstance.evaluate_batch` charges them: min, mean, median, max;
- ``budget = --multiple x mean cost`` (default 40), and what it buys a random search: the
  number of trials it starts while the finished trials have spent less than the budget (the
  project's stopping rule), median and 10-90% over 2000 bootstrap runs of those costs;
- ``f_star``: the smallest value of ``--n-search`` random configurations (batches of 1000),
  then polished by a local search from the best 16 (perturbations in the unit box, shrinking
  steps); its configuration is kept, and ``f_star`` is what :meth:`evaluate` returns for it.
  yahpo_data stores no raw runs (its ``data.csv`` files are not in the repository); its
  ``global_statistics/instance_target_statistics.csv`` holds the extremes of a 0.5M-point
  random search over the whole space (every fidelity and fold), kept as ``yahpo_stats_best``
  for comparison only.

Writes ``benchmarks/results/yahpo_calibration.json`` (read by the problem definitions) and
``yahpo_calibration.md``. Surrogate timings are measured and written to the Markdown file.

``--noisy`` (issue 51): for the rbv2 instances of the ``noisy-real`` group
(:data:`benchmarks.problems.yahpo.NOISY_REAL`), whose trials are observed at a replication
drawn per trial, the spread across the ten replications of ``--n-noisy`` random
configurations (per configuration the sd over the ten; its median and 10-90%) and the f* of
the noise-free value (the mean over the ten): the best mean of those configurations, polished
as above, each candidate then evaluated exactly (:func:`yahpo.mean_over_replications`), the
calibration's f* configuration among them. Writes ``yahpo_noisy_calibration.json``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import csv
import datetime
import json
import math
from pathlib import Path
import statistics
import time
from typing import Any
import zlib

import numpy as np

from benchmarks.problems import yahpo


RESULTS = Path(__file__).resolve().parent / "results"
MULTIPLE = 40.0
N_COST = 5000
N_SEARCH = 30000
N_BOOT = 2000
POLISH_TOP = 16
POLISH_ROUNDS = 25
POLISH_NEIGHBOURS = 64


# -- random search and polish ---------------------------------------------------------------


def _rng(seed: int, name: str) -> np.random.Generator:
    # NOTE: seeded by the instance's name, so adding an instance leaves the others unchanged.
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def random_search_trials(
    costs: np.ndarray, budget: float, rng: np.random.Generator, n_runs: int = N_BOOT
) -> np.ndarray:
    """Trials a random search starts under ``budget``, for ``n_runs`` bootstrap runs.

    Args:
        costs: Costs of random configurations, shape (n,).
        budget: The cost budget.
        rng: Resampling generator.
        n_runs: Number of simulated runs.

    Returns:
        Trials started per run, shape (n_runs,): a trial starts while the finished trials
        have spent less than the budget (so the last one may overrun it).
    """
    k = max(16, int(4 * budget / costs.mean()))
    while True:
        draws = rng.choice(costs, size=(n_runs, k))  # (n_runs, k)
        spent_before = np.cumsum(draws, axis=1) - draws  # (n_runs, k)
        if (spent_before[:, -1] >= budget).all():
            return (spent_before < budget).sum(axis=1)
        k *= 2


def _neighbour(
    inst: yahpo.YahpoInstance,
    params: dict[str, Any],
    sigma: float,
    rng: np.random.Generator,
    frozen: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A random neighbour: numbers moved in the unit box, a categorical (unless ``frozen``)
    switched now and then; parameters that become active get random values."""
    fresh = inst.sample(1, rng)[0]
    move = rng.random(len(inst.params)) < max(0.3, 1.0 / len(inst.params))  # (d,)
    out: dict[str, Any] = {}
    for p, m in zip(inst.params, move, strict=True):
        if not p.is_active(out):
            continue
        if p.name not in params:
            out[p.name] = fresh[p.name] if p.name in fresh else p.sample(1, rng)[0]
        elif p.kind == "cat":
            switch = p.name not in frozen and rng.random() < 0.15
            out[p.name] = p.sample(1, rng)[0] if switch else params[p.name]
        elif m:
            out[p.name] = p.from_unit(p.to_unit(params[p.name]) + sigma * rng.standard_normal())
        else:
            out[p.name] = params[p.name]
    return out


def polish(
    inst: yahpo.YahpoInstance,
    starts: list[dict[str, Any]],
    start_values: np.ndarray,
    rng: np.random.Generator,
    frozen: frozenset[str] = frozenset(),
) -> tuple[dict[str, Any], float, int]:
    """Local search from ``starts`` (values ``start_values``, shape (k,)); the categoricals in
    ``frozen`` keep their values.

    Returns:
        (best configuration, its batch value, evaluations spent).
    """
    pool = list(zip(start_values.tolist(), starts, strict=True))
    n_eval = 0
    for r in range(POLISH_ROUNDS):
        sigma = 0.1 * (0.05 ** (r / max(1, POLISH_ROUNDS - 1)))  # 0.1 -> 0.005
        cands = [
            _neighbour(inst, params, sigma, rng, frozen)
            for _, params in pool
            for _ in range(POLISH_NEIGHBOURS)
        ]
        values, _ = inst.predict(cands, check=False)  # (k * m,)
        n_eval += len(cands)
        merged = pool + list(zip(values.tolist(), cands, strict=True))
        merged.sort(key=lambda vp: vp[0])
        pool, seen = [], set()
        for v, params in merged:
            key = json.dumps(params, sort_keys=True)
            if key not in seen:
                seen.add(key)
                pool.append((v, params))
            if len(pool) == POLISH_TOP:
                break
    return pool[0][1], pool[0][0], n_eval


# -- yahpo's own statistics -----------------------------------------------------------------


def yahpo_stats_best(inst: yahpo.YahpoInstance, data_dir: Path) -> float | None:
    """Best value in yahpo's instance_target_statistics.csv (0.5M random points, all
    fidelities and folds), in our metric; None if the file or the row is missing."""
    path = data_dir / "global_statistics" / "instance_target_statistics.csv"
    if not path.is_file():
        return None
    metric, stat, to_error = {
        "rbv2_xgboost": ("acc", "max", lambda v: 1.0 - v),
        "rbv2_rpart": ("acc", "max", lambda v: 1.0 - v),
        "lcbench": ("val_accuracy", "max", lambda v: 1.0 - v / 100.0),
        "iaml_glmnet": ("mmce", "min", lambda v: v),
    }[inst.scenario]
    with path.open() as fh:
        for row in csv.DictReader(fh):
            if (row["scenario"], row["instance"], row["metric"], row["statistic"]) == (
                inst.scenario,
                inst.instance,
                metric,
                stat,
            ):
                return float(to_error(float(row["value"])))
    return None


# -- one instance ---------------------------------------------------------------------------


def calibrate(
    inst: yahpo.YahpoInstance,
    *,
    seed: int,
    multiple: float,
    n_cost: int,
    n_search: int,
    data_dir: Path,
) -> dict[str, Any]:
    """The calibration entry of one instance (see the module docstring)."""
    rng = _rng(seed, inst.name)
    t0 = time.perf_counter()

    cost_cfgs = inst.sample(n_cost, rng)
    _, costs = inst.evaluate_batch(cost_cfgs)  # (n_cost,)
    budget = multiple * float(costs.mean())
    trials = random_search_trials(costs, budget, rng)  # (N_BOOT,)

    cfgs = inst.sample(n_search, rng)
    raw_values, raw_times = inst.predict(cfgs)  # (n_search,), (n_search,)
    order = np.argsort(raw_values)
    best_rs = int(order[0])
    starts = [cfgs[i] for i in order[:POLISH_TOP]]
    best_params, best_polish, n_polish = polish(inst, starts, raw_values[order[:POLISH_TOP]], rng)
    if best_polish >= raw_values[best_rs]:
        best_params = cfgs[best_rs]
    best_value = min(best_polish, float(raw_values[best_rs]))

    # Conditional spaces: the best of each choice of the root categorical (XGBoost's booster),
    # from its own random configurations and a polish that keeps the choice.
    by_choice: dict[str, float] = {}
    root = inst.params[0]
    if inst.conditional and root.kind == "cat":
        for choice in root.choices:
            idx = np.array([i for i in order if cfgs[i][root.name] == choice])  # sorted
            params_c, value_c, n = polish(
                inst,
                [cfgs[i] for i in idx[:POLISH_TOP]],
                raw_values[idx[:POLISH_TOP]],
                rng,
                frozenset({root.name}),
            )
            n_polish += n
            by_choice[choice] = float(np.clip(min(value_c, raw_values[idx[0]]), 0.0, 1.0))
            if value_c < best_value:
                best_params, best_value = params_c, value_c
    f_star, _ = inst.evaluate(best_params)
    (f_star_raw,), _ = inst.predict([best_params])  # before clipping to [0, 1]

    entry = {
        "scenario": inst.scenario,
        "instance": inst.instance,
        "openml_id_kind": inst.openml_id_kind,
        "dim": inst.dim,
        "conditional": inst.conditional,
        "metric": inst.metric,
        "fidelity": inst.fidelity_name,
        "max_fidelity": inst.max_fidelity,
        "n_cost": n_cost,
        "cost_min": float(costs.min()),
        "cost_mean": float(costs.mean()),
        "cost_median": float(np.median(costs)),
        "cost_max": float(costs.max()),
        "budget_multiple": multiple,
        "budget": budget,
        "random_trials_median": float(np.median(trials)),
        "random_trials_p10": float(np.quantile(trials, 0.1)),
        "random_trials_p90": float(np.quantile(trials, 0.9)),
        "n_search": n_search,
        "random_search_best": float(np.clip(raw_values[best_rs], 0.0, 1.0)),
        "n_polish": n_polish,
        "polish_best": float(np.clip(best_polish, 0.0, 1.0)),
        "best_by_choice": by_choice,
        "f_star": float(f_star),
        "f_star_raw": float(f_star_raw),
        "f_star_params": best_params,
        "value_median": float(np.median(np.clip(raw_values, 0.0, 1.0))),
        "yahpo_stats_best": yahpo_stats_best(inst, data_dir),
        # surrogate oddities in the n_search random configurations:
        "n_value_outside_01": int(((raw_values < 0.0) | (raw_values > 1.0)).sum()),
        "n_value_zero": int((raw_values <= 1e-6).sum()),
        "n_time_below_floor": int((raw_times < yahpo.COST_FLOOR).sum()),
        "time_min_raw": float(raw_times.min()),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    return entry


# -- the noisy-real group -------------------------------------------------------------------

N_NOISY = 3000


class _MeanOverReplications:
    """An instance whose ``predict`` is the mean over the replications (for :func:`polish`)."""

    def __init__(self, inst: yahpo.YahpoInstance) -> None:
        self.inst = inst
        self.params = inst.params

    def sample(self, n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
        return self.inst.sample(n, rng)

    def by_replication(self, cfgs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
        """(values, times), each (10, n): clipped as ``evaluate`` clips them."""
        out = [
            yahpo.replication(self.inst, r).predict(cfgs, check=False) for r in yahpo.REPLICATIONS
        ]
        values = np.clip(np.array([v for v, _ in out]), 0.0, 1.0)  # (10, n)
        times = np.maximum(np.array([t for _, t in out]), yahpo.COST_FLOOR)  # (10, n)
        return values, times

    def predict(self, cfgs: list[dict[str, Any]], check: bool = False) -> tuple[np.ndarray, None]:
        return self.by_replication(cfgs)[0].mean(axis=0), None  # (n,)


def calibrate_noisy(inst: yahpo.YahpoInstance, *, seed: int, n: int) -> dict[str, Any]:
    """The entry of one instance of the noisy-real group (see the module docstring)."""
    rng = _rng(seed, inst.name + yahpo.NOISY_SUFFIX)
    t0 = time.perf_counter()
    mean_inst = _MeanOverReplications(inst)
    cfgs = inst.sample(n, rng)
    values, times = mean_inst.by_replication(cfgs)  # (10, n), (10, n)
    sd = values.std(axis=0, ddof=1)  # (n,)
    means = values.mean(axis=0)  # (n,)
    order = np.argsort(means)
    starts = [cfgs[i] for i in order[:POLISH_TOP]]
    polished, _, n_polish = polish(mean_inst, starts, means[order[:POLISH_TOP]], rng)  # type: ignore[arg-type]
    candidates = [polished, cfgs[int(order[0])], inst._calibration_entry()["f_star_params"]]
    exact = [yahpo.mean_over_replications(inst, c) for c in candidates]
    k = int(np.argmin([m for m, _, _ in exact]))
    f_star = exact[k][0]
    return {
        "n_configs": n,
        "repl_sd_median": float(np.median(sd)),
        "repl_sd_p10": float(np.quantile(sd, 0.1)),
        "repl_sd_p90": float(np.quantile(sd, 0.9)),
        "repl_sd_median_top10pct": float(np.median(sd[order[: max(1, n // 10)]])),
        "cost_repl_cv_median": float(np.median(times.std(axis=0, ddof=1) / times.mean(axis=0))),
        "mean_value_median": float(np.median(means)),
        "median_gap": float(np.median(means)) - f_star,
        "f_star": f_star,
        "f_star_params": candidates[k],
        "f_star_from": ("polish", "random search", "calibration's f* configuration")[k],
        "f_star_repl10": float(exact[k][2][-1]),
        "calibration_f_star": inst.f_star,
        "n_polish": n_polish,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main_noisy(names: Sequence[str], seed: int, n: int, out: Path) -> int:
    path = out / yahpo.NOISY_CALIBRATION_PATH.name
    out.mkdir(parents=True, exist_ok=True)
    old = json.loads(path.read_text()) if path.is_file() else {}
    entries = dict(old.get("instances", {}))  # the others are kept
    for name in names:
        e = entries[name] = calibrate_noisy(yahpo.get_instance(name), seed=seed, n=n)
        print(
            f"{name}: repl sd median {e['repl_sd_median']:.4f} (10-90% {e['repl_sd_p10']:.4f}"
            f"-{e['repl_sd_p90']:.4f}; best tenth {e['repl_sd_median_top10pct']:.4f}), "
            f"gap {e['median_gap']:.4f}, f* {e['f_star']:.4f} ({e['f_star_from']}), "
            f"{e['seconds']} s",
            flush=True,
        )
    data = {
        "meta": {
            "seed": seed,
            "n_configs": n,
            "date": datetime.date.today().isoformat(),
            "note": "sd over rbv2's ten replications (repl 1..10) per random configuration; "
            "f*: the best mean over the ten found (an estimate, not a bound)",
        },
        "instances": {name: entries[name] for name in yahpo.NOISY_REAL if name in entries},
    }
    path.write_text(json.dumps(data, indent=1, default=_json_default) + "\n")
    print(f"wrote {path}")
    return 0


# -- timing ---------------------------------------------------------------------------------


def time_surrogates(rng: np.random.Generator) -> dict[str, dict[str, float]]:
    """Wall-clock milliseconds of yahpo's objective_function: one configuration (median of 50
    calls) and a list of 1000 (median of 5), one ONNX thread; and our evaluate() per call."""
    out: dict[str, dict[str, float]] = {}
    done: set[str] = set()
    for inst in yahpo.INSTANCES:
        if inst.scenario in done:
            continue
        done.add(inst.scenario)
        bench = yahpo.benchmark_set(inst.scenario)
        cfgs = inst.sample(1000, rng)
        rows = [inst._row(c, inst.max_fidelity) for c in cfgs]
        bench.objective_function(rows[:10])  # warm-up
        one = []
        for r in rows[:50]:
            t = time.perf_counter()
            bench.objective_function(r)
            one.append(time.perf_counter() - t)
        batch = []
        for _ in range(5):
            t = time.perf_counter()
            bench.objective_function(rows)
            batch.append(time.perf_counter() - t)
        ev = []
        for c in cfgs[:50]:
            t = time.perf_counter()
            inst.evaluate(c)
            ev.append(time.perf_counter() - t)
        out[inst.scenario] = {
            "one_ms": 1e3 * statistics.median(one),
            "batch1000_ms": 1e3 * statistics.median(batch),
            "evaluate_ms": 1e3 * statistics.median(ev),
        }
    return out


# -- screen ---------------------------------------------------------------------------------


def screen(n: int, seed: int) -> str:
    """Markdown: for every instance of the four scenarios, costs and values of ``n`` random
    configurations at full fidelity (how the instances were chosen)."""
    spaces = [
        ("rbv2_xgboost", "conditional", yahpo.XGB_CONDITIONAL_SPACE, ()),
        ("rbv2_xgboost", "gbtree", yahpo.XGB_FIXED_SPACE, (("booster", "gbtree"),)),
        ("rbv2_rpart", "", yahpo.RPART_SPACE, ()),
        ("lcbench", "", yahpo.LCBENCH_SPACE, ()),
        ("iaml_glmnet", "", yahpo.GLMNET_SPACE, ()),
    ]
    lines = [
        f"# YAHPO instance screen ({n} random configurations per instance, full fidelity)",
        "",
        "sd log cost: spread of log(cost); good/median cost: median cost of the best 10% of "
        "configurations over the median cost (> 1: good configurations cost more); "
        "artefacts: configurations with error <= 1e-3 or time <= 0.124 s (the rbv2_xgboost "
        "surrogate's floor), and in the conditional XGBoost space dart configurations whose "
        "error is below the best gblinear/gbtree one by more than 0.01. Sorted by sd log cost.",
    ]
    chosen = {(i.scenario, i.instance) for i in yahpo.INSTANCES}
    for scenario, label, space, fixed in spaces:
        bench = yahpo.benchmark_set(scenario)
        key = yahpo._SCENARIO_INFO[scenario].instance_key
        ids = list(bench.config_space.get_hyperparameter(key).choices)
        rows = []
        for i in ids:
            inst = yahpo.YahpoInstance(f"screen-{i}", scenario, str(i), space, fixed)
            cfgs = inst.sample(n, _rng(seed, f"screen-{scenario}-{label}-{i}"))
            v, t = inst.predict(cfgs, check=False)  # (n,), (n,)
            lt = np.log(np.maximum(t, yahpo.COST_FLOOR))
            good = v <= np.quantile(v, 0.1)
            art = int(((v <= 1e-3) | (t <= 0.124)).sum())
            if label == "conditional":
                dart = np.array([c["booster"] == "dart" for c in cfgs])  # (n,)
                art += int((v[dart] < v[~dart].min() - 0.01).sum())
            ratio = np.median(t[good]) / np.median(t)
            rows.append((i, t.min(), np.median(t), t.max(), lt.std(), *_stats(v), ratio, art))
        rows.sort(key=lambda r: -r[4])
        title = f"{scenario} {label}".strip()
        lines += ["", f"## {title}", ""]
        lines.append(
            "| id | chosen | cost min | cost median | cost max | sd log cost | error min | "
            "error median | error max | good/median cost | artefacts |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            mark = "yes" if (scenario, str(r[0])) in chosen else ""
            lines.append(
                f"| {r[0]} | {mark} | {r[1]:.3g} | {r[2]:.3g} | {r[3]:.4g} | {r[4]:.2f} | "
                f"{r[5]:.3f} | {r[6]:.3f} | {r[7]:.3f} | {r[8]:.2f} | {r[9]} |"
            )
    return "\n".join(lines) + "\n"


def _stats(v: np.ndarray) -> tuple[float, float, float]:
    return float(v.min()), float(np.median(v)), float(v.max())


# -- report ---------------------------------------------------------------------------------


def _g(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1e4 else f"{x:,.0f}"


def markdown(data: dict[str, Any]) -> str:
    meta = data["meta"]
    lines = [
        "# YAHPO instances: costs, budgets and best known values",
        "",
        f"Written by `python -m benchmarks suite calibrate-yahpo` ({meta['date']}; yahpo_gym "
        f"{meta['yahpo_gym']}, data {meta['data_version']}, ConfigSpace {meta['configspace']}, "
        f"onnxruntime {meta['onnxruntime']}, seed {meta['seed']}). Value: validation error to "
        f"minimize; cost: the surrogate's training time (s), at least {yahpo.COST_FLOOR} s. "
        f"Costs from {meta['n_cost']} random configurations at full fidelity; budget = "
        f"{_g(meta['multiple'])} x mean cost; trials: what a random search starts under the "
        "budget (median [10%, 90%], 2000 bootstrap runs); f_star: best of "
        f"{meta['n_search']:,} random configurations and a local polish; yahpo stats: best of "
        "yahpo's 0.5M-point random search over every fidelity and fold (not a bound for these "
        "spaces).",
        "",
        "| instance | scenario | id | d | conditional | cost min | cost mean | cost max | budget "
        "| random trials | f_star | random best | median error | yahpo stats | metric |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, e in data["instances"].items():
        stats = "" if e["yahpo_stats_best"] is None else f"{e['yahpo_stats_best']:.4f}"
        lines.append(
            f"| {name} | {e['scenario']} | {e['instance']} | {e['dim']} | "
            f"{'yes' if e['conditional'] else 'no'} | {_g(e['cost_min'])} | "
            f"{_g(e['cost_mean'])} | {_g(e['cost_max'])} | {_g(e['budget'])} | "
            f"{e['random_trials_median']:.0f} [{e['random_trials_p10']:.0f}, "
            f"{e['random_trials_p90']:.0f}] | {e['f_star']:.4f} | "
            f"{e['random_search_best']:.4f} | {e['value_median']:.3f} | {stats} | "
            f"{e['metric']} |"
        )
    odd = [
        f"- {name}: {e['n_value_outside_01']} values outside [0, 1], {e['n_value_zero']} "
        f"errors of 0, {e['n_time_below_floor']} times below the floor (raw minimum "
        f"{e['time_min_raw']:.3g} s)"
        for name, e in data["instances"].items()
        if e["n_value_outside_01"] or e["n_value_zero"] or e["n_time_below_floor"]
    ]
    lines += ["", f"Surrogate oddities in the {meta['n_search']:,} random configurations:", ""]
    lines += odd or ["- none (no value outside [0, 1], no error of 0, no time below the floor)"]
    raw = [
        f"- {name}: the surrogate's error at f_star's configuration is {e['f_star_raw']:.3g} "
        "(clipped to [0, 1])"
        for name, e in data["instances"].items()
        if not 0.0 <= e["f_star_raw"] <= 1.0
    ]
    if raw:
        lines += ["", "Found by the polish:", "", *raw]
    cond = [(name, e) for name, e in data["instances"].items() if e.get("best_by_choice")]
    if cond:
        choices = list(next(iter(cond))[1]["best_by_choice"])
        lines += [
            "",
            "Conditional spaces: best value found per choice of the root parameter (random "
            "configurations with that choice, then a polish that keeps it).",
            "",
            "| instance | " + " | ".join(choices) + " |",
            "|---|" + "---|" * len(choices),
        ]
        for name, e in cond:
            cells = " | ".join(f"{e['best_by_choice'][c]:.4f}" for c in choices)
            lines.append(f"| {name} | {cells} |")
    if "timing" in data:
        lines += [
            "",
            "Surrogate time (ms, one ONNX thread, shared 2-core machine): yahpo's "
            "objective_function on one configuration and on a list of 1000; our evaluate() "
            "(lcbench: all 52 epochs, for the monotone cost).",
            "",
            "| scenario | one config | 1000 configs | evaluate() |",
            "|---|---|---|---|",
        ]
        for scen, t in data["timing"].items():
            lines.append(
                f"| {scen} | {t['one_ms']:.2f} | {t['batch1000_ms']:.0f} | "
                f"{t['evaluate_ms']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def _versions(data_dir: Path) -> dict[str, str]:
    from importlib import metadata

    version_file = data_dir / "VERSION"
    data_version = version_file.read_text().strip() if version_file.is_file() else "unknown"
    return {
        "yahpo_gym": metadata.version("yahpo_gym"),
        "configspace": metadata.version("ConfigSpace"),
        "onnxruntime": metadata.version("onnxruntime"),
        "numpy": np.__version__,
        "data_version": data_version.replace("VERSION:", ""),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", nargs="*", help="only these (entries merged into the JSON)")
    ap.add_argument("--multiple", type=float, default=MULTIPLE)
    ap.add_argument("--n-cost", type=int, default=N_COST)
    ap.add_argument("--n-search", type=int, default=N_SEARCH)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--no-timing", action="store_true", help="keep the previous timings")
    ap.add_argument("--screen", action="store_true", help="write yahpo_screen.md and stop")
    ap.add_argument("--screen-n", type=int, default=3000)
    ap.add_argument(
        "--noisy", action="store_true", help="write yahpo_noisy_calibration.json and stop"
    )
    ap.add_argument("--n-noisy", type=int, default=N_NOISY)
    args = ap.parse_args(argv)
    if args.noisy:
        return main_noisy(args.instances or yahpo.NOISY_REAL, args.seed, args.n_noisy, args.out)

    data_dir = yahpo.yahpo_data_dir()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.screen:
        (args.out / "yahpo_screen.md").write_text(screen(args.screen_n, args.seed))
        print(f"wrote {args.out / 'yahpo_screen.md'}")
        return 0

    json_path = args.out / "yahpo_calibration.json"
    names = args.instances or [i.name for i in yahpo.INSTANCES]
    settings = {
        "seed": args.seed,
        "multiple": args.multiple,
        "n_cost": args.n_cost,
        "n_search": args.n_search,
        "cost_floor": yahpo.COST_FLOOR,
    }
    old: dict[str, Any] = json.loads(json_path.read_text()) if json_path.is_file() else {}
    if args.instances and old:
        differ = {k: (old["meta"].get(k), v) for k, v in settings.items()}
        differ = {k: v for k, v in differ.items() if v[0] != v[1]}
        if differ:
            ap.error(f"settings differ from {json_path} (old, new): {differ}; re-run all")
    entries = dict(old.get("instances", {})) if args.instances else {}
    for name in names:
        inst = yahpo.get_instance(name)
        entries[name] = calibrate(
            inst,
            seed=args.seed,
            multiple=args.multiple,
            n_cost=args.n_cost,
            n_search=args.n_search,
            data_dir=data_dir,
        )
        e = entries[name]
        print(
            f"{name}: cost mean {e['cost_mean']:.3g} budget {e['budget']:.4g} "
            f"trials {e['random_trials_median']:.0f} f_star {e['f_star']:.4f} "
            f"(random {e['random_search_best']:.4f}) {e['seconds']} s",
            flush=True,
        )
    order = [i.name for i in yahpo.INSTANCES if i.name in entries]
    data: dict[str, Any] = {
        "meta": {
            **settings,
            **_versions(data_dir),
            "date": datetime.date.today().isoformat(),
            "budget_rule": f"budget = {args.multiple:g} x mean cost of {args.n_cost} random "
            "configurations at full fidelity",
        },
        "instances": {name: entries[name] for name in order},
    }
    if args.no_timing and "timing" in old:
        data["timing"] = old["timing"]
    elif not args.no_timing:
        data["timing"] = time_surrogates(np.random.default_rng(args.seed))
    json_path.write_text(json.dumps(data, indent=1, default=_json_default) + "\n")
    (args.out / "yahpo_calibration.md").write_text(markdown(data))
    print(f"wrote {json_path} and yahpo_calibration.md")
    return 0


def _json_default(x: Any) -> Any:
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x) if math.isfinite(float(x)) else None
    raise TypeError(f"not JSON serializable: {type(x)}")


if __name__ == "__main__":  # the former way, python -m benchmarks.yahpo_calibrate
    from benchmarks import _preamble

    _preamble.forward("suite", "calibrate-yahpo")
