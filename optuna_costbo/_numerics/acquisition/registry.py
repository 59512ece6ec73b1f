"""The acquisitions users can name: a new one is a class satisfying
:class:`.strategies.AcquisitionStrategy` added to :data:`ACQUISITIONS`."""

from __future__ import annotations

from collections.abc import Collection
import warnings

from optuna_costbo._numerics.acquisition.rollout import PaperRollout
from optuna_costbo._numerics.acquisition.rollout import Rollout
from optuna_costbo._numerics.acquisition.strategies import EI
from optuna_costbo._numerics.acquisition.strategies import AcquisitionOptions
from optuna_costbo._numerics.acquisition.strategies import AcquisitionStrategy
from optuna_costbo._numerics.acquisition.strategies import EICool
from optuna_costbo._numerics.acquisition.strategies import EIPerCost


#: Acquisition name -> strategy class, in the order the documentation lists them.
ACQUISITIONS: dict[str, type[AcquisitionStrategy]] = {
    cls.name: cls for cls in (Rollout, PaperRollout, EI, EIPerCost, EICool)
}


def make_acquisition(
    name: str, options: AcquisitionOptions, *, given: Collection[str] = ()
) -> AcquisitionStrategy:
    """The strategy named ``name`` built from ``options``; the options the user set (``given``)
    that it does not read draw one ``UserWarning``."""
    try:
        cls = ACQUISITIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"acquisition must be one of {', '.join(map(repr, ACQUISITIONS))}, got {name!r}"
        ) from None
    used = getattr(cls, "uses_options", ("horizon",))
    ignored = [option for option in given if option not in used]
    if ignored:
        readers = [
            n
            for n, c in ACQUISITIONS.items()
            if set(ignored) <= set(getattr(c, "uses_options", ()))
        ]
        warnings.warn(
            f"acquisition={name!r} does not use {' and '.join(ignored)}: "
            f"{'they are' if len(ignored) > 1 else 'it is'} ignored "
            f"(used by {', '.join(map(repr, readers)) or 'no acquisition'}).",
            UserWarning,
            stacklevel=3,
        )
    return cls.from_options(options)
