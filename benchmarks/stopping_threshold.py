"""Stopping rules replayed from recorded runs (issue 27).

The rule stops a study at the first trial whose largest log(EI / c) is below
log(value_per_cost). Every model trial of a rule run records that rate
(``costbo:best_log_rate``, kept by ``benchmarks/stopping.py`` as ``log_rates``) and the log EI
of its own point (``costbo:chosen_log_ei``), so a rule that reads only these is exactly the
run cut at its own stop: the trials before it are the same trials, and the cut trial would
have cost nothing.

From a run of the rule itself, only rules that never stop later can be replayed (``rule x
tau`` with tau >= 1, the discount of :func:`cut_calibrated`). A *records run*, the rule at
:data:`RECORDS_RATE` (``--run``), never stops by the rule and goes on to the cap; with
``budget=None`` the proposals do not depend on value_per_cost, so every rule's run is a prefix
of it and every :class:`Variant` replays exactly (:func:`same_trials` checks the premise on
the rule's own runs, and the report says how many agreed).

The protocol of issue 25 applies: the variant is chosen on the tuning half of the problems (the
lowest mean CAR / R0 over both kappas) and reported on the confirmation half and over all
problems, next to the fixed budgets of the same report folder; ``--real-out`` pools the
synthetic folder with the real group's.

    python -m benchmarks stopping threshold --run --jobs 2 --out benchmarks/results/stopping_rates
    python -m benchmarks stopping threshold --out benchmarks/results/stopping_rates
    python -m benchmarks stopping threshold --groups adversarial control real \
        --out benchmarks/results/stopping_rates --real-out benchmarks/results/stopping_real_rates \
        --real-seeds 3 --report benchmarks/results/stopping_pooled/threshold.md

``--family warmup`` replays instead the shipped rule and its patient variant with a warm-up (no
stop before a number of trials; :data:`WARMUP_VARIANTS`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import dataclasses
import math
from pathlib import Path
import sys

import numpy as np

from benchmarks import stopping
from benchmarks.harness import cache
from benchmarks.harness import report
from benchmarks.harness import runner
from benchmarks.harness import stats
from benchmarks.harness.problem import Problem
from benchmarks.harness.problem import split
from optuna_costbo._sampler.stopping import running_calibrations


TAUS = (1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
WEIGHTS = (1.0, 3.0, 10.0)
"""Pseudo-trials of the calibrated rule's prior (see :func:`cut_calibrated`)."""


RECORDS_RATE = 1e-300
"""value_per_cost of a records run: the rule never fires in practice (log 1e-300 = -690.8; a
rate below it is below every practical threshold too), so the run goes on to the cap with
what the rule read at every trial. Every variant, one that stops later than the shipped rule
included, is that run cut at its own stop, exactly: the proposals do not depend on
value_per_cost (with ``budget=None`` the remaining budget is unbounded for every rule)."""


@dataclasses.dataclass(frozen=True)
class Variant:
    """A stopping rule replayed from recorded rates: stop at the ``patience``-th model trial in
    a row whose best rate, times the calibration ``k`` (1 without ``weight``; at most
    ``ceiling``), is below ``tau x value_per_cost``. The trials before the stop are paid, the
    stopping trial costs nothing."""

    label: str
    tau: float = 1.0
    weight: float | None = None
    ceiling: float = 1.0
    patience: int = 1
    min_startups: float = 0.0
    """A warm-up: no stop before this many times the run's start-up trials (the trials before
    the first recorded rate)."""
    min_trials: int = 0
    """A warm-up in trials (Optuna's Terminator waits for ``min_n_trials=20``)."""

    @property
    def needs_records(self) -> bool:
        """True if it can stop later than the shipped rule: only a records run replays it."""
        return (
            self.tau < 1.0
            or self.ceiling > 1.0
            or self.patience > 1
            or self.min_startups > 1.0
            or self.min_trials > 0
        )


