"""The start-up design: scrambled Sobol points by trial number, distinct across workers."""

from __future__ import annotations

import math
from typing import Any
import zlib

import numpy as np
from optuna.distributions import BaseDistribution

from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo._numerics.search_space import rows_among
from optuna_costbo._sampler.space import SpaceBridge


# NOTE: scramblings tried for a new configuration (a small discrete space may have none left)
_SCRAMBLINGS = 16


def startup_size(
    n_params: int, n_priced: int = 0, spent: float = 0.0, remaining: float = 0.0
) -> int:
    """Start-up trials: d + 1 (at least 4), at most a third of the trials the budget is predicted
    to buy but at least d + 1 (at least 3). NOTE: docs/design-decisions.md, "Start-up design"."""
    full = max(4, n_params + 1)
    if n_priced <= 0 or spent <= 0.0 or not math.isfinite(remaining):
        return full
    predicted = n_priced + max(remaining, 0.0) / (spent / n_priced)
    floor = min(full, max(3, n_params + 1))
    return max(floor, min(full, math.ceil(predicted / 3.0)))


def startup_count(option: int | None, n_params: int, ledger: Ledger | None = None) -> int:
    """The user's ``n_startup_trials`` (``option``), else :func:`startup_size` of the ledger."""
    if option is not None:
        return option
    known = () if ledger is None else (ledger.n_finished, ledger.spent, ledger.remaining)
    return startup_size(n_params, *known)


class StartupDesign:
    """The design of one sampler (``seed``: of the first scrambling)."""

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)

    def params(
        self,
        bridge: SpaceBridge,
        trial_number: int,
        evaluated: np.ndarray,  # (k, D) encoded configurations the trials already have
        seed: int | None = None,
    ) -> dict[str, Any]:
        n = 1 << max(trial_number, 1).bit_length()
        base = self.seed if seed is None else seed
        for k in range(_SCRAMBLINGS):
            points = bridge.codec.sobol_points(n, seed=base + k)  # (n, D)
            z = bridge.codec.project(points[trial_number % n][None])[0]  # (D,)
            if not rows_among(z[None], evaluated)[0]:
                break
        return bridge.decode(z)

    def first_wave_value(self, name: str, dist: BaseDistribution, trial_number: int) -> Any:
        """One parameter before any trial completed: its own design's point at the trial."""
        seed = (self.seed + zlib.crc32(name.encode())) % 2**31
        return self.params(SpaceBridge({name: dist}), trial_number, np.empty((0, 0)), seed)[name]
