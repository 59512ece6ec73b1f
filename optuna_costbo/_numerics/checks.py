"""Type checks shared by every layer's input validation (one definition of "an int")."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (Python or numpy), not a bool."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number (int, float, numpy scalar), not a bool."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real)