SHIPPED = Variant("calibrated w=1", weight=1.0)
PATIENT = Variant("calibrated w=1, 2 in a row", weight=1.0, patience=2)
VARIANTS = (
    *(Variant(f"rule x {t:g}", tau=t) for t in TAUS),
    *(Variant(f"calibrated w={w:g}", weight=w) for w in WEIGHTS),
    # Fixed before the records runs were made (issue 27, fourth session): promises exceeded
    # raise the rate as promises unmet lower it; a rule that waits for m low rates in a row.
    *(Variant(f"two-sided w={w:g}", weight=w, ceiling=math.inf) for w in WEIGHTS),
    PATIENT,
    Variant("calibrated w=1, 3 in a row", weight=1.0, patience=3),
)
WARMUPS = (2.0, 3.0, 4.0)
"""Warm-ups in start-ups (the run's own: 2 (d + 1) trials in the records runs made before
d415475e, so 4, 6 and 8 (d + 1) there; d + 1 after, so 2, 3 and 4 (d + 1)). One start-up is the
base rule itself: it reads nothing before the first model trial."""
WARMUP_VARIANTS = tuple(
    variant
    for base in (SHIPPED, PATIENT)
    for variant in (
        base,
        *(
            dataclasses.replace(
                base, label=f"{base.label}, warm-up {m:g}x start-up", min_startups=m
            )
            for m in WARMUPS
        ),
        dataclasses.replace(base, label=f"{base.label}, warm-up 20 trials", min_trials=20),
    )
)
"""Fixed before their replays (twelfth session, issue 27; the rule written first is
``benchmarks/results/stopping_lbfgsb_pooled/warmup_PREREG.md``): each base rule, and each not
allowed to stop before a warm-up."""
FAMILIES = {"rates": VARIANTS, "warmup": WARMUP_VARIANTS}


def two_sided_calibrations(
    values: Sequence[float], log_eis: Sequence[float | None], weight: float, ceiling: float
) -> list[float]:
    """The package's ``running_calibrations`` with ``k`` capped at ``ceiling`` instead of 1
    (the two-sided variants, which lost: the package dropped its ``ceiling`` in 0.2)."""
    out = []
    best = math.inf
    gained = expected = 0.0
    count = 0
    for value, log_ei in zip(values, log_eis, strict=True):
        if log_ei is None:
            out.append(1.0)
        else:
            prior = weight * (expected + math.exp(log_ei)) / (count + 1)
            out.append(min(ceiling, (gained + prior) / (expected + prior)))
        if not math.isfinite(value):
            continue
        if log_ei is not None:
            gained += max(0.0, best - value) if math.isfinite(best) else 0.0
            expected += math.exp(log_ei)
            count += 1
        best = min(best, value)
    return out


def cut(run: runner.Run, log_lam: float, variant: Variant) -> runner.Run | None:
    """The run as ``variant`` at ``exp(log_lam)`` would have made it; None if the run lacks
    the records the variant reads."""
    rates = run.meta.get("log_rates")
    n = len(run.costs)
    if not rates or len(rates) != n:
        return None
    ks = [1.0] * n
    log_eis: list[float | None] = [None] * n
    if variant.weight is not None:
        chosen = run.meta.get("chosen_log_ei")
        if not chosen or len(chosen) != n:
            return None
        # A model trial records both; the package's own running calibration, on the record.
        log_eis = [c if r is not None else None for r, c in zip(rates, chosen, strict=True)]
        if variant.ceiling > 1.0:
            ks = two_sided_calibrations(run.values, log_eis, variant.weight, variant.ceiling)
        else:
            ks = running_calibrations(run.values, log_eis, variant.weight)
    threshold = log_lam + math.log(variant.tau)
    startup = next((i for i, rate in enumerate(rates) if rate is not None), n)
    first = max(variant.min_startups * startup, variant.min_trials)
    stop, below = n, 0
    for i, rate in enumerate(rates):
        if rate is None or (variant.weight is not None and log_eis[i] is None):
            continue
        if rate + math.log(max(ks[i], 1e-300)) < threshold:
            below += 1
            if below >= variant.patience and i >= first:
                stop = i
                break
        else:
            below = 0
    return dataclasses.replace(
        run, costs=run.costs[:stop], values=run.values[:stop], capped=run.capped and stop == n
    )


def cut_at(run: runner.Run, log_threshold: float) -> runner.Run | None:
    """The run as the rule at ``exp(log_threshold)`` would have made it: the trials before the
    first whose recorded rate is below the threshold; None if the run has no rates."""
    return cut(run, log_threshold, Variant("rule"))


