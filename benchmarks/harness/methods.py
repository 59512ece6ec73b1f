"""The methods compared, as data: a name resolves to a :class:`Method` (family, options, label).

Families:

- ``ours``: ``CostRolloutSampler(budget, **options, seed=s)`` through the public API only, with
  the problem's known ``cost_fn`` and ``sampler_options`` (e.g. ``n_startup_trials``) if it
  has them;
- ``optuna``: Optuna's ``GPSampler`` (``gp``), ``TPESampler`` (``tpe``), ``RandomSampler``
  (``random``), ``seed=s`` and their defaults unless options say otherwise (Optuna 5's
  ``TPESampler()`` is multivariate for one objective, so ``optuna-tpe`` and ``optuna-tpe-mg``
  make the same trials on a fixed space and differ only where the space changes);
- ``botorch``: the references of :mod:`benchmarks.harness.botorch_ref` (``logei``,
  ``logeipu``, ``eicool``);
- ``peer``: strong optimizers from outside Optuna as Optuna samplers: ``hebo`` is
  ``HEBOSampler(seed=s)`` (:mod:`benchmarks.harness.peers`), HEBO with its defaults; ``smac``
  is ``SMACSampler(seed=s)`` (:mod:`benchmarks.harness.peers_smac`), SMAC3's
  hyperparameter-optimization facade with its defaults. Cost-blind, and constraints are not
  passed (neither takes them). Not in the suite's default methods (each needs its own
  environment, see ``benchmarks/problems/README_yahpo.md``): ask for them with
  ``--methods hebo smac``.

Names:

- the registered names of :data:`REGISTRY` (``rollout``, ``rollout-h4``, ``rollout-paper``,
  ``rollout-paper-h4``, ``ei``, ``eipu``, ``ei-cool``, ``optuna-gp``, ``optuna-tpe``,
  ``random``, ``botorch-logei``, ``botorch-logeipu``, ``botorch-eicool``, ``hebo``,
  ``smac``);
- ``BASE:key=value,...``: a registered name (or ``ours``) with options added or replaced,
  e.g. ``ours:acquisition=eipu``, ``rollout:charge_sampler_time=false``,
  ``eipu:max_sampler_share=0.05``, ``optuna-tpe:multivariate=true``. Values are read as int,
  float, ``true``/``false``/``none`` or else text. So benchmark-only variants of the sampler
  are a name here, never a flag in the package: options that are not sampler parameters
  (``charge_sampler_time``, ``max_sampler_share``, ``dashboard_chart``) are
  set on the sampler object through :mod:`.package_probes`; ``known_cost=true`` gives ours
  the problem's own cost as ``cost_fn`` (``Problem.known_cost``: a synthetic problem's cost
  formula; the hard budget's study, benchmarks/results/hard-budget), a problem without one
  fails the run;
- any other name ``ACQ`` or ``ACQ-hN`` is ours with ``acquisition="ACQ"`` (``horizon=N``), so a
  new acquisition needs no change here; a name the installed package rejects is skipped
  with its error message (:func:`unavailable`);
- ``NAME@STOPPER``: any Optuna-driven one of these with a stopping callback added to its study
  (the stopping benchmark): ``@terminator`` (Optuna's ``Terminator``: ``RegretBoundEvaluator``
  with the ``MedianErrorEvaluator`` paired to it, for objectives without cross-validation
  scores), ``@emmr`` (the same with ``EMMREvaluator``), ``@cost-aware=L`` (this package's
  ``CostAwareStopping(value_per_cost=L)``); see :func:`make_callbacks`. Ours takes a
  ``budget`` option too (``rollout:budget=none,value_per_cost=0.01``: no budget, the rule
  stops it).
- ``NAME+PRUNER``: any of these with a pruner (the pruning benchmark, problems with steps):
  ``+median`` (Optuna's ``MedianPruner()``, its defaults) or ``+hyperband``
  (``HyperbandPruner(min_resource=1, max_resource=<the problem's last step>,
  reduction_factor=3)``); ours gets it wrapped as a user writes it,
  ``CostBudgetPruner(pruner)``, and ``+median-bare`` / ``+hyperband-bare`` give ours the bare
  pruner, ``+median-consult`` / ``+hyperband-consult`` ``CostBudgetPruner(pruner,
  consult_sampler=True)`` (the sampler kept a trial the pruner would stop when finishing it
  was worth its cost; tried and dropped, it runs only with the package at 36c370c, see
  docs/pruning.md; its cached runs still report), ``+median-finish50`` /
  ``+hyperband-finish50`` ``CostBudgetPruner(pruner, finish_share=0.5)`` (the wrapped pruner
  not obeyed once half the budget is spent; tried and dropped, it ran with the package at
  77e7f11 plus that option, see docs/pruning.md), ``+median-informative`` /
  ``+hyperband-informative`` ``CostBudgetPruner(InformativeSteps(pruner))`` (the pruner obeyed
  only at steps whose reports rank the study's finished trials,
  ``harness/informative_steps.py``; what ``CostBudgetPruner`` does for Median since 2026-11-28,
  so ``+median`` runs made before then are ``+median-allsteps``), ``+median-allsteps`` /
  ``+hyperband-allsteps`` ``CostBudgetPruner(pruner, informative_steps=False)`` (obeyed at
  every step, as before); Optuna's
  samplers always get the bare one. Without a pruner a problem with steps
  gets ``NopPruner()`` (never Optuna's implicit ``MedianPruner``); see :func:`make_pruner`.

The method's name is also its folder in the cache (see ``cache.method_dir``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import math
import re
from typing import Any
import warnings


@dataclass(frozen=True)
class Method:
    name: str
    label: str
    family: str  # "ours", "optuna", "botorch", "peer"
    kind: str = ""  # optuna: "gp", "tpe", "random"; botorch: the variant; peer: "hebo",
    # "smac"; ours: a probe (a function of benchmarks.harness.package_probes applied to the
    # new sampler: a benchmark-only variant such as the independent fallback of conditional
    # parameters)
    options: tuple[tuple[str, Any], ...] = ()
    stopper: str = ""  # "", "terminator", "emmr", "cost-aware=L"
    pruner: str = ""  # "", "median", "hyperband", and either with "-bare" or "-consult"

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.options)


KNOWN_COST = "known_cost"
"""The spec option of ours that hands the sampler the problem's own cost as ``cost_fn``
(``rollout:overrun_risk=0.05,known_cost=true``); the runner reads it, the sampler never sees
it."""


def _ours(name: str, label: str, **options: Any) -> Method:
    return Method(name, label, "ours", options=tuple(options.items()))


REGISTRY: dict[str, Method] = {
    m.name: m
    for m in (
        _ours("rollout", "ours rollout h=2", acquisition="rollout", horizon=2),
        _ours("rollout-h4", "ours rollout h=4", acquisition="rollout", horizon=4),
        _ours("rollout-paper", "ours rollout (paper)", acquisition="rollout-paper", horizon=2),
        _ours(
            "rollout-paper-h4", "ours rollout (paper) h=4", acquisition="rollout-paper", horizon=4
        ),
        _ours("ei", "ours EI", acquisition="ei"),
        _ours("eipu", "ours EIpu", acquisition="eipu"),
        _ours("ei-cool", "ours EI-cool", acquisition="ei-cool"),
        # The Gittins index's strategy replaces EIpu's (harness/gittins.py).
        Method("pbgi", "ours PBGI", "ours", "gittins_index", (("acquisition", "eipu"),)),
        Method(
            "rollout-indep",
            "ours rollout, conditional parameters sampled independently",
            "ours",
            "independent_conditionals",
            (("acquisition", "rollout"),),
        ),
        Method(
            "eipu-indep",
            "ours EIpu, conditional parameters sampled independently",
            "ours",
            "independent_conditionals",
            (("acquisition", "eipu"),),
        ),
        Method("optuna-gp", "Optuna GP", "optuna", "gp"),
        Method("optuna-tpe", "Optuna TPE", "optuna", "tpe"),
        Method(
            "optuna-tpe-mg",
            "Optuna TPE (multivariate, group)",
            "optuna",
            "tpe",
            (("multivariate", True), ("group", True)),
        ),
        Method("optuna-nsga2", "Optuna NSGA-II", "optuna", "nsga2"),
        Method("random", "Random", "optuna", "random"),
        Method("botorch-logei", "BoTorch LogEI", "botorch", "logei"),
        Method("botorch-logeipu", "BoTorch LogEIpu", "botorch", "logeipu"),
        Method("botorch-eicool", "BoTorch EI-cool", "botorch", "eicool"),
        Method("hebo", "HEBO", "peer", "hebo"),
        Method("smac", "SMAC3 (HPO facade)", "peer", "smac"),
    )
}
SUITE_METHODS = (
    "rollout",
    "rollout-h4",
    "rollout-paper",
    "ei",
    "eipu",
    "ei-cool",
    "optuna-gp",
    "optuna-tpe",
    "random",
    "botorch-logei",
    "botorch-logeipu",
    "botorch-eicool",
)
"""The suite's methods unless ``--methods`` says otherwise."""
PAPER_METHODS = (
    "rollout-paper",
    "rollout-paper-h4",
    "ei",
    "eipu",
    "ei-cool",
    "optuna-tpe",
    "optuna-gp",
    "random",
)
"""The paper reproductions' methods: the paper's rollout (h = 2, 4), its myopic baselines and
Optuna's samplers."""
PAPER_REFERENCES = ("rollout-paper", "rollout-paper-h4")
"""The methods the paper reproductions compare against every other one."""
PRUNING_METHODS = (
    "rollout+hyperband",
    "rollout+median",
    "rollout",
    "optuna-tpe+hyperband",
    "optuna-tpe+median",
    "optuna-gp+median",
    "random+hyperband",
)
"""The pruning benchmark's methods (issue 24): the default with Hyperband, with Median and
without a pruner; TPE + Hyperband (the pairing Optuna's docs recommend), TPE + Median,
GPSampler + Median, random search + Hyperband."""
PRUNING_REFERENCES = ("rollout+hyperband", "rollout+median")
"""The methods the pruning benchmark compares against every other one."""
PRUNERS = {"median": "Median", "hyperband": "Hyperband"}
"""The pruners of ``NAME+PRUNER`` (and their labels)."""
_PRUNED = re.compile(
    r"(?P<base>.+)\+(?P<pruner>"
    + "|".join(PRUNERS)
    + r")(?P<variant>-bare|-consult|-finish50|-informative|-betterhalf|-allsteps)?"
)


