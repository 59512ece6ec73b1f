"""The start-up design: scrambled Sobol points indexed by trial number.

Workers sharing a study take distinct points of the same low-discrepancy design because each
trial takes the point its own number indexes. A design point that decodes to a configuration a
trial already has (two points of a small discrete space may decode to one) is replaced by the
same index of another scrambling.
"""

from __future__ import annotations

from typing import Any
import zlib

import numpy as np
from optuna.distributions import BaseDistribution

from optuna_costbo._numerics.search_space import rows_among
from optuna_costbo._space import SpaceBridge


__all__ = ["StartupDesign"]

# NOTE: how many scramblings a trial tries for a configuration that no trial has yet (a small
# discrete space may have none left: then the last one is taken).
_SCRAMBLINGS = 16


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
