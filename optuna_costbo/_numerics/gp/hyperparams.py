"""Hyperparameters of the GP model and their packing into the vector the fit optimizes.

Packing of the log-parameter vector ``theta`` (length ``D + 2``)::

    theta[:D]  = log(lengthscales)   # (D,)
    theta[D]   = log(signal_var)
    theta[D+1] = log(noise_var)

This module imports only numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np


__all__ = ["GPHyperparams"]


@dataclass(frozen=True)
class GPHyperparams:
    """Hyperparameters of :class:`GPModel`.

    ``signal_var``, ``noise_var`` and ``mean`` are in standardized output units
    (``z = (y - y_mean) / y_std``).

    Example:
        >>> import numpy as np
        >>> h = GPHyperparams(np.array([0.3, 2.0]), signal_var=1.0, noise_var=1e-6, mean=0.0)
        >>> h.log_params().shape
        (4,)

    Attributes:
        lengthscales: Positive ARD lengthscales, shape ``(D,)`` (stored as a read-only copy).
        signal_var: Positive kernel signal variance.
        noise_var: Non-negative observation-noise variance.
        mean: Constant prior mean.
    """

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

    # NOTE(gp): The generated dataclass __eq__/__hash__ would compare/hash the ndarray field,
    # which raises for D > 1; compare values explicitly instead.
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
        """Input dimension ``D``."""
        return int(self.lengthscales.shape[0])

    def log_params(self) -> np.ndarray:
        """Packed log-parameters ``[log ls (D), log signal_var, log noise_var]``, shape (D+2,).

        Raises:
            ValueError: If ``noise_var`` is zero (its logarithm is undefined).
        """
        if self.noise_var <= 0.0:
            raise ValueError("noise_var must be positive to be packed into log-parameters.")
        return np.concatenate(
            [np.log(self.lengthscales), [math.log(self.signal_var), math.log(self.noise_var)]]
        )

    @classmethod
    def from_log_params(cls, log_params: np.ndarray, mean: float) -> GPHyperparams:
        """Inverse of :meth:`log_params`.

        Args:
            log_params: Packed log-parameters, shape ``(D + 2,)``.
            mean: Constant mean in standardized units.

        Returns:
            The corresponding hyperparameters.
        """
        theta = np.asarray(log_params, dtype=float)  # (D+2,)
        D = theta.shape[0] - 2
        return cls(
            lengthscales=np.exp(theta[:D]),
            signal_var=math.exp(theta[D]),
            noise_var=math.exp(theta[D + 1]),
            mean=mean,
        )
