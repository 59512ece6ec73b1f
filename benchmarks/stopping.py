"""When to stop: cost-adjusted regret of stopping rules and fixed budgets (issue 27).

    python -m benchmarks stopping --seeds 5 --jobs 2 --resume        # the synthetic suite
    python -m benchmarks stopping --groups real --seeds 3 --resume    # YAHPO Gym (its venv)
    python -m benchmarks stopping --report-only                       # tables from the cache

The measure (Xie, Cai et al., "Cost-aware Stopping for Bayesian Optimization", ICML 2026) is
the cost-adjusted simple regret of a run that stops on its own,

    CAR = (best value found - f*) + value_per_cost x (cost spent),

for a user whose exchange rate is ``value_per_cost`` (objective units per cost unit). Each
problem gets its exchange rates from its own scale, before any method runs:
``value_per_cost = kappa x R0 / B``, with ``B`` the suite budget and ``R0`` the regret after a
start-up design (the median over 2000 bootstrap draws of the best of ``2(d+1)`` random
configurations, from 512 random evaluations). So ``kappa = 1`` prices the whole suite budget
at the regret a start-up design leaves (stop early), ``kappa = 0.1`` at a tenth of it (go on).
Reports give ``CAR / R0 = regret / R0 + kappa x cost / B``, comparable across problems. For
the real group, f* in the regret is the best known value (:func:`best_value`); R0 and the
rates are the calibration's.

The policies, all with this package's default acquisition unless named otherwise:

- ``fixed xB``: ``CostRolloutSampler(budget=x B)`` for x in 0.25, 0.5, 1, 2 (what a user
  who guesses a budget gets; run once, scored at every kappa);
- ``rule``: ``CostRolloutSampler(None, value_per_cost=...)``, the package's rule (stop when
  max_x EI(x) / c(x) < value_per_cost);
- ``Xie et al. (LogEIPC)``: the same rule paired with EI per unit cost
  (``acquisition="eipu"``), the pairing Xie et al. analyse (their rule stops when the largest
  LogEIPC is below log value_per_cost; here the cost is this package's log-cost GP);
- ``TPE + CostAwareStopping``: the rule as a callback on Optuna's TPE;
- ``rule (PBGI)``: the same rule paired with the Pandora's-box Gittins index (Xie et al.,
  NeurIPS 2024), which prices cost at value_per_cost as the rule does (the ``pbgi`` method,
  ``harness/gittins.py``; measured and not adopted, so not in the package). This module's own
  report tables the other policies; ``stopping_threshold.py --live`` tables this one too;
- ``Terminator``: Optuna's ``Terminator`` (regret bound with its paired median error
  evaluator, for objectives without cross-validation scores) on the default sampler given the
  cap as budget; it is blind to cost, so one run serves every kappa.

Every adaptive policy runs under a cap of ``--cap`` x B (default 3; ``max_trials`` 150): a run
that reaches it is counted as it is (it did not stop by itself) and flagged.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
import json
import math
from pathlib import Path
import sys
from typing import Any

import numpy as np

from benchmarks.harness import best_known
from benchmarks.harness import cache
from benchmarks.harness import methods as methods_mod
from benchmarks.harness import report
from benchmarks.harness import runner
from benchmarks.harness import stats
from benchmarks.harness.problem import Problem


DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "stopping"
FIXED = (0.25, 0.5, 1.0, 2.0)
KAPPAS = (1.0, 0.1)
ADAPTIVE_MAX_TRIALS = 150
N_RANDOM = 512
N_BOOT = 2000


@dataclass(frozen=True)
class Policy:
    """One stopping policy on one problem: a label, the problem as run, the method name, and
    the kappa it was made for (None: it does not depend on kappa)."""

    label: str
    problem: Problem
    method: str
    kappa: float | None = None


_SCALES: dict[str, float] = {}
SCALES_FILE = "scales.json"
"""R0 of each problem by fingerprint, in the output folder (reports need no re-evaluation)."""


def load_scales(out: Path) -> None:
    path = out / SCALES_FILE
    if path.is_file():
        _SCALES.update(json.loads(path.read_text()))


def save_scales(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / SCALES_FILE).write_text(json.dumps(_SCALES, indent=1, sort_keys=True) + "\n")


def reference_regret(problem: Problem) -> float:
    """R0 of ``problem`` (computed once per definition, see :func:`random_regret`)."""
    for fingerprint in sorted(problem.fingerprints):  # written in another environment
        if f"{problem.name}:{fingerprint}" in _SCALES:
            return _SCALES[f"{problem.name}:{fingerprint}"]
    key = f"{problem.name}:{problem.fingerprint}"
    _SCALES[key] = random_regret(problem)
    return _SCALES[key]


def random_regret(problem: Problem, n: int = N_RANDOM, seed: int = 0) -> float:
    """R0: the median regret of the best of ``problem.n_startup`` random configurations
    (``n`` random evaluations through the problem's own ``suggest``, then ``N_BOOT``
    bootstrap groups). Needs ``problem.f_star``."""
    import optuna

    if problem.f_star is None:
        raise ValueError(f"{problem.name}: the stopping benchmark needs a known f*")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    values = np.empty(n)  # (n,)
    for k in range(n):
        trial = study.ask()
        values[k] = problem.evaluate(problem.suggest(trial), None)[0]
        study.tell(trial, float(values[k]))
    regrets = np.maximum(values - problem.f_star, 0.0)
    rng = np.random.default_rng(seed)
    groups = rng.choice(regrets, size=(N_BOOT, problem.n_startup), replace=True)
    return float(np.median(groups.min(axis=1)))


def rate(problem: Problem, kappa: float) -> float:
    """value_per_cost = kappa x R0 / B."""
    return kappa * reference_regret(problem) / problem.budget


def _fmt_rate(x: float) -> str:
    return f"{x:.4g}"


def policies(problem: Problem, kappas: Sequence[float], cap: float) -> list[Policy]:
    """Every policy on ``problem`` (see the module docstring)."""
    out = [
        Policy(
            f"fixed {x:g}B",
            problem.variant(f"b{x:g}", budget=x * problem.budget),
            "rollout",
        )
        for x in FIXED
    ]
    capped = problem.variant(
        f"cap{cap:g}", budget=cap * problem.budget, max_trials=ADAPTIVE_MAX_TRIALS
    )
    out.append(Policy("Terminator", capped, "rollout@terminator"))
    for kappa in kappas:
        lam = _fmt_rate(rate(problem, kappa))
        out += [
            Policy("rule", capped, f"rollout:budget=none,value_per_cost={lam}", kappa),
            Policy(
                "Xie et al. (LogEIPC)", capped, f"eipu:budget=none,value_per_cost={lam}", kappa
            ),
            Policy("TPE + CostAwareStopping", capped, f"optuna-tpe@cost-aware={lam}", kappa),
            Policy("rule (PBGI)", capped, f"pbgi:budget=none,value_per_cost={lam}", kappa),
        ]
    return out


_BEST_KNOWN: dict[str, dict[str, Any]] | None = None


def best_value(problem: Problem) -> float:
    """The value regrets are taken against: f*, or for a YAHPO problem the lower of f* and the
    best stored run (``benchmarks/results/yahpo_best_known.json``, the suite's table, which
    counts this benchmark's runs of the problem's budget variants). R0 and the exchange rates
    stay those of the calibration's f* (they fix the rule's runs); only the regret's offset
    moves."""
    global _BEST_KNOWN
    if _BEST_KNOWN is None:
        from benchmarks.suite.run import BEST_KNOWN

        _BEST_KNOWN = best_known.load(BEST_KNOWN)
    f_star = best_known.rescored(problem, _BEST_KNOWN).f_star
    assert f_star is not None
    return f_star


def scaled_car(run: runner.Run, problem: Problem, cap_problem: Problem, kappa: float) -> dict:
    """The run's regret / R0, cost / B and CAR / R0 at ``kappa`` (a run without a finite
    value has regret R0 x 10: worse than any start-up design); the regret against
    :func:`best_value`."""
    r0 = reference_regret(problem)
    finite = [v for v in run.values if math.isfinite(v)]
    regret = max(min(finite) - best_value(problem), 0.0) / r0 if finite else 10.0
    total = float(np.nansum(run.costs))  # a trial the rule skipped has no cost: nan
    spent = total / problem.budget
    at_cap = run.capped or total >= cap_problem.budget
    return {"regret": regret, "cost": spent, "car": regret + kappa * spent, "at_cap": at_cap}


def problems_of(groups: Sequence[str], names: Sequence[str] | None) -> list[Problem]:
    from benchmarks.suite.run import all_problems

    known = all_problems(groups)
    unknown = [n for n in names or () if n not in known]
    if unknown:
        raise SystemExit(f"unknown problems {unknown} in groups {list(groups)}")
    return [known[n] for n in (names or known)]


def collect(
    problems: Sequence[Problem],
    kappas: Sequence[float],
    cap: float,
    seeds: Sequence[int],
    root: Path,
) -> dict[tuple[float, str, str, int], dict]:
    """(kappa, problem, policy label, seed) -> scaled CAR entry, from the cached runs."""
    out: dict[tuple[float, str, str, int], dict] = {}
    for p in problems:
        pols = policies(p, kappas, cap)
        capped = cap_problem(pols)
        for pol in pols:
            for s in seeds:
                for kappa, entry in policy_run_scores(root, p, pol, s, kappas, capped).items():
                    out[(kappa, p.name, pol.label, s)] = entry
    return out


def cap_problem(pols: Sequence[Policy]) -> Problem:
    """The capped variant the adaptive policies of :func:`policies` run on."""
    return next(q.problem for q in pols if q.label == "Terminator")


def policy_run_scores(
    root: Path, problem: Problem, pol: Policy, seed: int, kappas: Sequence[float],
    capped: Problem, score: Callable[[runner.Run, Problem, Problem, float], dict] = scaled_car,
) -> dict[float, dict]:  # fmt: skip
    """kappa -> ``score`` (default :func:`scaled_car`) of the cached run of ``pol`` on
    ``problem`` at ``seed``, at every rate for a policy blind to the rate (fixed budgets, the
    Terminator) and at its own rate otherwise; empty when the cache has no valid run."""
    run = cache.load_valid(root, pol.problem, pol.method, seed)
    if run is None:
        return {}
    rates = tuple(kappas) if pol.kappa is None else (pol.kappa,)
    return {kappa: score(run, problem, capped, kappa) for kappa in rates}


def labels(kappas: Sequence[float]) -> list[str]:
    return [f"fixed {x:g}B" for x in FIXED] + [
        "Terminator",
        "rule",
        "Xie et al. (LogEIPC)",
        "TPE + CostAwareStopping",
    ]


def kappa_section(
    entries: dict[tuple[float, str, str, int], dict],
    problems: Sequence[Problem],
    seeds: Sequence[int],
    kappa: float,
) -> list[str]:
    """The table of one kappa: per policy, mean CAR / R0 (+- se over problem means), its
    regret and cost parts, the mean rank within each (problem, seed), runs at the cap, and
    the rule's paired verdicts against it (per problem, Wilcoxon over seeds)."""
    names = [p.name for p in problems]
    pols = labels([kappa])
    rows = []
    cells: dict[str, list[float]] = {lab: [] for lab in pols}
    for name in names:
        for s in seeds:
            vals = np.array(
                [entries.get((kappa, name, lab, s), {}).get("car", np.nan) for lab in pols]
            )
            if np.isfinite(vals).all():
                for lab, r in zip(pols, stats.ranks_in_cell(vals), strict=True):
                    cells[lab].append(float(r))
    for lab in pols:
        per_problem = []
        regret, cost, at_cap, n = [], [], 0, 0
        for name in names:
            es = [
                entries[(kappa, name, lab, s)] for s in seeds if (kappa, name, lab, s) in entries
            ]
            if es:
                per_problem.append(float(np.mean([e["car"] for e in es])))
                regret += [e["regret"] for e in es]
                cost += [e["cost"] for e in es]
                at_cap += sum(e["at_cap"] for e in es)
                n += len(es)
        verdicts = {"better": 0, "same": 0, "worse": 0}
        if lab != "rule":
            for name in names:
                a = [entries.get((kappa, name, "rule", s), {}).get("car", np.nan) for s in seeds]
                b = [entries.get((kappa, name, lab, s), {}).get("car", np.nan) for s in seeds]
                if np.isfinite(a).any() and np.isfinite(b).any():
                    verdicts[stats.paired(a, b).verdict] += 1
        mean, se = stats.mean_se(per_problem) if per_problem else (math.nan, math.nan)
        rows.append(
            [
                lab,
                report.pm(mean, se),
                report.fmt(float(np.mean(regret)) if regret else math.nan),
                report.fmt(float(np.mean(cost)) if cost else math.nan),
                report.fmt(float(np.mean(cells[lab])) if cells[lab] else math.nan, 2),
                f"{at_cap}/{n}",
                "-" if lab == "rule" else "{better} / {same} / {worse}".format(**verdicts),
            ]
        )
    header = [
        "policy",
        "CAR / R0 (mean +- se over problems)",
        "regret / R0",
        "cost / B",
        "mean rank",
        "at the cap",
        "rule better / same / worse (problems)",
    ]
    return [f"### kappa = {kappa:g}", "", *report.table(header, rows), ""]


