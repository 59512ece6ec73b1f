"""The acquisitions users can name, and how a name becomes a strategy.

Adding an acquisition: write its class (see :class:`.strategies.AcquisitionStrategy`) in a
module of its own or beside its relatives, and add it to :data:`ACQUISITIONS` below.

This module imports only numpy (through the strategies).
"""

from __future__ import annotations

from optuna_costbo._numerics.rollout_acquisition import PaperRollout
from optuna_costbo._numerics.rollout_acquisition import Rollout
from optuna_costbo._numerics.strategies import EI
from optuna_costbo._numerics.strategies import AcquisitionOptions
from optuna_costbo._numerics.strategies import AcquisitionStrategy
from optuna_costbo._numerics.strategies import EICool
from optuna_costbo._numerics.strategies import EIPerCost


__all__ = ["ACQUISITIONS", "make_acquisition"]

#: Acquisition name -> strategy class, in the order the documentation lists them.
ACQUISITIONS: dict[str, type[AcquisitionStrategy]] = {
    cls.name: cls for cls in (Rollout, PaperRollout, EI, EIPerCost, EICool)
}


def make_acquisition(name: str, options: AcquisitionOptions) -> AcquisitionStrategy:
    """The strategy registered as ``name``, built from ``options``.

    Raises:
        ValueError: If no acquisition has that name; the message lists the names allowed.
    """
    try:
        cls = ACQUISITIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"acquisition must be one of {', '.join(map(repr, ACQUISITIONS))}, got {name!r}"
        ) from None
    return cls.from_options(options)
