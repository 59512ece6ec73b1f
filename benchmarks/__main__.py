"""The benchmarks' command line: ``python -m benchmarks STUDY [STEP] [OPTIONS]``.

    python -m benchmarks --help                     # the studies and their steps
    python -m benchmarks pruning --help             # the options of one study
    python -m benchmarks pruning --seeds 10 --resume
    python -m benchmarks pruning equal-spend --help

Each study, and each step of one, is a module of ``benchmarks`` with ``main(argv)``: the rest
of the command line goes to it unchanged (:data:`STUDIES`). :func:`benchmarks._preamble.apply`
runs first, before any study imports numpy or the package. Run it from the repository root.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import importlib
import sys

from benchmarks import _preamble


PROG = "python -m benchmarks"


@dataclasses.dataclass(frozen=True)
class Command:
    """A module of ``benchmarks`` whose ``main(argv)`` runs a study or a step of one."""

    module: str
    summary: str  # one line for --help


@dataclasses.dataclass(frozen=True)
class Study(Command):
    """A study, and the steps run on its results or beside it (``STUDY STEP [OPTIONS]``)."""

    steps: Mapping[str, Command] = dataclasses.field(default_factory=dict)


STUDIES: dict[str, Study] = {
    "suite": Study(
        "benchmarks.suite.run",
        "the cost-aware suite: ranks and paired tests against a reference",
        {
            "calibrate-yahpo": Command(
                "benchmarks.yahpo_calibrate",
                "budgets and best known values of the YAHPO instances",
            ),
            "hard-budget": Command(
                "benchmarks.hard_budget",
                "the hard budget against the soft one: overruns, regrets at equal spend",
            ),
            "noise-fit": Command(
                "benchmarks.noise_fit",
                "the objective GP's fitted noise sd against the true one (group noisy)",
            ),
            "multi-summary": Command(
                "benchmarks.multi_objective_summary",
                "the multi-objective halves' ranks, paired verdicts and speed in one report",
            ),
        },
    ),
    "paper": Study(
        "benchmarks.paper",
        "Lee et al. (UAI 2021): synthetic (Fig. 4), hpo (Fig. 5), sensors (Sec. 6.3)",
        {
            "runtime": Command(
                "benchmarks.runtime_variation",
                "runtime of random configurations (Fig. 1), the HPO budgets' sizing",
            ),
        },
    ),
    "pruning": Study(
        "benchmarks.pruning",
        "samplers with pruners on problems with steps, under a budget",
        {
            "equal-spend": Command(
                "benchmarks.pruning_equal_spend",
                "runs with a pruner against runs without one, at equal spend",
            ),
        },
    ),
    "stopping": Study(
        "benchmarks.stopping",
        "stopping rules against fixed budgets: cost-adjusted regret",
        {
            "threshold": Command(
                "benchmarks.stopping_threshold",
                "stopping rules replayed from recorded runs",
            ),
        },
    ),
    "speed": Study(
        "benchmarks.suggest_speed",
        "suggestion time against Optuna's GPSampler",
        {
            "profile": Command(
                "benchmarks.profile_suggestion",
                "where one suggestion spends its CPU time, phase by phase",
            ),
            "scale-quality": Command(
                "benchmarks.scale_quality",
                "what fits on a subset or a working set cost in quality",
            ),
        },
    ),
    "cheap-trials": Study(
        "benchmarks.cheap_trials",
        "trials of 5 ms to 2 s, the study's wall clock as the budget",
        {
            "hard-live": Command(
                "benchmarks.hard_budget_live",
                "the hard budget against the soft one on these problems: overruns, regrets",
            ),
        },
    ),
    "engine": Study(
        "benchmarks.engine",
        "issue 57: suggestion depth, reads per trial, SQLite wall clock, package lines",
    ),
    "warm-start": Study(
        "benchmarks.warm_start",
        "what a warm start from a related study buys at half budget",
    ),
    "storage": Study(
        "benchmarks.storage_traffic",
        "storage calls and bytes per trial, a server's capacity, reads per trial",
    ),
}
"""Every study of ``python -m benchmarks``, by its name on the command line."""


def help_text() -> str:
    """The studies and their steps, one line each."""
    width = 2 + max(
        max([len(name), *(2 + len(step) for step in study.steps)])
        for name, study in STUDIES.items()
    )
    lines = [
        f"usage: {PROG} STUDY [STEP] [OPTIONS]",
        "",
        "The benchmarks of optuna-costbo (benchmarks/README.md). The options of a study or a",
        f"step: {PROG} STUDY [STEP] --help.",
        "",
        "studies (and their steps):",
    ]
    for name, study in STUDIES.items():
        lines.append(f"  {name:<{width}}{study.summary}")
        lines += [f"    {step:<{width - 2}}{c.summary}" for step, c in study.steps.items()]
    return "\n".join(lines)


def steps_text(name: str) -> str:
    """The steps of study ``name``, for the end of its --help."""
    study = STUDIES[name]
    lines = [f"steps of {name} ({PROG} {name} STEP --help):"]
    lines += [f"  {step:<16}{c.summary}" for step, c in study.steps.items()]
    return "\n".join(lines)


def resolve(argv: Sequence[str]) -> tuple[list[str], Command, list[str]]:
    """(the words naming the command, its :class:`Command`, the arguments it gets) for a
    command line that starts with a study's name."""
    study = STUDIES[argv[0]]
    if len(argv) > 1 and argv[1] in study.steps:
        return list(argv[:2]), study.steps[argv[1]], list(argv[2:])
    return list(argv[:1]), study, list(argv[1:])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(help_text())
        return 0
    if not argv:
        print(help_text(), file=sys.stderr)
        return 2
    if argv[0] not in STUDIES:
        print(help_text(), file=sys.stderr)
        print(f"\nerror: unknown study {argv[0]!r}", file=sys.stderr)
        return 2
    words, command, rest = resolve(argv)
    module = importlib.import_module(command.module)
    saved = sys.argv
    # The study's argparse names itself after sys.argv[0]: "python -m benchmarks pruning".
    sys.argv = [" ".join([PROG, *words]), *rest]
    try:
        code = module.main(rest)
    except SystemExit:
        if command is STUDIES[argv[0]] and command.steps and {"-h", "--help"} & set(rest):
            print("\n" + steps_text(argv[0]))
        raise
    finally:
        sys.argv = saved
    return int(code or 0)


if __name__ == "__main__":
    _preamble.apply()
    raise SystemExit(main())