def cut_calibrated(run: runner.Run, log_lam: float, weight: float) -> runner.Run | None:
    """The run as a rule with the model's expectations discounted by the study's own record
    would have made it: stop at the first model trial whose best rate, times the calibration
    ``k``, is below ``exp(log_lam)``. ``k = min(1, (G + w p) / (P + w p))``: the improvements
    the model trials so far achieved (G, on the best value before each) over the EI the model
    expected of their points (P), shrunk to 1 by ``w`` pseudo-trials that met the mean
    expectation ``p``. As ``k <= 1`` the rule stops no later than the run did, so the cut is
    exact even from a run of the rule itself. None if the run has no records."""
    return cut(run, log_lam, Variant("calibrated", weight=weight))


HINDSIGHT = "hindsight (not a policy)"
"""The label of :func:`hindsight`'s row (``--hindsight``)."""

LIVE = {
    "rule": "the rule, live runs",
    "Terminator": "Terminator",
    "Xie et al. (LogEIPC)": "Xie et al. (LogEIPC)",
    "TPE + CostAwareStopping": "TPE + CostAwareStopping",
    "rule (PBGI)": "rule (PBGI)",
}
"""``--live``: the policies of ``benchmarks/stopping.py`` that stop by themselves, read from
their own runs (not replays) in the same folders, and the labels of their rows. Never chosen."""


def scored(run: runner.Run, problem: Problem, cap_problem: Problem, kappa: float) -> dict:
    """:func:`stopping.scaled_car` of ``run`` and the trials it ran (``trials``; the trial a
    rule stopped on ran nothing, its cost is nan, and it is not counted)."""
    ran = sum(math.isfinite(c) for c in run.costs)
    return {**stopping.scaled_car(run, problem, cap_problem, kappa), "trials": ran}


def hindsight(records: runner.Run, problem: Problem, cap_problem: Problem, kappa: float) -> dict:
    """The scaled CAR entry of the records run stopped at its best prefix in hindsight (the
    lowest CAR / R0 over its first 1..n trials): what a rule that knew the whole run would
    get. A bound for every rule replayed from this run, not a policy anyone can follow."""
    n = len(records.costs)
    if n == 0:
        raise ValueError("a records run without trials has no prefix to stop at")
    prefixes = (
        dataclasses.replace(
            records, costs=records.costs[:i], values=records.values[:i], capped=False
        )
        for i in range(1, n + 1)
    )
    return min((scored(r, problem, cap_problem, kappa) for r in prefixes), key=lambda e: e["car"])


def records_policy(problem: Problem, cap: float) -> stopping.Policy:
    """The records run of ``problem``: the rule at :data:`RECORDS_RATE` under the adaptive
    policies' cap."""
    capped = problem.variant(
        f"cap{cap:g}", budget=cap * problem.budget, max_trials=stopping.ADAPTIVE_MAX_TRIALS
    )
    return stopping.Policy(
        "records", capped, f"rollout:budget=none,value_per_cost={RECORDS_RATE:g}"
    )


def same_trials(rule: runner.Run, records: runner.Run) -> bool:
    """True if the rule's run made the same trials as the records run up to its stop (the
    trial the rule stopped on, which ran nothing, aside): the replay's premise."""
    m = len(rule.costs)
    if m and math.isnan(rule.costs[-1]):
        m -= 1  # the trial the rule stopped on ran nothing
    if m > len(records.costs):
        return False
    pairs = zip(
        rule.values[:m] + rule.costs[:m], records.values[:m] + records.costs[:m], strict=True
    )
    return all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in pairs)


