"""The numerical layer: codec, GP model and fit, cost models, acquisitions, optimizer, policy.

Nothing here imports Optuna (as Optuna keeps its own GP machinery in ``optuna/_gp``); the
sampler hands encoded arrays to :func:`optuna_costbo._numerics.policy.propose` and decodes the
point it returns. ``docs/architecture.md`` says what each module does.
"""

__all__: list[str] = []