STOPPERS = {
    "terminator": "Terminator (regret bound)",
    "emmr": "Terminator (EMMR)",
    "cost-aware": "CostAwareStopping",
}
"""The stopping callbacks of ``NAME@STOPPER`` (and their labels)."""
_STOPPED = re.compile(r"(?P<base>[^@]+)@(?P<stopper>terminator|emmr|cost-aware=[^@]+)")


def _cost_aware_rate(stopper: str, name: str) -> float:
    text = stopper.partition("=")[2]
    try:
        rate = float(text)
    except ValueError:
        rate = math.nan
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"{name!r}: @cost-aware=L needs a positive number L, got {text!r}")
    return rate


def parse_value(text: str) -> Any:
    """``"4"`` -> 4, ``"0.1"`` -> 0.1, ``"true"`` -> True, ``"none"`` -> None, else the text."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip()


def parse_options(text: str) -> dict[str, Any]:
    """``"acquisition=eipu,horizon=4"`` -> ``{"acquisition": "eipu", "horizon": 4}``."""
    out: dict[str, Any] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"method options must look like key=value[,key=value]; got {item!r}")
        out[key.strip()] = parse_value(value)
    return out


def resolve(name: str) -> Method:
    """The :class:`Method` a name stands for (see the module docstring)."""
    if name in REGISTRY:
        return REGISTRY[name]
    stopped = _STOPPED.fullmatch(name)
    if stopped:
        base_method = resolve(stopped["base"])
        if base_method.family == "botorch":
            raise ValueError(f"{name!r}: the BoTorch references run no Optuna study to stop")
        stopper = stopped["stopper"]
        if stopper.startswith("cost-aware"):
            _cost_aware_rate(stopper, name)
        if base_method.stopper:
            raise ValueError(f"{name!r} has two stoppers")
        label = f"{base_method.label} + {STOPPERS[stopper.partition('=')[0]]}"
        return dataclasses.replace(base_method, name=name, label=label, stopper=stopper)
    pruned = _PRUNED.fullmatch(name)
    if pruned:
        base = resolve(pruned["base"])
        if base.pruner:
            raise ValueError(f"{name!r} has two pruners")
        if base.family == "botorch":
            raise ValueError(f"{name!r}: the BoTorch references run no Optuna study to prune")
        variant = pruned["variant"] or ""
        if variant and base.family != "ours":
            raise ValueError(
                f"{name!r}: '{variant}' is for ours (Optuna's samplers always get the bare pruner)"
            )
        shown = {
            "": "",
            "-bare": " (bare)",
            "-consult": " (consults the sampler)",
            "-finish50": " (none in the last half)",
            "-informative": " (informative steps only)",
            "-betterhalf": " (steps that rank the better half)",
            "-allsteps": " (at every step)",
        }[variant]
        label = f"{base.label} + {PRUNERS[pruned['pruner']]}{shown}"
        pruner = pruned["pruner"] + variant
        return dataclasses.replace(base, name=name, label=label, pruner=pruner)
    base, sep, rest = name.partition(":")
    if sep:
        options = parse_options(rest)
        if base == "ours":
            parent = Method("ours", "ours", "ours")
        elif base in REGISTRY:
            parent = REGISTRY[base]
        else:
            raise ValueError(
                f"unknown method base {base!r} in {name!r}: use 'ours' or one of "
                f"{sorted(REGISTRY)}"
            )
        merged = {**parent.kwargs, **options}
        label = f"{parent.label} " + ", ".join(f"{k}={v}" for k, v in options.items())
        return Method(name, label, parent.family, parent.kind, tuple(merged.items()))
    match = re.fullmatch(r"(.+)-h(\d+)", name)
    acq, horizon = (match.group(1), int(match.group(2))) if match else (name, 2)
    label = f"ours {acq}" + (f" h={horizon}" if match else "")
    return _ours(name, label, acquisition=acq, horizon=horizon)


def label(name: str) -> str:
    return resolve(name).label


def make_sampler(method: Method, budget: float, seed: int, problem_options: dict[str, Any]) -> Any:
    """The Optuna sampler of an ``ours``, ``optuna`` or ``peer`` method, seeded.

    ``problem_options``: ``cost_fn`` and ``sampler_options`` of the problem, for ours, and
    ``constraints_func`` of a constrained problem, for ours, GPSampler and TPE (Optuna's
    random search and the peers have none: they ignore constraints).
    """
    import optuna

    if method.family == "ours":
        from benchmarks.harness import package_probes
        from optuna_costbo import CostRolloutSampler

        kwargs, internal = _sampler_kwargs({"budget": budget, **problem_options, **method.kwargs})
        sampler = CostRolloutSampler(**kwargs, seed=seed)
        package_probes.apply_internal_options(sampler, internal)
        if method.kind:
            getattr(package_probes, method.kind)(sampler)
        return sampler
    if method.family == "peer":
        if method.kind == "hebo":
            from benchmarks.harness import peers

            return peers.HEBOSampler(seed=seed, **method.kwargs)
        if method.kind == "smac":
            from benchmarks.harness import peers_smac

            return peers_smac.SMACSampler(seed=seed, **method.kwargs)
        raise ValueError(f"{method.name!r}: unknown peer {method.kind!r}")
    if method.family != "optuna":
        raise ValueError(f"{method.name!r} is not run through an Optuna sampler")
    cls = {
        "gp": optuna.samplers.GPSampler,
        "tpe": optuna.samplers.TPESampler,
        "nsga2": optuna.samplers.NSGAIISampler,
        "random": optuna.samplers.RandomSampler,
    }[method.kind]
    extra: dict[str, Any] = {}
    if "constraints_func" in problem_options and method.kind in ("gp", "tpe", "nsga2"):
        extra["constraints_func"] = problem_options["constraints_func"]
    return cls(seed=seed, **extra, **method.kwargs)


def make_callbacks(method: Method) -> list[Any]:
    """The stopping callbacks of ``method`` for ``study.optimize`` (none without a stopper).

    ``terminator``: ``TerminatorCallback(Terminator(RegretBoundEvaluator(),
    MedianErrorEvaluator(RegretBoundEvaluator())))``, the combination Optuna documents for an
    objective without cross-validation scores (its default error evaluator needs them);
    ``emmr``: the same with ``EMMREvaluator``; both with Optuna's default ``min_n_trials``
    (20). ``cost-aware=L``: ``CostAwareStopping(L)``.
    """
    if not method.stopper:
        return []
    kind = method.stopper.partition("=")[0]
    if kind == "cost-aware":
        from optuna_costbo.stopping import CostAwareStopping

        return [CostAwareStopping(_cost_aware_rate(method.stopper, method.name))]
    import optuna.terminator as term

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated in Optuna 5, still there
        make_evaluator = term.EMMREvaluator if kind == "emmr" else term.RegretBoundEvaluator
        terminator = term.Terminator(
            improvement_evaluator=make_evaluator(),
            error_evaluator=term.MedianErrorEvaluator(make_evaluator()),
        )
        return [term.TerminatorCallback(terminator)]


def make_pruner(method: Method, max_step: int) -> Any:
    """The study's pruner for ``method`` on a problem whose last step is ``max_step`` (0: a
    problem without steps).

    None (Optuna's default, never consulted: nothing is reported) for a method without a
    pruner on a problem without steps; ``NopPruner()`` for one on a problem with steps (the
    runner reports every step, and Optuna's implicit default would be ``MedianPruner``).
    ``median``: ``MedianPruner()`` with Optuna's defaults (5 start-up trials, no warm-up
    steps). ``hyperband``: ``HyperbandPruner(min_resource=1, max_resource=max_step,
    reduction_factor=3)``. Ours gets it as ``CostBudgetPruner(pruner)`` unless ``-bare``;
    ``-consult`` adds ``consult_sampler=True``.

    NOTE(bracket view): Optuna shows a sampler only the trials of the running trial's
    Hyperband bracket when ``study.pruner`` is a ``HyperbandPruner``
    (``optuna.pruners._filter_study``); inside ``CostBudgetPruner`` it is not one, so ours
    sees every trial while the wrapped pruner still prunes bracket by bracket. ``-bare``
    keeps Optuna's bracket view.
    """
    import optuna

    if not method.pruner:
        return optuna.pruners.NopPruner() if max_step else None
    kind, _, variant = method.pruner.partition("-")
    pruner: Any
    if kind == "median":
        pruner = optuna.pruners.MedianPruner()
    elif kind == "hyperband":
        if max_step < 1:
            raise ValueError(f"{method.name}: HyperbandPruner needs a problem with steps")
        pruner = optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=max_step, reduction_factor=3
        )
    else:
        raise ValueError(f"{method.name}: unknown pruner {method.pruner!r}")
    if method.family == "ours" and variant != "bare":
        from optuna_costbo import CostBudgetPruner

        options: dict[str, Any] = {}
        if variant == "consult":
            options = {"consult_sampler": True}
        elif variant == "finish50":
            options = {"finish_share": 0.5}
        elif variant == "informative":
            from benchmarks.harness.informative_steps import InformativeSteps

            pruner = InformativeSteps(pruner)
        elif variant == "betterhalf":
            from benchmarks.harness.informative_steps import BetterHalfSteps

            pruner = BetterHalfSteps(pruner)
        elif variant == "allsteps":
            options = {"informative_steps": False}
        pruner = CostBudgetPruner(pruner, **options)
    return pruner


def _sampler_kwargs(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` split into the sampler's parameters and the settings of one sampler object
    (:data:`benchmarks.harness.package_probes.INTERNAL_OPTIONS`), without the harness's own
    (:data:`KNOWN_COST`, read by the runner); a removed option raises ``ValueError`` saying
    so."""
    from benchmarks.harness import package_probes

    options = {k: v for k, v in options.items() if k != KNOWN_COST}
    if options.get("pruned_trials") == "censored":  # what the sampler always does now
        options = {k: v for k, v in options.items() if k != "pruned_trials"}
    for name, why in package_probes.REMOVED_OPTIONS.items():
        if name in options:
            raise ValueError(f"{name} can no longer be set: {why}")
    internal = {k: v for k, v in options.items() if k in package_probes.INTERNAL_OPTIONS}
    return {k: v for k, v in options.items() if k not in internal}, internal


def unavailable(method: Method) -> str | None:
    """None if the method can run here, else why not (shown, and the method is skipped)."""
    if method.family == "ours":
        from optuna_costbo import CostRolloutSampler

        try:
            kwargs, _ = _sampler_kwargs({"budget": 1.0, **method.kwargs})
            CostRolloutSampler(**kwargs)
            if method.pruner.endswith(("-consult", "-finish50")):
                make_pruner(method, 1)
        except (ValueError, TypeError) as exc:
            return f"the installed optuna_costbo rejects it: {exc}"
    elif method.family == "botorch":
        from benchmarks.harness import botorch_ref

        return botorch_ref.check_available()
    elif method.family == "peer":
        if method.kind == "smac":
            from benchmarks.harness import peers_smac

            return peers_smac.smac_unavailable()
        from benchmarks.harness import peers

        return peers.hebo_unavailable()
    if method.stopper in ("terminator", "emmr") or method.kind == "gp":
        try:
            import torch  # noqa: F401
        except ImportError:
            return "Optuna's GPSampler and Terminator need torch (pip install torch==2.13.0)"
    return None
