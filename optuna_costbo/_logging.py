"""The package's loggers, under Optuna's root logger so ``optuna.logging`` governs them."""

from __future__ import annotations

import logging

import optuna


def get_logger(module: str) -> logging.Logger:
    """The logger of ``module`` (an ``optuna_costbo`` module name) under ``optuna.costbo``."""
    short = module.removeprefix("optuna_costbo").lstrip(".") or "core"
    return optuna.logging.get_logger(f"optuna.costbo.{short}")
