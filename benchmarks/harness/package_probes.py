"""Every use the benchmarks make of optuna_costbo's private modules, in one place.

The harness drives the package through its public API only (``CostRolloutSampler``,
``report_cost``). A few experiments measure its internals; they reach them through this
module, so that when the package's modules move, the benchmarks are retargeted here and
nowhere else. Nothing here writes a module global of the package: a variant is a setting of
one sampler object (:func:`set_fit_schedule`, :func:`gittins_index`), or a profile read off
the running code (:func:`profiled_seconds`).
Names resolve lazily (on first use).

Who uses what:

- ``harness/methods.py``: :func:`independent_conditionals` (the ``*-indep`` methods: one
  sampler's reads replaced by the intersection search space, the behaviour before conditional
  spaces were modelled);
- ``scale_quality.py``: :func:`set_fit_schedule` sets one sampler's ``FitSchedule``
  (``_numerics.request``) and :func:`shipped_fit_schedule` reads the package's;
- ``cheap_trials.py``: :func:`effort_counts` reads the suggester's effort counts (full and
  quick suggestions);
- ``noise_fit.py``: :func:`cold_objective_fit`, the objective GP a suggestion without a warm
  start fits (``_numerics.gp.fit.fit_gp``, ``_sampler.space.SpaceBridge``);
- ``harness/methods.py``: :func:`apply_internal_options`, the method options that were sampler
  parameters before 0.2 (``charge_sampler_time``, ``max_sampler_share``,
  ``dashboard_chart``), set on one sampler object, so those methods run as before, and
  ``quick_queue=false`` (the quick route without its queue, as before issue 57);
- ``harness/gittins.py`` (the ``pbgi`` method): :func:`gittins_index` replaces one
  sampler's strategy; ``_numerics.acquisition.ei`` (``_log_h_parts``),
  ``_numerics.optimize`` (:func:`maximize_acquisition`, :func:`maximize_exponent`),
  ``_numerics.cost_model`` (``shares_objective``), ``_numerics.acquisition.strategies``
  (``Choice``);
- ``harness/informative_steps.py`` (the ``-informative`` and ``-betterhalf`` pruner
  variants): :func:`completed_rank_correlation`, the correlation ``CostBudgetPruner``'s check
  reads (``pruner._completed_pairs`` and ``pruner._pairs_correlation``);
- ``storage/`` (``storage_traffic.py``): :func:`profiled_seconds` (the ledger's and the
  model's time per trial, from a profile, on any version of the package) and the system attrs
  a finished or a running trial of ``CostRolloutSampler`` carries
  (:data:`FINISHED_SYSTEM_ATTRS`, :data:`PROPOSED_PARAMS_ATTR`, :data:`RUNNING_SYSTEM_ATTRS`).
"""

from __future__ import annotations

import cProfile
import importlib
import pstats
from types import ModuleType
from typing import Any

import numpy as np


MODULES: dict[str, str] = {
    "cost_model": "optuna_costbo._numerics.cost_model",
    "fit": "optuna_costbo._numerics.gp.fit",
    "models": "optuna_costbo._numerics.models",
    "request": "optuna_costbo._numerics.request",
    "space": "optuna_costbo._sampler.space",
    "ei": "optuna_costbo._numerics.acquisition.ei",
    "optimize": "optuna_costbo._numerics.optimize",
    "policy": "optuna_costbo._numerics.policy",
    "pruner": "optuna_costbo.pruner",
    "strategies": "optuna_costbo._numerics.acquisition.strategies",
}
"""Short name -> private module of the package."""

NAMES: dict[str, tuple[str, str]] = {
    "Choice": ("strategies", "Choice"),
    "completed_pairs": ("pruner", "_completed_pairs"),
    "log_h_parts": ("ei", "_log_h_parts"),
    "pairs_correlation": ("pruner", "_pairs_correlation"),
    "shares_objective": ("cost_model", "shares_objective"),
}
"""Name here -> (short module name, attribute): ``from benchmarks.harness.package_probes
import fit_gp`` imports ``optuna_costbo._numerics.gp.fit.fit_gp`` when it runs."""

# The system attrs CostRolloutSampler writes on trials (the storage benchmarks pre-fill
# studies with them, so that the sampler reads studies shaped like its own).
FINISHED_SYSTEM_ATTRS: dict[str, Any] = {
    "costbo:sampler_seconds": 0.123456789,
    "costbo:cost_source": "reported",
    "costbo:proposal_checked": True,
}
PROPOSED_PARAMS_ATTR = "costbo:proposed_params"
RUNNING_SYSTEM_ATTRS: dict[str, Any] = {"costbo:proposal_checked": True}