def write_report(
    out: Path,
    problems: Sequence[Problem],
    kappas: Sequence[float],
    cap: float,
    seeds: Sequence[int],
    command: str,
) -> Path:
    entries = collect(problems, kappas, cap, seeds, out / "runs")
    lines = [
        "# Stopping: cost-adjusted regret (issue 27)",
        "",
        f"Command: `{command}`. Problems: {', '.join(p.name for p in problems)}; "
        f"{report.seed_text(seeds)}; cap {cap:g} x B for the adaptive policies.",
        "",
        "CAR / R0 = regret / R0 + kappa x cost / B (see `benchmarks/stopping.py`). Lower is "
        "better. Verdicts: the rule against each policy, per problem, two-sided Wilcoxon "
        "signed-rank over the seeds, p < 0.05, direction from the signed-rank sums.",
        "",
    ]
    for kappa in kappas:
        lines += kappa_section(entries, problems, seeds, kappa)
    scales = {p.name: {"R0": reference_regret(p), "B": p.budget} for p in problems}
    lines += ["Scales (R0, B):", "", "```", json.dumps(scales, indent=1), "```", ""]
    lines.append(report.versions_line(None))
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--groups",
        nargs="+",
        default=["adversarial", "control"],
        choices=["adversarial", "control", "real"],
    )
    parser.add_argument("--problems", nargs="+", default=None)
    parser.add_argument("--kappas", nargs="+", type=float, default=list(KAPPAS))
    parser.add_argument("--cap", type=float, default=3.0)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser.parse_args(argv)


