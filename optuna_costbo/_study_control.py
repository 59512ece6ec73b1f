"""Small facts about the study a sampler runs in: one objective, the optimize loop, stopping."""

from __future__ import annotations

import optuna


__all__ = ["check_single_objective", "in_optimize_loop", "stop"]


def check_single_objective(study: optuna.Study) -> None:
    if len(study.directions) > 1:
        raise ValueError(
            "CostRolloutSampler supports single-objective studies only; this study has "
            f"{len(study.directions)} objectives."
        )


def _root_study(study: optuna.Study) -> optuna.Study:
    """The user's study behind HyperbandPruner's per-bracket view of it."""
    while isinstance(getattr(study, "_study", None), optuna.Study):
        study = study._study  # type: ignore[attr-defined]
    return study


def in_optimize_loop(study: optuna.Study) -> bool:
    return bool(_root_study(study)._thread_local.in_optimize_loop)


def stop(study: optuna.Study) -> None:
    """Stop the optimize loop if there is one (``study.stop`` raises under ask-and-tell)."""
    root = _root_study(study)
    if not root._thread_local.in_optimize_loop:
        return
    try:
        root.stop()
    except RuntimeError:
        pass
