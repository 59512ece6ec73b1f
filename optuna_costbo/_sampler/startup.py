"""The start-up design: scrambled Sobol points indexed by trial number.

Workers sharing a study take distinct points of the same low-discrepancy design because each
trial takes the point its own number indexes. A design point that decodes to a configuration a
trial already has (two points of a small discrete space may decode to one) is replaced by the
same index of another scrambling.
"""

from __future__ import annotations

import math
from typing import Any
import zlib

import numpy as np
from optuna.distributions import BaseDistribution

from optuna_costbo._ledger.ledger import Ledger
from optuna_costbo._numerics.search_space import rows_among
from optuna_costbo._sampler.space import SpaceBridge


__all__ = ["StartupDesign", "startup_count", "startup_size"]

# NOTE: how many scramblings a trial tries for a configuration that no trial has yet (a small
# discrete space may have none left: then the last one is taken).
_SCRAMBLINGS = 16


def startup_size(
    n_params: int, n_priced: int = 0, spent: float = 0.0, remaining: float = 0.0
) -> int:
    """How many start-up trials precede the models: d + 1, at least 4, while the budget
    buys many more; never more than a third of the trials it is predicted to buy.

    The prediction is the finished trials plus the remaining budget over their mean cost so
    far (``n_priced`` trials that spent ``spent``); none before a trial has a cost. The floor is
    d + 1 (at least 3): a model on fewer points than parameters has nothing to go on.

    With d + 1 the cap binds only for d <= 2 (the floor is d + 1 otherwise).

    NOTE: small initial designs leave more of a small budget to the models (Bossek et al.,
    GECCO 2020); why d + 1: docs/design-decisions.md, "Start-up design".
    """
    full = max(4, n_params + 1)
    if n_priced <= 0 or spent <= 0.0 or not math.isfinite(remaining):
        return full
    predicted = n_priced + max(remaining, 0.0) / (spent / n_priced)
    floor = min(full, max(3, n_params + 1))
    return max(floor, min(full, math.ceil(predicted / 3.0)))


def startup_count(option: int | None, n_params: int, ledger: Ledger | None = None) -> int:
    """The start-up trials before the models take over: the user's ``n_startup_trials``
    (``option``) if given, else :func:`startup_size` of the ledger (none: before any read)."""
    if option is not None:
        return option
    if ledger is None:
        return startup_size(n_params)
    return startup_size(n_params, ledger.n_finished, ledger.spent, ledger.remaining)


class StartupDesign:
    """The design of one sampler.

    Args:
        seed: Seed of the first scrambling.
    """

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)

    def params(
        self,
        bridge: SpaceBridge,
        trial_number: int,
        evaluated: np.ndarray,  # (k, D) encoded configurations the trials already have
        seed: int | None = None,
    ) -> dict[str, Any]:
        """The design point of ``trial_number`` in the space of ``bridge``."""
        n = 1 << max(trial_number, 1).bit_length()
        base = self.seed if seed is None else seed
        for k in range(_SCRAMBLINGS):
            points = bridge.codec.sobol_points(n, seed=base + k)  # (n, D)
            z = bridge.codec.project(points[trial_number % n][None])[0]  # (D,)
            if not rows_among(z[None], evaluated)[0]:
                break
        return bridge.decode(z)

    def first_wave_value(self, name: str, dist: BaseDistribution, trial_number: int) -> Any:
        """One parameter of a trial started before any trial completed (no relative search
        space yet): the design of that parameter alone, its own scrambling, at the trial's
        number."""
        seed = (self.seed + zlib.crc32(name.encode())) % 2**31
        return self.params(SpaceBridge({name: dist}), trial_number, np.empty((0, 0)), seed)[name]