def rate_probe(sampler: Any, study: Any) -> dict[str, Any]:
    """What the rule read at each trial (its largest log(EI / c), None where it read none) and
    the log EI of the trial's own point: ``benchmarks/stopping_threshold.py`` replays the rule
    at higher exchange rates, and with the model's expectations discounted, from them."""
    from optuna_costbo._ledger.keys import CHOSEN_EI_ATTR
    from optuna_costbo._ledger.keys import NEXT_RATE_ATTR

    trials = study.get_trials(deepcopy=False)
    return {
        "log_rates": [t.system_attrs.get(NEXT_RATE_ATTR) for t in trials],
        "chosen_log_ei": [t.system_attrs.get(CHOSEN_EI_ATTR) for t in trials],
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    load_scales(args.out)
    problems = problems_of(args.groups, args.problems)
    seeds = list(range(args.seeds))
    if not args.report_only:
        tasks: list[tuple[Any, str, int]] = []
        for p in problems:
            for pol in policies(p, args.kappas, args.cap):
                why = methods_mod.unavailable(methods_mod.resolve(pol.method))
                if why:
                    raise SystemExit(f"{pol.method}: {why}")
                tasks += [(pol.problem, pol.method, s) for s in seeds]
        unique = {(p.name, m, s): (p, m, s) for p, m, s in tasks}
        save_scales(args.out)
        tasks = list(unique.values())
        runner.run_tasks(
            tasks, args.out / "runs", resume=args.resume, jobs=args.jobs, probe=rate_probe
        )
    command = "python -m benchmarks stopping " + " ".join(sys.argv[1:] if argv is None else argv)
    path = write_report(args.out, problems, args.kappas, args.cap, seeds, command.strip())
    save_scales(args.out)
    print(f"report: {path}", flush=True)
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.stopping
    from benchmarks import _preamble

    _preamble.forward("stopping")