def entries(
    problems: Sequence[Problem], kappas: Sequence[float], variants: Sequence[Variant],
    cap: float, seeds: Sequence[int], root: Path, real: tuple[Path, Sequence[int]] | None = None,
    with_hindsight: bool = False, with_live: bool = False,
) -> tuple[dict[tuple[float, str, str, int], dict], list[str]]:  # fmt: skip
    """(kappa, problem, label, seed) -> scaled CAR entry of each variant and fixed budget,
    and notes on the sources. A variant is cut from the records run of (problem, seed) when
    there is one, else from the rule's own run at that kappa (only variants that never stop
    later than it). ``real``: where the real group's runs are, and its seeds, when they are
    not ``root`` and ``seeds``. ``with_hindsight``: also :func:`hindsight` of each records
    run, labelled :data:`HINDSIGHT`. ``with_live``: also the runs of the policies in
    :data:`LIVE` that the folders hold, under their :data:`LIVE` labels."""
    out: dict[tuple[float, str, str, int], dict] = {}
    checked = agreed = 0
    everyone = (root, seeds)
    for p in problems:
        root, seeds = real if real is not None and p.group == "real" else everyone
        pols = stopping.policies(p, kappas, cap)
        cap_problem = stopping.cap_problem(pols)
        records_pol = records_policy(p, cap)
        for s in seeds:
            records = cache.load_valid(root, records_pol.problem, records_pol.method, s)
            if with_hindsight and records is not None and records.costs:
                for kappa in kappas:
                    out[(kappa, p.name, HINDSIGHT, s)] = hindsight(records, p, cap_problem, kappa)
            for pol in pols:
                if pol.label.startswith("fixed") or (with_live and pol.label in LIVE):
                    label = LIVE.get(pol.label, pol.label)
                    got = stopping.policy_run_scores(root, p, pol, s, kappas, cap_problem, scored)
                    for kappa, entry in got.items():
                        out[(kappa, p.name, label, s)] = entry
                if pol.label != "rule":
                    continue
                assert pol.kappa is not None
                own = cache.load_valid(root, pol.problem, pol.method, s)
                if own is not None and records is not None:
                    checked += 1
                    agreed += same_trials(own, records)
                lam = stopping.rate(p, pol.kappa)
                for v in variants:
                    source = records if records is not None else own
                    if source is None or (v.needs_records and records is None):
                        continue
                    replay = cut(source, math.log(lam), v)
                    if replay is not None:
                        out[(pol.kappa, p.name, v.label, s)] = scored(
                            replay, p, cap_problem, pol.kappa
                        )
    notes = []
    if checked:
        notes.append(
            f"The rule's own runs made the same trials as the records runs up to their stop in "
            f"{agreed} of {checked} (problem, seed, kappa) cases."
        )
    return out, notes


def table(
    found: dict[tuple[float, str, str, int], dict], names: Sequence[str], labels: Sequence[str],
    kappa: float, seeds: Sequence[int],
) -> tuple[list[str], dict[str, float]]:  # fmt: skip
    """One kappa's table (mean CAR / R0 +- se over problems, regret, cost) and the means."""
    rows, means = [], {}
    for lab in labels:
        per_problem, regret, cost = [], [], []
        for name in names:
            es = [found[(kappa, name, lab, s)] for s in seeds if (kappa, name, lab, s) in found]
            if es:
                per_problem.append(float(np.mean([e["car"] for e in es])))
                regret += [e["regret"] for e in es]
                cost += [e["cost"] for e in es]
        if not per_problem:
            continue
        mean, se = stats.mean_se(per_problem)
        means[lab] = mean
        rows.append(
            [lab, report.pm(mean, se), report.fmt(float(np.mean(regret))),
             report.fmt(float(np.mean(cost))), str(len(per_problem))]
        )  # fmt: skip
    header = ["policy", "CAR / R0 (mean +- se over problems)", "regret / R0", "cost / B",
              "problems"]  # fmt: skip
    return report.table(header, rows), means


