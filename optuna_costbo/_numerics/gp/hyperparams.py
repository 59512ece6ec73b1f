"""GP hyperparameters and their packing ``theta = [log ls (D), log signal_var, log noise_var]``."""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np


@dataclass(frozen=True)
class GPHyperparams:
    """Lengthscales (D,), signal and noise variances and the constant mean; the last three in
    standardized output units ``z = (y - y_mean) / y_std``."""

    lengthscales: np.ndarray  # (D,)
    signal_var: float
    noise_var: float
    mean: float

    def __post_init__(self) -> None:
        ls = np.array(self.lengthscales, dtype=float)  # (D,)
        if ls.ndim != 1 or ls.size == 0:
            raise ValueError(f"lengthscales must be a non-empty 1-D array, got shape {ls.shape}.")
        if not np.all(np.isfinite(ls)) or np.any(ls <= 0.0):
            raise ValueError(f"lengthscales must be finite and positive, got {ls}.")
        if not (math.isfinite(self.signal_var) and self.signal_var > 0.0):
            raise ValueError(f"signal_var must be finite and positive, got {self.signal_var}.")
        if not (math.isfinite(self.noise_var) and self.noise_var >= 0.0):
            raise ValueError(f"noise_var must be finite and >= 0, got {self.noise_var}.")
        if not math.isfinite(self.mean):
            raise ValueError(f"mean must be finite, got {self.mean}.")
        ls.flags.writeable = False
        object.__setattr__(self, "lengthscales", ls)
        object.__setattr__(self, "signal_var", float(self.signal_var))
        object.__setattr__(self, "noise_var", float(self.noise_var))
        object.__setattr__(self, "mean", float(self.mean))

    # NOTE(gp): the generated __eq__/__hash__ would compare the ndarray field (raises for D > 1).
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GPHyperparams):
            return NotImplemented
        return (
            np.array_equal(self.lengthscales, other.lengthscales)
            and self.signal_var == other.signal_var
            and self.noise_var == other.noise_var
            and self.mean == other.mean
        )

    def __hash__(self) -> int:
        return hash((self.lengthscales.tobytes(), self.signal_var, self.noise_var, self.mean))

    @property
    def dim(self) -> int:
        return int(self.lengthscales.shape[0])

    @classmethod
    def from_log_params(cls, log_params: np.ndarray, mean: float) -> GPHyperparams:
        """The hyperparameters of packed log-parameters (D+2,) and a standardized mean."""
        theta = np.asarray(log_params, dtype=float)  # (D+2,)
        D = theta.shape[0] - 2
        return cls(
            lengthscales=np.exp(theta[:D]),
            signal_var=math.exp(theta[D]),
            noise_var=math.exp(theta[D + 1]),
            mean=mean,
        )
