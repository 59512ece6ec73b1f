"""The package's loggers live under Optuna's root logger, so ``optuna.logging`` governs them.

``optuna.logging.set_verbosity`` and Optuna's handler (its format, ``disable_default_handler``,
``enable_propagation``) apply to the package's messages as to Optuna's own.
"""

from __future__ import annotations

import logging

import optuna


__all__ = ["get_logger"]


def get_logger(module: str) -> logging.Logger:
    """The logger of ``module`` (an ``optuna_costbo`` module name) under ``optuna.costbo``."""
    short = module.removeprefix("optuna_costbo").lstrip(".") or "core"
    return optuna.logging.get_logger(f"optuna.costbo.{short}")
