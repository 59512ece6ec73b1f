"""The suggestion pipeline: :mod:`.suggest` and what :mod:`optuna_costbo.sampler` uses."""
