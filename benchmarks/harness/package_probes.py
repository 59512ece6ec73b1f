"""Every use the benchmarks make of optuna_costbo's private modules, in one place.

The harness drives the package through its public API only (``CostRolloutSampler``,
``report_cost``). A few experiments measure or patch its internals; they reach them through
this module, so that when the package's modules move, the benchmarks are retargeted here and
nowhere else. Names resolve lazily (on first use), so a benchmark that needs none of them
runs whatever the package's layout.

Who uses what:

- ``scale_quality.py``: :func:`fit_policy` patches ``_numerics.policy`` (``MAX_FIT_POINTS``,
  ``REFIT_FROM``, ``REFIT_GROWTH``, ``MAX_MODEL_POINTS``);
- ``cheap_trials.py``: :func:`effort_counts` reads ``sampler._effort.counts(study_id)`` (full
  and quick suggestions);
- ``gp_prior.py``: ``_numerics.fit`` (``fit_gp``; :func:`lengthscale_prior` patches its
  ``log_prior``), ``_numerics.prior.LENGTHSCALE_PRIOR_WEIGHT``, ``_space.SpaceBridge``;
- ``rollout_agreement.py``: ``_numerics.rollout_acquisition.Rollout`` (:func:`qmc_scrambling`
  patches the module's ``qmc_normals``), ``_numerics.cost_model.FittedLogCost``,
  ``_numerics.fit.fit_gp``, ``_numerics.rollout.qmc_normals``, ``_numerics.search_space``
  (``BoxCodec``, ``NumericParam``), ``_numerics.strategies`` (``AcquisitionContext``,
  ``AcquisitionOptions``);
- ``inner_candidates.py``: ``_numerics.acquisition.ei``, ``_numerics.cost_model.FittedLogCost``,
  ``_numerics.fit.fit_gp``, ``_numerics.rollout.qmc_normals``, ``_numerics.rollout_acquisition``
  (``RolloutSettings``, ``rollout_values_on``, ``top_indices``);
- ``storage/`` (``storage_traffic.py``): :func:`time_ledger_functions` patches functions of
  ``budget`` by name (``setattr(budget_mod, ...)``), :func:`replace_propose` patches
  ``sampler.propose``, ``_numerics.policy.Proposal``, and the system attrs a finished or a
  running trial of ``CostRolloutSampler`` carries (:data:`FINISHED_SYSTEM_ATTRS`,
  :data:`PROPOSED_PARAMS_ATTR`, :data:`RUNNING_SYSTEM_ATTRS`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import importlib
from types import ModuleType
from typing import Any


MODULES: dict[str, str] = {
    "acquisition": "optuna_costbo._numerics.acquisition",
    "budget": "optuna_costbo.budget",
    "cost_model": "optuna_costbo._numerics.cost_model",
    "fit": "optuna_costbo._numerics.fit",
    "policy": "optuna_costbo._numerics.policy",
    "prior": "optuna_costbo._numerics.prior",
    "rollout": "optuna_costbo._numerics.rollout",
    "rollout_acquisition": "optuna_costbo._numerics.rollout_acquisition",
    "sampler": "optuna_costbo.sampler",
    "search_space": "optuna_costbo._numerics.search_space",
    "space": "optuna_costbo._space",
    "strategies": "optuna_costbo._numerics.strategies",
}
"""Short name -> private module of the package."""

NAMES: dict[str, tuple[str, str]] = {
    "AcquisitionContext": ("strategies", "AcquisitionContext"),
    "AcquisitionOptions": ("strategies", "AcquisitionOptions"),
    "BoxCodec": ("search_space", "BoxCodec"),
    "FittedLogCost": ("cost_model", "FittedLogCost"),
    "LENGTHSCALE_PRIOR_WEIGHT": ("prior", "LENGTHSCALE_PRIOR_WEIGHT"),
    "NumericParam": ("search_space", "NumericParam"),
    "Proposal": ("policy", "Proposal"),
    "Rollout": ("rollout_acquisition", "Rollout"),
    "RolloutSettings": ("rollout_acquisition", "RolloutSettings"),
    "SpaceBridge": ("space", "SpaceBridge"),
    "fit_gp": ("fit", "fit_gp"),
    "plain_ei": ("acquisition", "ei"),
    "qmc_normals": ("rollout", "qmc_normals"),
    "rollout_values_on": ("rollout_acquisition", "rollout_values_on"),
    "top_indices": ("rollout_acquisition", "top_indices"),
}
"""Name here -> (short module name, attribute): ``from benchmarks.harness.package_probes
import fit_gp`` imports ``optuna_costbo._numerics.fit.fit_gp`` when it runs."""

# The system attrs CostRolloutSampler writes on trials (the storage benchmarks pre-fill
# studies with them, so that the sampler reads studies shaped like its own).
FINISHED_SYSTEM_ATTRS: dict[str, Any] = {
    "costbo:sampler_seconds": 0.123456789,
    "costbo:cost_source": "reported",
    "costbo:proposal_checked": True,
}
PROPOSED_PARAMS_ATTR = "costbo:proposed_params"
RUNNING_SYSTEM_ATTRS: dict[str, Any] = {"costbo:proposal_checked": True}

# Functions of optuna_costbo.budget that compute the ledger from trials already read (whichever
# of them the code being measured has).
LEDGER_FUNCTIONS = ("compute_ledger", "settle_dead_trials", "ledger_from_trials")


def module(short: str) -> ModuleType:
    """The private module ``MODULES[short]``, imported."""
    return importlib.import_module(MODULES[short])


def __getattr__(name: str) -> Any:
    if name in NAMES:
        short, attribute = NAMES[name]
        return getattr(module(short), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- patches -------------------------------------------------------------------------------


FIT_POLICY = ("MAX_FIT_POINTS", "REFIT_FROM", "REFIT_GROWTH", "MAX_MODEL_POINTS")


def shipped_fit_policy() -> tuple[Any, ...]:
    """The package's values of :data:`FIT_POLICY` (scale_quality.py's "shipped")."""
    policy = module("policy")
    return tuple(getattr(policy, name) for name in FIT_POLICY)


@contextlib.contextmanager
def fit_policy(values: tuple[Any, ...]) -> Iterator[None]:
    """Run with the hyperparameter-fit and working-set bounds of :data:`FIT_POLICY` set to
    ``values`` (read by the package at call time), restored afterwards."""
    policy = module("policy")
    before = shipped_fit_policy()
    for name, value in zip(FIT_POLICY, values, strict=True):
        setattr(policy, name, value)
    try:
        yield
    finally:
        for name, value in zip(FIT_POLICY, before, strict=True):
            setattr(policy, name, value)


def effort_counts(sampler: Any, study: Any) -> dict[str, int]:
    """Full and quick suggestions of a ``CostRolloutSampler`` run (cheap_trials.py's probe);
    ``{"n_full": -1, "n_quick": -1}`` for another sampler."""
    effort = getattr(sampler, "_effort", None)
    if effort is None:
        return {"n_full": -1, "n_quick": -1}
    counts = effort.counts(study._study_id)
    return {"n_full": int(counts["full"]), "n_quick": int(counts["quick"])}


@contextlib.contextmanager
def lengthscale_prior(log_prior: Callable[..., Any] | None) -> Iterator[None]:
    """Fit with another ``log_prior`` (the fit module looks it up at call time); None: the
    package's own."""
    fit = module("fit")
    current = fit.log_prior
    fit.log_prior = log_prior if log_prior is not None else current
    try:
        yield
    finally:
        fit.log_prior = current


def current_log_prior() -> Callable[..., Any]:
    return module("fit").log_prior  # type: ignore[no-any-return]


@contextlib.contextmanager
def qmc_scrambling(normals: Callable[..., Any]) -> Iterator[None]:
    """The rollout acquisition drawing its quasi-Monte Carlo normals from ``normals``."""
    ra = module("rollout_acquisition")
    real = ra.qmc_normals
    ra.qmc_normals = normals
    try:
        yield
    finally:
        ra.qmc_normals = real


def time_ledger_functions(wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace every :data:`LEDGER_FUNCTIONS` function the installed ``optuna_costbo.budget``
    has by ``wrap(function)`` (for the rest of the process: the storage reads workers)."""
    budget_mod = module("budget")
    for fname in LEDGER_FUNCTIONS:
        if hasattr(budget_mod, fname):
            setattr(budget_mod, fname, wrap(getattr(budget_mod, fname)))


def real_propose() -> Callable[..., Any]:
    """The sampler module's ``propose`` (the model and acquisition of one suggestion)."""
    return module("sampler").propose  # type: ignore[no-any-return]


@contextlib.contextmanager
def replace_propose(replacement: Callable[..., Any]) -> Iterator[None]:
    """The sampler calling ``replacement`` instead of its ``propose``."""
    sampler_mod = module("sampler")
    real = sampler_mod.propose
    sampler_mod.propose = replacement
    try:
        yield
    finally:
        sampler_mod.propose = real
