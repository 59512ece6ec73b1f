"""Whether a trial its pruner would stop is still worth finishing, under the sampler's models.

:class:`~optuna_costbo.CostBudgetPruner` asks this (``consult_sampler=True``) when its
wrapped pruner says stop. The answer uses the study's latest proposal of this process: its
models, the value it improved on and the best EI per unit cost a new trial offered
(:func:`~optuna_costbo._numerics.continuation.continuation_log_rate` does the arithmetic).
``None`` means no opinion (no proposal yet, the quick route, a trial outside the relative
search space, no completed curve): the pruner's verdict stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math
import threading

import numpy as np
from optuna.trial import FrozenTrial

from optuna_costbo._numerics.continuation import continuation_log_rate
from optuna_costbo._numerics.policy import Proposal
from optuna_costbo._sampler.snapshot import report_bound
from optuna_costbo._sampler.space import SpaceBridge


__all__ = ["LatestProposals", "worth_continuing"]


@dataclass(frozen=True)
class _Latest:
    bridge: SpaceBridge
    proposal: Proposal
    sign: float


class LatestProposals:
    """The latest full-route proposal per study (its id), with the space it was made in."""

    def __init__(self) -> None:
        self._latest: dict[int, _Latest] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        return {}  # fitted models are not carried to another process

    def __setstate__(self, state: dict[str, object]) -> None:
        self._latest = {}
        self._lock = threading.Lock()

    def set(self, study_id: int, bridge: SpaceBridge, proposal: Proposal, sign: float) -> None:
        with self._lock:
            self._latest[study_id] = _Latest(bridge, proposal, sign)

    def get(self, study_id: int) -> _Latest | None:
        with self._lock:
            return self._latest.get(study_id)


def worth_continuing(
    latest: LatestProposals,
    study_id: int,
    trials: Sequence[FrozenTrial],
    trial: FrozenTrial,
    spent: float,
) -> bool | None:
    """Whether ``trial`` (running, with reports) is worth its remaining cost: its expected
    improvement given its reports, per unit of the cost still to come, at least the best rate
    a new trial offered at the latest proposal. ``spent``: the trial's cost so far."""
    entry = latest.get(study_id)
    if entry is None:
        return None
    proposal = entry.proposal
    if proposal.best_log_rate is None or proposal.best is None or proposal.cost_model is None:
        return None
    if not entry.bridge.holds(trial):
        return None
    lower = report_bound(trials, trial, entry.sign)
    if not math.isfinite(lower):
        return None
    z = entry.bridge.encode_trials([trial])[0]  # (D,)
    model = proposal.fitted if proposal.fitted is not None else proposal.objective_model
    rate = continuation_log_rate(
        model, proposal.cost_model, z, lower, proposal.best, max(float(spent), 0.0)
    )
    return bool(np.isfinite(rate) and rate >= proposal.best_log_rate)