LEDGER_ROOTS = ("charge_and_sum", "ledger_from_trials")
"""The functions that compute a ledger from a trial list, in this package and in earlier ones
(every ledger the sampler computes goes through one of them)."""
MODEL_ROOTS = (("policy.py", "propose"),)
"""(file, function) of the model and acquisition of one full suggestion."""


def module(short: str) -> ModuleType:
    """The private module ``MODULES[short]``, imported."""
    return importlib.import_module(MODULES[short])


def __getattr__(name: str) -> Any:
    if name in NAMES:
        short, attribute = NAMES[name]
        return getattr(module(short), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def completed_rank_correlation(
    trials: Any, step: int, better_half_of: Any = None
) -> tuple[float, int]:
    """``CostBudgetPruner``'s rank correlation of the COMPLETE ``trials``' values at ``step``
    with their final values (over the better half by final value with ``better_half_of``, a
    direction), and how many trials it is over (the package's own function was removed in
    0.2; this composes the two private steps it was made of)."""
    pruner = module("pruner")
    early, final = pruner._completed_pairs(trials, step)
    rho, n = pruner._pairs_correlation(early, final, better_half_of)
    return float(rho), int(n)


def shipped_fit_schedule() -> Any:
    """The package's ``FitSchedule`` (what every sampler uses)."""
    return module("request").FitSchedule()


def set_fit_schedule(sampler: Any, schedule: Any) -> None:
    """Give one ``CostRolloutSampler`` another ``FitSchedule`` (its suggestions read it)."""
    sampler._suggester.schedule = schedule


def fit_schedule(
    max_fit_points: int, refit_from: int, refit_growth: float, max_model_points: int
) -> Any:
    """A ``FitSchedule`` with these bounds."""
    return module("request").FitSchedule(
        max_fit_points=max_fit_points,
        max_model_points=max_model_points,
        refit_from=refit_from,
        refit_growth=refit_growth,
    )


def independent_conditionals(sampler: Any) -> None:
    """Make one ``CostRolloutSampler`` model only the parameters every completed trial has
    and hand the others (conditional, dynamic) to its independent sampler: the package's
    behaviour before conditional spaces were modelled, kept as a benchmark-only variant."""
    from optuna.search_space import intersection_search_space
    from optuna.trial import TrialState

    reads = importlib.import_module("optuna_costbo._sampler.snapshot").TrialReads

    class IntersectionReads(reads):  # type: ignore[misc, valid-type]
        def search_space(self, study: Any, trial: Any) -> Any:
            super().search_space(study, trial)  # the read the proposal uses
            trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            with self._lock:
                self._activity.pop(trial._trial_id, None)
            return intersection_search_space(trials)

    sampler._suggester.reads = IntersectionReads()


def gittins_index(sampler: Any) -> None:
    """One sampler made with ``value_per_cost`` chooses its points by the Pandora's-box
    Gittins index at that rate (:class:`benchmarks.harness.gittins.PandoraGittins`) instead
    of its acquisition; the stopping rule is unchanged."""
    from benchmarks.harness.gittins import PandoraGittins

    rule = sampler._suggester.stop_rule
    if rule is None:
        raise ValueError("the pbgi method needs value_per_cost: the index prices cost at it")
    sampler._suggester.acquisition = PandoraGittins(rule.value_per_cost)


def maximize_acquisition(
    fun_and_grad: Any, codec: Any, rng: Any, *, fun: Any = None, **options: Any
) -> tuple[Any, float]:
    """One acquisition of the points alone (``Z -> (values, grads)``) maximized by the
    package's optimizer (``optimize.Search`` options: ``extra_starts``, ``max_evals``,
    ``exclude``): its best legal point and value."""
    optimize = module("optimize")
    one = None if fun is None else (lambda Z, _: fun(Z))
    search = optimize.Search(lambda Z, _: fun_and_grad(Z), one, codec, **options)
    Z, values = optimize.maximize(search, rng)
    return Z[0], float(values[0])


def maximize_exponent(ctx: Any, exponent: float) -> tuple[Any, float]:
    """The maximizer of ``log EI - exponent * log c`` in an acquisition context, as the
    package's myopic acquisitions make it, and its value."""
    Z, values = ctx.record(
        (exponent,), *module("optimize").maximize(ctx.search((exponent,)), ctx.rng)
    )
    return Z[0], float(values[0])


def cold_objective_fit(trials: Any, seed: int) -> Any:
    """The package's GP of the (minimized) values of ``trials``, fitted as a suggestion
    without a warm start fits it: 3 restarts, the request's noise floor."""
    bridge = module("space").SpaceBridge(trials[0].distributions)
    X = bridge.encode_params([t.params for t in trials])  # (n, D)
    y = np.array([t.value for t in trials], dtype=float)  # (n,)
    request = module("request")
    floor = request.ProposalRequest.__dataclass_fields__["min_noise_var"].default
    rng = np.random.default_rng(seed)
    schedule = request.FitSchedule()
    return module("fit").fit_gp(
        X, y, rng=rng, n_restarts=3, min_noise_var=floor, max_points=schedule.max_fit_points
    )


def effort_counts(sampler: Any, study: Any) -> dict[str, int]:
    """Full and quick suggestions of a ``CostRolloutSampler`` run (cheap_trials.py's probe);
    ``{"n_full": -1, "n_quick": -1}`` for another sampler."""
    effort = getattr(getattr(sampler, "_suggester", None), "effort", None)
    if effort is None:
        return {"n_full": -1, "n_quick": -1}
    counts = effort.counts(study._study_id)
    return {"n_full": int(counts["full"]), "n_quick": int(counts["quick"])}


INTERNAL_OPTIONS = (
    "charge_sampler_time",
    "max_sampler_share",
    "dashboard_chart",
    "quick_queue",
)
"""Method options that are settings of one sampler object, not parameters of the sampler."""

REMOVED_OPTIONS = {
    "prefetch": "removed in 0.2 with its code (CHANGELOG.md)",
    "pruned_trials": "removed in 0.2: pruned trials are always censored observations",
    "warn_independent_sampling": "removed in 0.2: the warning is always logged",
    "cost_unit": "removed in 0.2: set the study user attr cost_unit",
    "n_samples": "removed in 0.2: the rollout draws 64 trajectories, its only setting was a "
    "research hook (CHANGELOG.md)",
    "plug_in_incumbent": "removed after issue 51's study (benchmarks/results/noisy/report.md; "
    "code at f56d20c1)",
    "repeats": "removed after issue 51's study: it never acted (benchmarks/results/noisy/"
    "report.md; code at f56d20c1)",
}
"""Former sampler parameters whose methods cannot run any more; their cached runs still report."""


class _Charge:
    """A fixed answer to "is the sampler's time charged?" (``charge_sampler_time``)."""

    def __init__(self, charged: bool) -> None:
        self.charged = charged

    def resolve(self, study_id: int, trials: Any) -> bool:
        return self.charged


def apply_internal_options(sampler: Any, options: dict[str, Any]) -> None:
    """Set :data:`INTERNAL_OPTIONS` on one ``CostRolloutSampler`` (only those given)."""
    suggester = sampler._suggester
    if "charge_sampler_time" in options and options["charge_sampler_time"] is not None:
        suggester.charge = _Charge(bool(options["charge_sampler_time"]))
    if "max_sampler_share" in options:
        suggester.effort = importlib.import_module("optuna_costbo._sampler.effort").EffortRule(
            float(options["max_sampler_share"])
        )
    if options.get("dashboard_chart") is False:
        sampler._chart.wanted = lambda study: False
    if options.get("quick_queue") is False:  # each quick suggestion serves one trial
        suggester.effort.batch = lambda study_id: 1


def without_chart(cls: Any, **kwargs: Any) -> Any:
    """``cls(**kwargs)``, a ``CostRolloutSampler`` (of this package or an earlier one) that
    keeps no optuna-dashboard chart: the storage benchmarks count the sampler's own traffic."""
    import inspect

    if "dashboard_chart" in inspect.signature(cls).parameters:  # packages before 0.2
        return cls(**kwargs, dashboard_chart=False)
    sampler = cls(**kwargs)
    apply_internal_options(sampler, {"dashboard_chart": False})
    return sampler


def profiled_seconds(profile: cProfile.Profile) -> dict[str, float]:
    """Seconds spent in the ledger (:data:`LEDGER_ROOTS`) and in the model
    (:data:`MODEL_ROOTS`) in ``profile``: their cumulative times, read off the profile (so
    every version of the package is measured alike, nothing replaced)."""
    stats = pstats.Stats(profile)
    ledger = model = 0.0
    for (filename, _, function), row in stats.stats.items():  # type: ignore[attr-defined]
        cumulative = float(row[3])
        if function in LEDGER_ROOTS and "optuna_costbo" in filename:
            ledger += cumulative
        if any(filename.endswith(f) and function == fn for f, fn in MODEL_ROOTS):
            model += cumulative
    return {"ledger": ledger, "model": model}