def per_problem(
    found: dict[tuple[float, str, str, int], dict], names: Sequence[str], labels: Sequence[str],
    kappa: float, seeds: Sequence[int],
) -> list[str]:  # fmt: skip
    """One kappa's table of each problem: per label, the mean CAR / R0 over the seeds and the
    mean trials run (the trial a rule stopped on, which ran nothing, not counted)."""
    header = ["problem", *labels]
    rows = []
    for name in names:
        row = [name]
        for lab in labels:
            es = [found[(kappa, name, lab, s)] for s in seeds if (kappa, name, lab, s) in found]
            row.append(
                f"{np.mean([e['car'] for e in es]):.3f} ({np.mean([e['trials'] for e in es]):.1f})"
                if es
                else "-"
            )
        rows.append(row)
    return report.table(header, rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=stopping.DEFAULT_OUT)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--cap", type=float, default=3.0)
    parser.add_argument(
        "--groups", nargs="+", default=["adversarial", "control"],
        help="problem groups; real (YAHPO Gym) needs its venv",
    )  # fmt: skip
    parser.add_argument("--problems", nargs="+", default=None)
    parser.add_argument(
        "--halves", choices=["split", "checked"], default="split",
        help="split: choose on the tuning half, report on the confirmation half; checked: the "
        "problems are one set, reported with the --chosen variant and no choice made on them",
    )  # fmt: skip
    parser.add_argument(
        "--chosen", default=SHIPPED.label,
        help="the variant reported where no tuning half chooses one (default: the shipped rule)",
    )  # fmt: skip
    parser.add_argument(
        "--run", action="store_true",
        help="first make the records runs the cache lacks (the rule at value_per_cost "
        f"{RECORDS_RATE:g}: it runs to the cap)",
    )  # fmt: skip
    parser.add_argument(
        "--real-out", type=Path, default=None,
        help="read the real group's runs and scales from this folder instead of --out",
    )  # fmt: skip
    parser.add_argument("--real-seeds", type=int, default=None, help="with --real-out")
    parser.add_argument(
        "--with-fixed", action="store_true", help="with --run: the fixed budgets' runs too"
    )
    parser.add_argument(
        "--report", type=Path, default=None, help="where to write it (default: OUT/threshold.md)"
    )
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument(
        "--family", choices=sorted(FAMILIES), default="rates",
        help="the variants replayed: rates (multiples, discounts, patience; the fourth "
        "session's) or warmup (the shipped rule with a warm-up; the twelfth session's)",
    )  # fmt: skip
    parser.add_argument(
        "--hindsight", action="store_true",
        help=f"add the row {HINDSIGHT!r}: each records run stopped at its best prefix in "
        "hindsight (a bound, never chosen)",
    )  # fmt: skip
    parser.add_argument(
        "--live", action="store_true",
        help="add the rows of the policies that stop by themselves, from their own runs "
        f"({', '.join(LIVE.values())}; never chosen)",
    )  # fmt: skip
    parser.add_argument(
        "--per-problem", action="store_true",
        help="end with each problem's mean CAR / R0 (and trials) for the shipped rule, the "
        "chosen variant, the fixed budgets, the --live rows and the hindsight bound",
    )  # fmt: skip
    args = parser.parse_args(argv)
    argv_used = list(sys.argv[1:] if argv is None else argv)
    variants = FAMILIES[args.family]
    if args.run and args.real_out is not None:
        parser.error("--run writes to --out only: give the real group's folder as --out")
    stopping.load_scales(args.out)
    real = None
    if args.real_out is not None:
        stopping.load_scales(args.real_out)
        real = (args.real_out / "runs", list(range(args.real_seeds or args.seeds)))
    problems = stopping.problems_of(args.groups, args.problems)
    seeds = list(range(args.seeds))
    if args.run:
        pols = [records_policy(p, args.cap) for p in problems]
        if args.with_fixed:
            pols += [
                q for p in problems for q in stopping.policies(p, [], args.cap)
                if q.label.startswith("fixed")
            ]  # fmt: skip
        tasks = [(q.problem, q.method, s) for q in pols for s in seeds]
        stopping.save_scales(args.out)
        runner.run_tasks(
            tasks, args.out / "runs", resume=True, jobs=args.jobs, probe=stopping.rate_probe
        )
    if args.halves == "checked":
        halves = {"checked": problems}
    else:
        halves = {h: split(problems, h) for h in ("tuning", "confirmation", "all")}
    kappas = list(stopping.KAPPAS)
    found, notes = entries(
        problems, kappas, variants, args.cap, seeds, args.out / "runs", real=real,
        with_hindsight=args.hindsight, with_live=args.live,
    )  # fmt: skip
    if real is not None:
        notes.append(
            f"The real group's runs are read from `{args.real_out}` (seeds 0..{len(real[1]) - 1})."
        )
    all_seeds = sorted({*seeds, *(real[1] if real is not None else ())})
    labels = [v.label for v in variants] + [f"fixed {x:g}B" for x in stopping.FIXED]
    if args.live:
        labels += list(LIVE.values())
    if args.hindsight:
        labels.append(HINDSIGHT)
    lines = [
        "# The stopping rule's variants, replayed (issue 27)",
        "",
        f"Command: `python -m benchmarks stopping threshold {' '.join(argv_used)}`. "
        f"{report.seed_text(seeds)}. Each variant is a run cut at its own stop (see the module "
        "docstring): from the records run of (problem, seed) where there is one, else from the "
        "rule's own run at that kappa (variants that stop no later than it only). `rule x "
        "tau`: the undiscounted rule at tau x value_per_cost; `calibrated w`: the shipped rule's "
        "discount with w pseudo-trials; `two-sided w`: the same calibration allowed above 1; "
        "`m in a row`: stop at the m-th low rate in a row; `warm-up`: no stop before that "
        "many trials (`m x start-up`: m times the run's start-up trials: 2 (d + 1) in the records "
        "runs made before d415475e, d + 1 after). The fixed budgets are the runs of the same "
        "folder."
        + (
            f" Rows {', '.join(f'`{lab}`' for lab in LIVE.values())}: the runs of those "
            "policies themselves (`benchmarks/stopping.py`), not replays; never chosen."
            if args.live
            else ""
        )
        + (
            f" `{HINDSIGHT}`: each records run stopped at its best prefix in hindsight, a "
            "bound for every rule replayed from it."
            if args.hindsight
            else ""
        ),
        "",
        *notes,
        "",
    ]
    chosen: str = args.chosen
    for half in halves:
        names = [p.name for p in halves[half]]
        title = "All problems" if half == "all" else f"{half.capitalize()} half"
        lines += [f"## {title} ({', '.join(names)})", ""]
        total: dict[str, float] = {}
        for kappa in kappas:
            rows, means = table(found, names, labels, kappa, all_seeds)
            lines += [f"### {title}, kappa = {kappa:g}", "", *rows, ""]
            for lab, m in means.items():
                total[lab] = total.get(lab, 0.0) + m / len(kappas)
        if half == "tuning":
            rules = {
                lab: v
                for lab, v in total.items()
                if not lab.startswith("fixed") and lab not in {HINDSIGHT, *LIVE.values()}
            }
            chosen = min(rules, key=rules.__getitem__) if rules else chosen
            lines += [
                f"Chosen on this half (lowest mean CAR / R0 over both kappas): **{chosen}** "
                f"({rules.get(chosen, math.nan):.3f}; the shipped rule, {SHIPPED.label}: "
                f"{rules.get(SHIPPED.label, math.nan):.3f}"
                + (
                    f"; undiscounted, rule x 1: {rules['rule x 1']:.3f}"
                    if "rule x 1" in rules
                    else ""
                )
                + ").",
                "",
            ]
        else:
            lines += [
                "On this half, mean over both kappas: "
                + ", ".join(
                    f"{lab} {total.get(lab, math.nan):.3f}"
                    for lab in dict.fromkeys([chosen, SHIPPED.label, "rule x 1"])
                    if lab in total
                )
                + "; the fixed budgets: "
                + ", ".join(
                    f"{lab} {v:.3f}" for lab, v in sorted(total.items()) if lab.startswith("fixed")
                )
                + "".join(f"; {lab} {total[lab]:.3f}" for lab in LIVE.values() if lab in total)
                + (f"; {HINDSIGHT} {total[HINDSIGHT]:.3f}" if HINDSIGHT in total else "")
                + ".",
                "",
            ]
    if args.per_problem:
        names = [p.name for p in problems]
        shown = [
            lab
            for lab in dict.fromkeys(
                [
                    SHIPPED.label,
                    chosen,
                    *(f"fixed {x:g}B" for x in stopping.FIXED),
                    *LIVE.values(),
                    HINDSIGHT,
                ]
            )
            if lab in labels
        ]
        lines += [
            "## Per problem",
            "",
            "Mean CAR / R0 over the seeds and, in brackets, the mean trials run (the trial a "
            "rule stopped on ran nothing and is not counted).",
            "",
        ]
        for kappa in kappas:
            rows = per_problem(found, names, shown, kappa, all_seeds)
            lines += [f"### Per problem, kappa = {kappa:g}", "", *rows, ""]
    path = args.report or args.out / "threshold.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"report: {path}")
    return 0


if __name__ == "__main__":  # the former way, python -m benchmarks.stopping_threshold
    from benchmarks import _preamble

    _preamble.forward("stopping", "threshold")
